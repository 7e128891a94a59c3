"""Launch export: one SkyPilot task YAML per instance group, and the equivalent plain torchrun commands.

All groups join one ``torchrun`` job through a shared c10d rendezvous, so the whole configuration is a
single DDP world. SkyPilot launches each group as its own cluster; the rendezvous endpoint (a host:port
every VM can reach, typically the first group's head node) is passed at launch time with
``sky launch --env SRIFTY_RDZV_ENDPOINT=HOST:29400``. Each task exports what the training script needs:

* ``SRIFTY_LOCAL_BATCH``: this group's local batch per GPU;
* ``SRIFTY_GLOBAL_BATCH``: the global batch;
* ``SRIFTY_GRAD_WEIGHT``: ``local_batch / global_batch``, the weight that makes every sample count equally
  when local batches differ (read by ``srifty.torch``);
* ``SRIFTY_WORLD_SIZE``, ``SRIFTY_NNODES``: total GPUs and VMs across all groups;
* ``SRIFTY_PLACEMENT``: where the configuration runs (cloud, region, zone);
* for a sharded configuration, ``SRIFTY_PARALLELISM``, ``SRIFTY_SHARD_GROUP_SIZE`` and
  ``SRIFTY_ACTIVATION_CHECKPOINTING`` (:meth:`~srifty.vocab.Config.sharding_env`, read by ``srifty.torch.fsdp``).

Every group of a configuration runs in the same region, and its spot VMs in the same zone: each task names
the cloud, region and (when placed in one) ``zone``. AWS zones are given as zone IDs (``use1-az4``), as in
the catalog: an ID names the same physical zone in every account, while SkyPilot and the EC2 console name
zones per account (``us-east-1a``); ``aws ec2 describe-availability-zones --zone-ids use1-az4`` gives the
account's name for it.

**Under srifty's controller** (:func:`controlled_task`): when the configuration is one group (a SkyPilot
cluster is one instance type), one more task runs ``srifty run --hosts`` on the cluster's head node over
the node list SkyPilot gives it (``SKYPILOT_NODE_IPS``), reaching the other nodes with ssh. srifty then
starts torchrun on every node, watches it, and re-plans over the nodes left when one is lost. The other
nodes run nothing of their own. It assumes srifty and the training script are installed on every node
(the task's ``setup``) and that the head node can ssh to the others with the cluster's key
(``~/.ssh/sky-key``, SkyPilot's default); this was checked with SkyPilot's schema, not on a real cloud.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from srifty.artifacts import atomic_write_text
from srifty.plan.scoring import Scored

DEFAULT_TRAIN_COMMAND = "python train.py"
RDZV_PORT = 29400


def _safe(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "job"


def group_env(scored: Scored, index: int, job: str) -> dict[str, str]:
    """Environment variables of group ``index``."""
    config = scored.config
    group = config.groups[index]
    return {
        "SRIFTY_LOCAL_BATCH": str(group.local_batch),
        "SRIFTY_GLOBAL_BATCH": str(config.global_batch),
        "SRIFTY_GRAD_WEIGHT": repr(group.local_batch / config.global_batch),
        "SRIFTY_WORLD_SIZE": str(config.world_size),
        "SRIFTY_NNODES": str(config.n_vms),
        "SRIFTY_NPROC_PER_NODE": str(group.instance.gpus_per_vm),
        "SRIFTY_GROUP": f"{index}:{group.notation()}",
        "SRIFTY_RDZV_ID": job,
        "SRIFTY_RDZV_ENDPOINT": f"HEAD_NODE_IP:{RDZV_PORT}",
        "SRIFTY_PLACEMENT": config.where(),
        **config.sharding_env(),
    }


def torchrun_command(train_command: str = DEFAULT_TRAIN_COMMAND) -> str:
    """The torchrun line every VM runs (values come from the SRIFTY_* variables)."""
    return (
        "torchrun --nnodes=$SRIFTY_NNODES --nproc-per-node=$SRIFTY_NPROC_PER_NODE "
        "--rdzv-backend=c10d --rdzv-endpoint=$SRIFTY_RDZV_ENDPOINT --rdzv-id=$SRIFTY_RDZV_ID "
        f"{train_command}"
    )


def skypilot_tasks(scored: Scored, job_name: str, train_command: str = DEFAULT_TRAIN_COMMAND) -> list[dict[str, Any]]:
    """One SkyPilot task (as a dict) per instance group of ``scored``'s configuration."""
    job = f"srifty-{_safe(job_name)}"
    tasks = []
    for index, group in enumerate(scored.config.groups):
        inst = group.instance
        resources: dict[str, Any] = {"cloud": inst.cloud, "region": inst.region}
        if scored.config.zone is not None:
            resources["zone"] = scored.config.zone
        resources |= {"instance_type": inst.name, "use_spot": group.market == "spot"}
        if inst.cloud == "gcp":  # GCP offerings are accelerators attached to a host VM
            resources.pop("instance_type")
            resources["accelerators"] = f"{inst.gpu_name}:{inst.gpus_per_vm}"
        tasks.append(
            {
                "name": f"{job}-g{index}-{_safe(inst.name)}",
                "num_nodes": group.count,
                "resources": resources,
                "envs": group_env(scored, index, job),
                "run": torchrun_command(train_command) + "\n",
            }
        )
    return tasks


def _zone_note(scored: Scored) -> str:
    """A header line saying how to read an AWS zone ID (empty for other clouds or unplaced configurations)."""
    zone = scored.config.zone
    if zone is None or scored.config.cloud != "aws":
        return ""
    return (
        f"# zone {zone} is an AWS zone ID; your account's zone name for it: "
        f"aws ec2 describe-availability-zones --region {scored.config.region} --zone-ids {zone}\n"
    )


def write_skypilot(
    scored: Scored, directory: str | Path, job_name: str, train_command: str = DEFAULT_TRAIN_COMMAND
) -> list[Path]:
    """Write one ``<task name>.yaml`` per group into ``directory`` (atomically); returns the paths."""
    out = Path(directory)
    paths = []
    for task in skypilot_tasks(scored, job_name, train_command):
        header = (
            f"# srifty plan for {job_name}: {scored.config.notation()} in {scored.config.where()}\n"
            + _zone_note(scored)
            + "# Launch every group's task with the same rendezvous endpoint, e.g.\n"
            f"#   sky launch -c {task['name']} {task['name']}.yaml --env SRIFTY_RDZV_ENDPOINT=HOST:{RDZV_PORT}\n"
        )
        paths.append(atomic_write_text(out / f"{task['name']}.yaml", header + yaml.safe_dump(task, sort_keys=False)))
    return paths


def torchrun_commands(scored: Scored, job_name: str, train_command: str = DEFAULT_TRAIN_COMMAND) -> list[str]:
    """The plain torchrun command for each group's VMs, with the variables filled in."""
    job = f"srifty-{_safe(job_name)}"
    lines = []
    for index, group in enumerate(scored.config.groups):
        env = group_env(scored, index, job)
        exports = " ".join(
            f"{k}={shlex.quote(v)}" for k, v in env.items() if k not in ("SRIFTY_NNODES", "SRIFTY_NPROC_PER_NODE")
        )
        lines.append(
            f"# on each of the {group.count} {group.instance.name} VMs ({group.market}, in {scored.config.where()}):\n"
            f"{exports} torchrun --nnodes={env['SRIFTY_NNODES']} --nproc-per-node={env['SRIFTY_NPROC_PER_NODE']} "
            f"--rdzv-backend=c10d --rdzv-endpoint=HEAD_NODE_IP:{RDZV_PORT} --rdzv-id={job} {train_command}"
        )
    return lines


#: Where the controlled task's head node finds the key to the other nodes (SkyPilot's cluster key).
SKY_SSH_KEY = "~/.ssh/sky-key"


def controlled_task(
    scored: Scored, job_name: str, spec_file: str, train_command: str = DEFAULT_TRAIN_COMMAND
) -> dict[str, Any] | None:
    """One SkyPilot task whose head node runs ``srifty run --hosts`` over the cluster's nodes, or ``None``
    when the configuration has several groups (one SkyPilot cluster holds one instance type)."""
    config = scored.config
    if len(config.groups) != 1:
        return None
    group = config.groups[0]
    task = skypilot_tasks(scored, job_name, train_command)[0]
    job = f"srifty-{_safe(job_name)}"
    market = group.market
    run = (
        'if [ "$SKYPILOT_NODE_RANK" = "0" ]; then\n'
        f"  printf '%s {group.instance.name} {market}\\n' $SKYPILOT_NODE_IPS > srifty-hosts.txt\n"
        f"  srifty run {shlex.quote(spec_file)} --hosts srifty-hosts.txt --launcher ssh --ssh-key {SKY_SSH_KEY} "
        f"--ssh-option StrictHostKeyChecking=accept-new --config {shlex.quote(config.notation())} "
        f"--run-dir runs/{job} -- {train_command}\n"
        "fi\n"
    )
    return {
        "name": f"{job}-controlled",
        "workdir": ".",
        "num_nodes": group.count,
        "resources": task["resources"],
        "envs": {"SRIFTY_JOB": job},
        "setup": "pip install srifty  # and what the training script needs\n",
        "run": run,
    }


def write_controlled(
    scored: Scored, directory: str | Path, job_name: str, spec_file: str, train_command: str = DEFAULT_TRAIN_COMMAND
) -> Path | None:
    """Write :func:`controlled_task` as ``<name>.yaml`` (atomically); ``None`` for a multi-group configuration."""
    task = controlled_task(scored, job_name, spec_file, train_command)
    if task is None:
        return None
    header = (
        f"# srifty plan for {job_name}: {scored.config.notation()}, run by srifty's controller on the head node\n"
        f"#   sky launch -c {task['name']} {task['name']}.yaml\n"
    )
    return atomic_write_text(Path(directory) / f"{task['name']}.yaml", header + yaml.safe_dump(task, sort_keys=False))
