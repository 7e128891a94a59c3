"""``srifty launch``: a plan brought up through SkyPilot and run under srifty's controller.

One SkyPilot cluster per group of the plan (a cluster holds one instance type), every one in the plan's
cloud, region and zone, spot or on-demand as planned; the clusters of a multi-group AWS plan share one
security group, within which SkyPilot allows all traffic. The steps, each a ``sky`` call
(:mod:`srifty.integrations.skypilot.sky`):

1. ``sky launch --dryrun`` of every group's task: SkyPilot's own optimizer and catalog check the instance
   type, region, zone and market before anything is rented (``--dryrun`` stops here);
2. ``sky launch`` of each group in turn: provisioning, srifty installed by ``setup``, and a ``run`` on the
   head node that prints the cluster's node addresses (``SKYPILOT_NODE_IPS``);
3. ``sky exec -d`` of the controller task on the first cluster's head node: it writes the host file (every
   node of every cluster, with its type and market) and runs ``srifty run --hosts`` over ssh with the key
   SkyPilot puts on every node.

``launch.json`` in the run folder records the clusters before each is launched, so ``srifty launch --down
RUN`` tears down everything, even after srifty was killed mid-launch. When a call fails, every cluster this
launch asked for is torn down before the error (exit code 2, the command and SkyPilot's message) is raised.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from srifty.artifacts import atomic_write_text, read_json_artifact, write_json_artifact
from srifty.errors import InfeasiblePlanError, LaunchError
from srifty.integrations.skypilot.sky import Sky
from srifty.plan import (
    InstallSource,
    cluster_name,
    controller_command,
    job_id,
    shared_network,
    sky_resources,
    with_install,
)
from srifty.vocab import Config

LAUNCH_KIND = "skypilot-launch"
LAUNCH_SCHEMA_VERSION = 1
NODE_IPS_MARK = "srifty-node-ips:"
NODE_IPS_RUN = 'if [ "$SKYPILOT_NODE_RANK" = "0" ]; then echo "' + NODE_IPS_MARK + ' $(echo $SKYPILOT_NODE_IPS)"; fi\n'
_IPS = re.compile(re.escape(NODE_IPS_MARK) + r"\s+([0-9A-Fa-f.:][0-9A-Fa-f.: ]*)")


@dataclass(frozen=True)
class LaunchTasks:
    """The SkyPilot tasks of one launch: a cluster per group, the controller, and shared ``sky`` options."""

    job: str
    groups: tuple[dict[str, Any], ...]
    controller: dict[str, Any]
    options: tuple[str, ...]

    @property
    def head(self) -> str:
        """The first group's cluster, whose head node runs the controller."""
        return str(self.groups[0]["name"])


def launch_tasks(
    config: Config,
    job_name: str,
    spec_file: str,
    train_command: str,
    zone_names: Mapping[str, str],
    install: InstallSource,
    plan_file: str | None = None,
) -> LaunchTasks:
    """The tasks of launching ``config`` (``spec_file``, ``plan_file``: paths inside the workdir; a sharded or
    checkpointed configuration needs the plan, see :func:`~srifty.plan.export.controller_command`)."""
    job = job_id(job_name)
    groups = []
    for index, group in enumerate(config.groups):
        task = {
            "name": cluster_name(job, index, config),
            "workdir": ".",
            "num_nodes": group.count,
            "resources": sky_resources(config, index, zone_names),
        }
        groups.append(with_install(task, install) | {"run": NODE_IPS_RUN})
    controller = {
        "name": f"{job}-controller",
        "workdir": ".",
        "num_nodes": 1,
        "resources": sky_resources(config, 0, zone_names),
        "envs": {"SRIFTY_HOSTS": None},  # given by `sky exec --env` once every cluster is up
        "run": (
            "printf '%s\\n' \"$SRIFTY_HOSTS\" | tr ';' '\\n' > srifty-hosts.txt\n"
            + controller_command(spec_file, config, job, train_command, plan_file)
            + "\n"
        ),
    }
    return LaunchTasks(job, tuple(groups), controller, tuple(shared_network(config, job)))


def host_lines(config: Config, ips: Mapping[str, list[str]], tasks: LaunchTasks) -> list[str]:
    """One host-file line per node of every cluster: address, instance type, market."""
    lines = []
    for group, task in zip(config.groups, tasks.groups, strict=True):
        lines += [f"{ip} {group.instance.name} {group.market}" for ip in ips[task["name"]]]
    return lines


def node_ips(output: list[str], task: Mapping[str, Any]) -> list[str]:
    """The node addresses the group task's head printed.

    Raises:
        LaunchError: none printed, or not one per node.
    """
    found = [m.group(1).split() for line in output if (m := _IPS.search(line))]
    if not found or len(found[-1]) != task["num_nodes"]:
        raise LaunchError(
            f"cluster {task['name']} did not report its {task['num_nodes']} node addresses "
            f"(a line '{NODE_IPS_MARK} …' from its head node); see `sky logs {task['name']}`"
        )
    return found[-1]


@dataclass
class LaunchRecord:
    """What ``launch.json`` holds: enough to tear the launch down from another process."""

    job: str
    sky: str
    clusters: list[str]
    head: str
    config: str
    where: str
    dryrun: bool
    state: str = "planned"

    def save(self, run_dir: Path, calls: list[dict[str, Any]]) -> Path:
        payload = {**self.__dict__, "calls": calls}
        return write_json_artifact(run_dir / "launch.json", LAUNCH_KIND, LAUNCH_SCHEMA_VERSION, payload)

    @classmethod
    def load(cls, run_dir: Path) -> LaunchRecord:
        doc = read_json_artifact(run_dir / "launch.json", LAUNCH_KIND, LAUNCH_SCHEMA_VERSION)
        return cls(**{k: doc[k] for k in cls.__dataclass_fields__})


def write_tasks(tasks: LaunchTasks, folder: Path) -> dict[str, Path]:
    """Each task as ``<name>.yaml`` in ``folder`` (atomically)."""
    paths = {}
    for task in (*tasks.groups, tasks.controller):
        text = yaml.safe_dump(task, sort_keys=False, width=1000)
        paths[task["name"]] = atomic_write_text(folder / f"{task['name']}.yaml", text)
    return paths


@dataclass
class Launch:
    """One launch of a configuration through SkyPilot (see the module docstring for the steps)."""

    config: Config
    tasks: LaunchTasks
    sky: Sky
    run_dir: Path
    report: Callable[[str], None] = lambda _text: None

    def __post_init__(self) -> None:
        self.paths = write_tasks(self.tasks, self.run_dir / "sky")
        self.record = LaunchRecord(
            self.tasks.job, str(self.sky.executable), [], self.tasks.head, self.config.tagged(),
            self.config.where(), dryrun=True,
        )  # fmt: skip

    def _save(self) -> None:
        calls = [
            {"command": c.command, "returncode": c.returncode, "wall_s": round(c.wall_s, 3)} for c in self.sky.calls
        ]
        self.record.save(self.run_dir, calls)

    def _launch_args(self, cluster: str, task: str, *extra: str) -> list[str]:
        return ["launch", "-y", "-c", cluster, str(self.paths[task]), *self.tasks.options, *extra]

    def dry_run(self) -> None:
        """SkyPilot's dry run of every group's task; nothing is rented.

        Raises:
            LaunchError: SkyPilot cannot provision a group (its message says why).
        """
        try:
            for task in self.tasks.groups:
                self.report(f"checking {task['name']} with SkyPilot's dry run")
                self.sky.run(self._launch_args(task["name"], task["name"], "--dryrun"))
            # the controller task too (its host list is known only once the clusters are up: stand-ins here)
            groups = self.config.groups
            stand_in = ";".join(f"10.0.0.{i + 1} {g.instance.name} {g.market}" for i, g in enumerate(groups))
            controller = self.tasks.controller["name"]
            self.sky.run(
                self._launch_args(self.tasks.head, controller, "--dryrun", "--env", f"SRIFTY_HOSTS={stand_in}")
            )
        finally:
            self._save()

    def up(self, train_command_shown: str) -> None:
        """Launch every group, then the controller; on any failure tear down what this launch asked for.

        Raises:
            LaunchError: a ``sky`` call failed (after the teardown).
        """
        self.record.dryrun = False
        ips: dict[str, list[str]] = {}
        try:
            for task in self.tasks.groups:
                self.record.clusters.append(task["name"])
                self.record.state = "launching"
                self._save()  # recorded before the call: --down finds it even if srifty is killed now
                self.report(f"launching {task['name']} ({task['num_nodes']} nodes)")
                ips[task["name"]] = node_ips(self.sky.run(self._launch_args(task["name"], task["name"])).output, task)
            hosts = ";".join(host_lines(self.config, ips, self.tasks))
            self.report(
                f"starting srifty's controller on {self.tasks.head}: srifty run --hosts … -- {train_command_shown}"
            )
            self.sky.run(["exec", "-d", self.tasks.head, str(self.paths[self.tasks.controller["name"]]),
                          "--env", f"SRIFTY_HOSTS={hosts}"])  # fmt: skip
        except BaseException as error:
            self.record.state = "failed"
            self._save()
            try:
                self.down()
            except LaunchError as down_error:
                raise LaunchError(f"{error}; then the teardown failed: {down_error}") from None
            raise
        self.record.state = "running"
        self._save()

    def down(self) -> None:
        """Tear down every cluster this launch asked for (ones that never came up are not found; fine)."""
        if self.record.clusters:
            self.report(f"tearing down {', '.join(self.record.clusters)}")
            teardown(self.sky, self.record.clusters)


def teardown(sky: Sky, clusters: list[str]) -> None:
    """``sky down -y`` of ``clusters``.

    Raises:
        LaunchError: the call failed; the message names the clusters left to tear down.
    """
    try:
        sky.run(["down", "-y", *clusters])
    except LaunchError as error:
        raise LaunchError(f"{error}; tear these clusters down yourself: sky down {shlex.join(clusters)}") from None


def down_run(run_dir: Path, sky: Sky) -> LaunchRecord:
    """``srifty launch --down RUN``: tear down every cluster ``RUN/launch.json`` names."""
    record = LaunchRecord.load(run_dir)
    if record.clusters:
        teardown(sky, record.clusters)
    record.state = "down"
    record.save(run_dir, [])
    return record


def prepare_launch(
    spec_path: Path,
    train_command: str,
    sky: Sky,
    *,
    plan_path: Path | None = None,
    install: str | None = None,
    zone_names: Path | None = None,
    run_dir: Path | None = None,
    report: Callable[[str], None] = lambda _text: None,
) -> Launch:
    """Plan ``spec_path`` (or read ``plan_path``) and write the launch's SkyPilot tasks; nothing runs yet.

    Raises:
        SpecError: the spec lies outside the current folder (SkyPilot's workdir), or a bad ``--install``.
        InfeasiblePlanError: no configuration meets the spec's constraints.
        LaunchError: no source the VMs can install srifty from.
    """
    from srifty.catalog import read_zone_names, skypilot_zone_names
    from srifty.plan import INSTALL_HOW, install_source, plan_spec, workdir_path
    from srifty.runtime import config_from_plan
    from srifty.spec import load_spec

    spec_file = workdir_path(spec_path)
    source = install_source(install)
    if source is None:
        raise LaunchError(f"the VMs need srifty and this one is installed from a local folder; {INSTALL_HOW}")
    spec = load_spec(spec_path)
    job = job_id(spec.name or spec_path.stem)
    folder = run_dir if run_dir is not None else Path("runs") / job
    plan = None
    if plan_path is not None:
        config, _ = config_from_plan(plan_path, spec_path, spec)
        plan_json = plan_path
    else:
        plan_json = folder / "sky" / "plan.json"
        plan, _ = plan_spec(spec_path)
        if plan.best is None or not plan.best.feasible:
            why = plan.infeasibility.message if plan.infeasibility is not None else "no configuration found"
            binding = plan.infeasibility.binding_constraint if plan.infeasibility is not None else ""
            raise InfeasiblePlanError(f"nothing to launch: {why}", binding)
        config = plan.best.config
    plan_file = None
    if config.sharding_env():  # `srifty run --config` would run it as the spec says (DDP for auto)
        plan_file = workdir_path(plan_json)
        if plan is not None:
            plan.save(plan_json)
    names = read_zone_names(zone_names) if zone_names is not None else skypilot_zone_names()
    tasks = launch_tasks(config, spec.name or spec_path.stem, spec_file, train_command, names, source, plan_file)
    report(f"the plan: {config.tagged()} in {config.where()}; its SkyPilot tasks in {folder / 'sky'}")
    return Launch(config, tasks, sky, folder, report)
