"""Launch export: one SkyPilot task per instance group, the srifty-controlled task, and plain torchrun lines.

Every command here runs as written (``tests/test_export_commands.py`` runs them): all groups join one
``torchrun`` job through torchrun's static rendezvous on node 0 (``--master-addr``/``--master-port``), as
``srifty run --hosts`` starts it, so each node's rank follows the plan's layout and each rank's local batch
is known (``SRIFTY_RANK_BATCHES`` when the groups' batches differ). torchrun runs the training script with
its own Python (:func:`~srifty.vocab.commands.torchrun_target`). Each task exports what the script needs:

* ``SRIFTY_LOCAL_BATCH``, ``SRIFTY_GLOBAL_BATCH``, ``SRIFTY_GRAD_WEIGHT`` (``local_batch / global_batch``,
  read by ``srifty.torch``), ``SRIFTY_RANK_BATCHES`` (heterogeneous plans);
* ``SRIFTY_WORLD_SIZE``, ``SRIFTY_NNODES``, ``SRIFTY_NPROC_PER_NODE``, ``SRIFTY_FIRST_NODE`` (the group's
  first node rank), ``SRIFTY_MASTER_PORT``; ``SRIFTY_PLACEMENT`` (cloud, region, zone);
* for a sharded configuration, ``SRIFTY_PARALLELISM``, ``SRIFTY_SHARD_GROUP_SIZE`` and
  ``SRIFTY_ACTIVATION_CHECKPOINTING`` (:meth:`~srifty.vocab.Config.sharding_env`, read by ``srifty.torch.fsdp``).

SkyPilot launches each group as a cluster, all in the plan's region and zone. The first group's head node
is node 0, and its task finds its own address in ``SKYPILOT_NODE_IPS``; the other groups' tasks declare
``SRIFTY_MASTER_ADDR`` without a value, so SkyPilot refuses to launch them until it is given
(``sky launch --env SRIFTY_MASTER_ADDR=IP``; ``srifty launch`` does this). AWS zone IDs become the account's
zone names where SkyPilot knows them (:mod:`srifty.catalog.zone_names`).

**Under srifty's controller** (:func:`controlled_task`): for a one-group plan, one more task runs
``srifty run --hosts`` on the cluster's head node over ``SKYPILOT_NODE_IPS``, reaching the other nodes with
ssh and the cluster key SkyPilot puts on every node (``~/.ssh/sky-cluster-key``); srifty is installed on
every node by the task's ``setup`` from the source the user gives (:mod:`srifty.plan.install_source`).
``srifty launch`` does the same for plans of several groups (one cluster each).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from srifty.artifacts import atomic_write_text
from srifty.catalog import skypilot_zone
from srifty.errors import SpecError
from srifty.plan.install_source import InstallSource
from srifty.vocab import Config, split_command, torchrun_target

DEFAULT_TRAIN_COMMAND = "python train.py"
MASTER_PORT = 29400
#: The key SkyPilot (0.14) puts on every node of a cluster, and the ssh configuration that uses it.
SKY_SSH_KEY = "~/.ssh/sky-cluster-key"
#: The head node's own address in a SkyPilot task (the first line of ``SKYPILOT_NODE_IPS``).
SKY_HEAD_IP = '$(echo "$SKYPILOT_NODE_IPS" | head -n1)'


def job_id(job_name: str) -> str:
    """``srifty-<name>``: lower case, letters, digits and ``-`` (a valid SkyPilot cluster name prefix)."""
    return "srifty-" + (re.sub(r"[^a-z0-9-]+", "-", job_name.lower()).strip("-") or "job")


def cluster_name(job: str, index: int, config: Config) -> str:
    """The SkyPilot task and cluster name of group ``index``."""
    return f"{job}-g{index}-" + re.sub(r"[^a-z0-9-]+", "-", config.groups[index].instance.name.lower())


def first_nodes(config: Config) -> list[int]:
    """Each group's first node rank (groups in order, their VMs consecutive)."""
    starts, total = [], 0
    for group in config.groups:
        starts.append(total)
        total += group.count
    return starts


def group_env(config: Config, index: int, job: str) -> dict[str, str]:
    """Environment variables of group ``index``."""
    group = config.groups[index]
    env = {
        "SRIFTY_LOCAL_BATCH": str(group.local_batch),
        "SRIFTY_GLOBAL_BATCH": str(config.global_batch),
        "SRIFTY_GRAD_WEIGHT": repr(group.local_batch / config.global_batch),
    }
    if len({g.local_batch for g in config.groups}) > 1:
        env["SRIFTY_RANK_BATCHES"] = ",".join(str(g.local_batch) for g in config.groups for _ in range(g.n_gpus))
    return env | {
        "SRIFTY_WORLD_SIZE": str(config.world_size),
        "SRIFTY_NNODES": str(config.n_vms),
        "SRIFTY_NPROC_PER_NODE": str(group.instance.gpus_per_vm),
        "SRIFTY_FIRST_NODE": str(first_nodes(config)[index]),
        "SRIFTY_MASTER_PORT": str(MASTER_PORT),
        "SRIFTY_GROUP": f"{index}:{group.notation()}",
        "SRIFTY_JOB": job,
        "SRIFTY_PLACEMENT": config.where(),
        **config.sharding_env(),
    }


def torchrun_argv(train_command: str, nnodes: str, nproc: str, node_rank: str, master_addr: str, port: str) -> str:
    """``torchrun …`` for one node: the job's node count, this node's processes and rank, node 0's address and
    port (shell words: values or variable references), then the training target."""
    target = shlex.join(torchrun_target(split_command(train_command)))
    return (
        f"torchrun --nnodes={nnodes} --nproc-per-node={nproc} --node-rank={node_rank} "
        f"--master-addr={master_addr} --master-port={port} {target}"
    )


def sky_run_script(index: int, train_command: str) -> str:
    """A group task's ``run``: node 0 is the first group's head; other groups are told its address."""
    lines = []
    if index == 0:
        lines.append(f'SRIFTY_MASTER_ADDR="${{SRIFTY_MASTER_ADDR:-{SKY_HEAD_IP}}}"')
    node = "$((SRIFTY_FIRST_NODE + SKYPILOT_NODE_RANK))"
    lines.append(
        torchrun_argv(
            train_command,
            "$SRIFTY_NNODES",
            "$SRIFTY_NPROC_PER_NODE",
            node,
            '"$SRIFTY_MASTER_ADDR"',
            "$SRIFTY_MASTER_PORT",
        )
    )
    return "\n".join(lines) + "\n"


def sky_resources(config: Config, index: int, zone_names: Mapping[str, str]) -> dict[str, Any]:
    """SkyPilot ``resources`` of group ``index``: cloud, region, zone (as SkyPilot names it), type, market."""
    inst = config.groups[index].instance
    resources: dict[str, Any] = {"cloud": inst.cloud, "region": inst.region}
    zone = skypilot_zone(inst.cloud, inst.region, config.zone, zone_names)
    if zone is not None:
        resources["zone"] = zone
    resources |= {"instance_type": inst.name, "use_spot": config.groups[index].market == "spot"}
    if inst.cloud == "gcp":  # GCP offerings are accelerators attached to a host VM
        resources.pop("instance_type")
        resources["accelerators"] = f"{inst.gpu_name}:{inst.gpus_per_vm}"
    return resources


def with_install(task: dict[str, Any], install: InstallSource | None) -> dict[str, Any]:
    if install is None:
        return task
    mounts = install.file_mounts()
    return task | ({"file_mounts": mounts} if mounts else {}) | {"setup": install.setup()}


def skypilot_tasks(
    config: Config,
    job_name: str,
    train_command: str = DEFAULT_TRAIN_COMMAND,
    zone_names: Mapping[str, str] | None = None,
    install: InstallSource | None = None,
) -> list[dict[str, Any]]:
    """One SkyPilot task (as a dict) per instance group of ``config``."""
    job = job_id(job_name)
    tasks = []
    for index, group in enumerate(config.groups):
        envs: dict[str, str | None] = dict(group_env(config, index, job))
        if index > 0:
            envs["SRIFTY_MASTER_ADDR"] = None  # SkyPilot refuses to launch until it is given
        task = {
            "name": cluster_name(job, index, config),
            "workdir": ".",
            "num_nodes": group.count,
            "resources": sky_resources(config, index, zone_names or {}),
            "envs": envs,
        }
        tasks.append(with_install(task, install) | {"run": sky_run_script(index, train_command)})
    return tasks


def _zone_note(config: Config, zone_names: Mapping[str, str]) -> str:
    """A header line on how the AWS zone was written (empty for other clouds or unplaced configurations)."""
    zone = config.zone
    if zone is None or config.cloud != "aws":
        return ""
    if zone in zone_names:
        return f"# zone {zone_names[zone]} is your account's name for the zone ID {zone} (SkyPilot's mapping)\n"
    return (
        f"# zone {zone} is an AWS zone ID, as SkyPilot names zones while it has no AWS credentials; once it has, "
        f"re-export (srifty reads SkyPilot's zone mapping) or look the name up: aws ec2 "
        f"describe-availability-zones --region {config.region} --zone-ids {zone}\n"
    )


def write_skypilot(
    config: Config,
    directory: str | Path,
    job_name: str,
    train_command: str = DEFAULT_TRAIN_COMMAND,
    zone_names: Mapping[str, str] | None = None,
    install: InstallSource | None = None,
) -> list[Path]:
    """Write one ``<task name>.yaml`` per group into ``directory`` (atomically); returns the paths."""
    names = zone_names or {}
    tasks = skypilot_tasks(config, job_name, train_command, names, install)
    head = tasks[0]["name"]
    paths = []
    for index, task in enumerate(tasks):
        launch = shlex.join(
            [
                "sky",
                "launch",
                "-c",
                task["name"],
                str(Path(directory) / f"{task['name']}.yaml"),
                *shared_network(config, job_id(job_name)),
            ]
        )
        if index > 0:
            launch += f" --env SRIFTY_MASTER_ADDR=$(sky status --ip {head})"
        header = (
            f"# srifty plan for {job_name}: {config.notation()} in {config.where()}\n"
            + _zone_note(config, names)
            + "# from the folder that holds the training script (SkyPilot copies it to every VM as the workdir)"
            + (f", {head} first, then every other group:\n" if len(tasks) > 1 else ":\n")
            + f"#   {launch}\n"
        )
        paths.append(atomic_write_text(Path(directory) / f"{task['name']}.yaml", header + _dump(task)))
    return paths


def shared_network(config: Config, job: str) -> list[str]:
    """``sky launch`` options that let the clusters of a multi-group AWS plan reach each other: one security
    group for all (SkyPilot's rules allow all traffic within a group, ssh from anywhere); a one-group plan is
    one cluster, reachable within already."""
    if len(config.groups) == 1 or config.cloud != "aws":
        return []
    return ["--config", f"aws.security_group_name={job}"]


def _dump(task: dict[str, Any]) -> str:
    return yaml.safe_dump(task, sort_keys=False, width=1000)


def torchrun_commands(config: Config, job_name: str, train_command: str = DEFAULT_TRAIN_COMMAND) -> list[str]:
    """For each group, a comment naming its VMs and the shell line each of them runs.

    A one-VM plan's line runs as printed; with several VMs, srifty cannot know the VMs' addresses, so the
    line reads ``NODE_RANK`` (this VM's place, in the range the comment gives) and ``MASTER_ADDR`` (node 0's
    address) from the shell and stops with that message when either is unset.
    """
    job = job_id(job_name)
    lines = []
    for index, group in enumerate(config.groups):
        env = group_env(config, index, job)
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        first = first_nodes(config)[index]
        if config.n_vms == 1:
            rank, master = "0", "127.0.0.1"
            where = f"# on the {group.instance.name} VM ({group.market}, in {config.where()}):"
        else:
            last = first + group.count - 1
            span = str(first) if group.count == 1 else f"{first}..{last}"
            rank = f'"${{NODE_RANK:?set NODE_RANK to the node rank of this VM, {span}}}"'
            master = '"${MASTER_ADDR:?set MASTER_ADDR to the address of node 0, which every VM can reach}"'
            where = (
                f"# on each of the {group.count} {group.instance.name} VMs ({group.market}, in {config.where()}), "
                f"node ranks {span}; node 0 is the master:"
            )
        argv = torchrun_argv(
            train_command, str(config.n_vms), str(group.instance.gpus_per_vm), rank, master, str(MASTER_PORT)
        )
        lines.append(f"{where}\n{exports} {argv}")
    return lines


def controlled_task(
    config: Config,
    job_name: str,
    spec_file: str,
    train_command: str = DEFAULT_TRAIN_COMMAND,
    zone_names: Mapping[str, str] | None = None,
    install: InstallSource | None = None,
    plan_file: str | None = None,
) -> dict[str, Any] | None:
    """One SkyPilot task whose head node runs ``srifty run --hosts`` over the cluster's nodes, or ``None``
    when the configuration has several groups (one SkyPilot cluster holds one instance type). ``plan_file``:
    see :func:`controller_command`."""
    if len(config.groups) != 1:
        return None
    group = config.groups[0]
    job = job_id(job_name)
    run = (
        'if [ "$SKYPILOT_NODE_RANK" = "0" ]; then\n'
        f"  printf '%s {group.instance.name} {group.market}\\n' $SKYPILOT_NODE_IPS > srifty-hosts.txt\n"
        f"  {controller_command(spec_file, config, job, train_command, plan_file)}\n"
        "fi\n"
    )
    task = {
        "name": f"{job}-controlled",
        "workdir": ".",
        "num_nodes": group.count,
        "resources": sky_resources(config, 0, zone_names or {}),
        "envs": {"SRIFTY_JOB": job},
    }
    return with_install(task, install) | {"run": run}


def workdir_path(path: str | Path, workdir: str | Path = ".") -> str:
    """``path`` relative to ``workdir`` (the folder SkyPilot copies to every VM), in POSIX form.

    Raises:
        SpecError: ``path`` lies outside it, so the VMs would not see it.
    """
    base = Path(workdir).resolve()
    try:
        return Path(path).resolve().relative_to(base).as_posix()
    except ValueError:
        raise SpecError(
            f"{path} is outside {base}, the folder SkyPilot copies to the VMs (its workdir); run from a folder "
            "that holds the spec and the training script"
        ) from None


def controller_command(
    spec_file: str, config: Config, job: str, train_command: str, plan_file: str | None = None
) -> str:
    """``srifty run SPEC --hosts srifty-hosts.txt --launcher ssh …`` as the head node runs it.

    The configuration goes as ``--config`` when that carries all of it (DDP without checkpointing); a sharded
    or checkpointed one needs ``plan_file`` (the plan's path inside the workdir, ``--plan``), since ``srifty
    run --config`` takes the strategy from the spec, where ``parallelism: auto`` means DDP.

    Raises:
        ValueError: ``config`` is sharded or checkpointed and no ``plan_file`` is given.
    """
    if plan_file is not None:
        chosen = f"--plan {shlex.quote(plan_file)}"
    elif config.sharding_env():
        raise ValueError(f"{config.describe()}: srifty run --config cannot carry its strategy; give the plan file")
    else:
        chosen = f"--config {shlex.quote(config.tagged())}"
    return (
        f"srifty run {shlex.quote(spec_file)} --hosts srifty-hosts.txt --launcher ssh --ssh-key {SKY_SSH_KEY} "
        f"--ssh-option StrictHostKeyChecking=accept-new {chosen} "
        f"--run-dir runs/{job} -- {shlex.join(split_command(train_command))}"
    )


def write_controlled(
    config: Config,
    directory: str | Path,
    job_name: str,
    spec_file: str,
    train_command: str = DEFAULT_TRAIN_COMMAND,
    zone_names: Mapping[str, str] | None = None,
    install: InstallSource | None = None,
    plan_file: str | None = None,
) -> Path | None:
    """Write :func:`controlled_task` as ``<name>.yaml`` (atomically); ``None`` for a multi-group configuration."""
    task = controlled_task(config, job_name, spec_file, train_command, zone_names, install, plan_file)
    if task is None:
        return None
    header = (
        f"# srifty plan for {job_name}: {config.notation()}, run by srifty's controller on the head node\n"
        + _zone_note(config, zone_names or {})
        + f"#   {shlex.join(['sky', 'launch', '-c', task['name'], str(Path(directory) / (task['name'] + '.yaml'))])}\n"
    )
    return atomic_write_text(Path(directory) / f"{task['name']}.yaml", header + _dump(task))
