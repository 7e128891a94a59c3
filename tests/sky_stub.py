"""A stand-in for SkyPilot's ``sky`` command on an EMULATED cloud, for tests. Runs in a venv with skypilot.

Everything SkyPilot decides is SkyPilot's own: task files are read and checked by ``sky.Task.from_yaml``
(schema, ``--env`` overrides, values that must be given), and ``launch --dryrun`` goes through SkyPilot's
real dry run (``sky.execution.launch(dryrun=True)``: the optimizer, the catalog lookup of the instance type in
its region and zone, the spot market). Only the cloud is stubbed, as SkyPilot's own dry-run tests stub it
(``tests/common_test_fixtures.py``, ``enable_all_clouds``): AWS counts as enabled without credentials, the
owner-identity, quota and rsync checks are skipped, machine images get an emulated AMI ID and no type has EFA
interfaces (SkyPilot asks the EC2 API for both). SkyPilot's catalog is whatever the test put under
``$SKY_RUNTIME_DIR/.sky/catalogs/v8/aws/`` (it cannot download one here), and its AWS zone names come from the
``az_mappings-*.csv`` file there, as SkyPilot reads it when it cannot ask AWS.

Past the dry run the cloud is emulated: ``launch`` (without ``--dryrun``) and ``exec`` read the task file
without SkyPilot (:func:`plain_task`: ``--env`` overrides, and a value left unset refused as SkyPilot refuses
it), since ``srifty launch`` has dry-run every file with SkyPilot just before and importing SkyPilot costs
5-9 s a call on the test machine. ``launch`` records the cluster in ``$SKY_STUB_STATE/clusters.json``
with addresses 127.0.<cluster>.<node> and runs the task's ``run`` on the head node with SkyPilot's variables
(``SKYPILOT_NODE_RANK``, ``SKYPILOT_NODE_IPS``, ``SKYPILOT_NUM_NODES``); ``setup`` is not run (it installs
things on a VM). ``exec`` runs a task's ``run`` the same way on an existing cluster, ``status --ip`` prints a
head address, ``down`` forgets clusters. Every call is appended to ``$SKY_STUB_STATE/calls.jsonl``.
``SKY_STUB_FAIL=VERB:CLUSTER`` makes that call fail, as a cloud out of capacity would.

Usage: ``python sky_stub.py launch|exec|status|down …`` (the subset of sky's CLI srifty uses), or
``python sky_stub.py dryrun FILE…`` to dry-run many task files in one process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


def stub_clouds() -> None:
    """AWS enabled without credentials, as SkyPilot's ``enable_all_clouds`` test fixture does."""
    from sky import check
    from sky.backends import backend_utils
    from sky.catalog import aws_catalog
    from sky.clouds import aws
    from sky.utils import registry

    clouds = [registry.CLOUD_REGISTRY.from_str("aws")]
    for cloud in clouds:  # the fixture's quota mock: no AWS API call (no credentials here)
        type(cloud).check_quota_available = lambda *_a, **_k: True  # type: ignore[method-assign]
    check.get_cached_enabled_clouds_or_refresh = lambda *_a, **_k: clouds  # type: ignore[assignment]
    check.check_capability = lambda *_a, **_k: None  # type: ignore[assignment]
    backend_utils.check_owner_identity = lambda *_a, **_k: None  # type: ignore[assignment]
    backend_utils.check_rsync_installed = lambda *_a, **_k: None  # type: ignore[assignment]
    # SkyPilot's machine images (AMI IDs per region) come from a catalog file it cannot download here
    aws_catalog.get_image_id_from_tag = lambda _tag, _region: "ami-0emulated"  # type: ignore[assignment]
    aws_catalog.is_image_tag_valid = lambda _tag, _region: True  # type: ignore[assignment]
    aws.AWS.get_image_size = classmethod(lambda _cls, _image, _region: aws.DEFAULT_AMI_GB)  # type: ignore[method-assign,assignment]
    aws.AWS.get_image_root_device_name = classmethod(lambda _cls, _image, _region: aws.DEFAULT_ROOT_DEVICE_NAME)  # type: ignore[method-assign,assignment]
    # EFA interfaces per type are asked of the EC2 API: the emulated cloud has none
    aws._get_max_efa_interfaces = lambda *_a, **_k: 0  # type: ignore[attr-defined]
    # No credentials: fail at once where boto3 would retry with backoff (SkyPilot then reads its newest
    # zone mapping file, as it does for a user without AWS credentials)
    aws.AWS.get_user_identities = classmethod(_no_identity)  # type: ignore[method-assign,assignment]


def _no_identity(_cls: Any) -> Any:
    from sky import exceptions

    raise exceptions.CloudUserIdentityError("no AWS credentials (emulated cloud)")


def load_task(path: str, envs: list[str]) -> Any:
    """A task file read as ``sky launch FILE --env K=V`` reads it (``dag_utils.load_chain_dag_from_yaml``)."""
    from sky.utils import dag_utils

    overrides = [(k, v) for k, _, v in (item.partition("=") for item in envs)]
    return dag_utils.load_chain_dag_from_yaml(path, env_overrides=overrides).tasks[0]


@dataclass
class PlainTask:
    """What the emulated cloud needs of a task file already dry-run by SkyPilot."""

    name: str
    num_nodes: int
    envs: dict[str, str]
    run: str | None


def plain_task(path: str, envs: list[str]) -> PlainTask:
    """The task file with ``--env K=V`` applied; exits 1 naming a variable left without a value, as SkyPilot
    does."""
    doc = yaml.safe_load(Path(path).read_text()) or {}
    values = {**(doc.get("envs") or {}), **dict(item.partition("=")[::2] for item in envs)}
    unset = [k for k, v in values.items() if v is None]
    if unset:
        print(f"ValueError: environment variable(s) {unset} have no value; pass them with --env (emulated check)")
        sys.exit(1)
    return PlainTask(doc.get("name", ""), int(doc.get("num_nodes", 1)), {k: str(v) for k, v in values.items()},
                     doc.get("run"))  # fmt: skip


def dry_run(task: Any, cluster: str | None) -> None:
    """SkyPilot's own dry run: optimizer, catalog, region and zone checks; nothing launched."""
    from sky import execution

    execution.launch(task, cluster_name=cluster, dryrun=True)


STATE = Path(os.environ.get("SKY_STUB_STATE", "."))


def _clusters() -> dict[str, Any]:
    path = STATE / "clusters.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _save(clusters: dict[str, Any]) -> None:
    tmp = STATE / "clusters.json.tmp"
    tmp.write_text(json.dumps(clusters, indent=1))
    tmp.replace(STATE / "clusters.json")


def _fail_if_asked(verb: str, cluster: str) -> None:
    if os.environ.get("SKY_STUB_FAIL") == f"{verb}:{cluster}":
        print(f"sky.exceptions.ResourcesUnavailableError: Failed to acquire resources for {cluster} (emulated)")
        sys.exit(1)


def run_on_head(task: Any, record: dict[str, Any]) -> int:
    """The task's ``run`` on the cluster's head node, as SkyPilot starts it (emulated: a local bash)."""
    if not task.run:
        return 0
    env = {
        **os.environ,
        **{k: v for k, v in task.envs.items() if v is not None},
        "SKYPILOT_NODE_RANK": "0",
        "SKYPILOT_NODE_IPS": "\n".join(record["ips"]),
        "SKYPILOT_NUM_NODES": str(len(record["ips"])),
        "SKYPILOT_TASK_ID": f"stub-{record['name']}",
    }
    return subprocess.run(["bash", "-c", task.run], env=env, check=False).returncode


def main(argv: list[str]) -> int:
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "calls.jsonl").open("a") as log:
        log.write(json.dumps({"argv": argv, "time_s": time.time()}) + "\n")
    parser = argparse.ArgumentParser(prog="sky")
    sub = parser.add_subparsers(dest="verb", required=True)
    launch = sub.add_parser("launch")
    launch.add_argument("yaml")
    for p in (launch, execute := sub.add_parser("exec")):
        p.add_argument("-c", "--cluster")
        p.add_argument("--env", action="append", default=[])
        p.add_argument("--config", action="append", default=[])
        p.add_argument("-y", "--yes", action="store_true")
        p.add_argument("-d", "--detach-run", action="store_true")
    launch.add_argument("--dryrun", action="store_true")
    execute.add_argument("cluster_arg")
    execute.add_argument("yaml")
    status = sub.add_parser("status")
    status.add_argument("--ip", action="store_true")
    status.add_argument("clusters", nargs="*")
    down = sub.add_parser("down")
    down.add_argument("-y", "--yes", action="store_true")
    down.add_argument("clusters", nargs="+")
    dry = sub.add_parser("dryrun")
    dry.add_argument("--env", action="append", default=[])
    dry.add_argument("files", nargs="+")
    args = parser.parse_args(argv)

    clusters = _clusters()
    if args.verb == "status":
        for name in args.clusters:
            if name not in clusters:
                print(f"Cluster {name} not found.")
                return 1
            print(clusters[name]["ips"][0] if args.ip else f"{name} UP")
        return 0
    if args.verb == "down":
        for name in args.clusters:
            print(f"Terminating cluster {name}..." if clusters.pop(name, None) else f"Cluster {name} not found.")
        _save(clusters)
        return 0
    if args.verb == "dryrun" or (args.verb == "launch" and args.dryrun):
        stub_clouds()
        for path in args.files if args.verb == "dryrun" else [args.yaml]:
            dry_run(load_task(path, args.env), getattr(args, "cluster", None))
            print(f"dry run passed: {path}")
        return 0
    task = plain_task(args.yaml, args.env)
    if args.verb == "launch":
        _fail_if_asked("launch", args.cluster)
        index = len(clusters) + 1
        ips = [f"127.0.{index}.{node + 1}" for node in range(task.num_nodes)]
        record = {"name": args.cluster, "ips": ips, "config": args.config, "task": task.name}
        clusters[args.cluster] = record
        _save(clusters)
        print(f"Cluster {args.cluster} is UP (emulated, {task.num_nodes} nodes).")
        return run_on_head(task, record)
    name = args.cluster_arg
    if name not in clusters:
        print(f"sky.exceptions.ClusterDoesNotExist: Cluster {name!r} does not exist.")
        return 1
    _fail_if_asked("exec", name)
    if task.num_nodes > len(clusters[name]["ips"]):
        print(f"Task requires {task.num_nodes} nodes, cluster {name} has {len(clusters[name]['ips'])}.")
        return 1
    return run_on_head(task, clusters[name])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
