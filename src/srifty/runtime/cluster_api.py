"""The Python API behind ``srifty run --hosts`` and ``srifty run --resume``."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from srifty.catalog import load_catalog
from srifty.checkpoints import check_location, read_latest
from srifty.errors import OptionError, SpecError
from srifty.plan import spec_area
from srifty.processes import describe, end_marked, is_alive
from srifty.runtime.api import (
    check_ckpt_every,
    check_seconds,
    default_ckpt_every,
    plan_remaining,
    prepare_run_dir,
    spot_policy_for,
    start_config,
    write_summary,
)
from srifty.runtime.cluster import ClusterRunner
from srifty.runtime.cpu_quota import remove_groups_of, unavailable
from srifty.runtime.faults import HostFault, Injector, check_faults, inject_locally
from srifty.runtime.hosts import Host, assign_hosts, inventory, load_hostfile, parse_hostfile
from srifty.runtime.launchers import Launcher
from srifty.runtime.progress import DEFAULT_WINDOW_S
from srifty.runtime.runner import Reporter, RunOutcome, no_report
from srifty.runtime.state import ClusterOptions, LauncherSetup, LocalRunState, RunSetup, RunState, load_run_state
from srifty.spec import CandidateSpec, JobSpec, load_spec


def host_area(spec: JobSpec) -> tuple[str, str]:
    """``(cloud, region)`` a host file is read in: the spec's one region (a host file's VMs are in one place).

    Raises:
        OptionError: the spec plans in several regions or clouds (option ``hosts``).
    """
    try:
        return spec_area(spec, load_catalog())
    except SpecError as err:
        raise OptionError("hosts", f": {err}") from None


def spec_over_hosts(spec: JobSpec, hosts: Sequence[Host]) -> JobSpec:
    """``spec`` with its candidates replaced by the host file's VMs (quota: how many of each type and market),
    pinned to the hosts' cloud and region. The hosts are already up, so moving the job between them costs the
    checkpoint restore only: no VM launch time (``overheads.vm_launch_s`` is 0)."""
    cloud, region = host_area(spec)
    candidates = tuple(
        CandidateSpec(instance_type=t, market=m, quota=n) for (t, m), n in sorted(inventory(hosts).items())
    )
    overheads = spec.overheads.model_copy(update={"vm_launch_s": 0.0})
    update = {
        "candidates": candidates, "cloud": cloud, "clouds": (), "region": region, "regions": (), "overheads": overheads
    }  # fmt: skip
    return spec.model_copy(update=update)


def check_reachable(hosts: Sequence[Host], launcher: Launcher, timeout_s: float) -> None:
    """Try every host through ``launcher`` (in parallel).

    Raises:
        SpecError: naming each host that could not be reached and why.
    """
    with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as pool:
        answers = list(pool.map(lambda h: launcher.check(h, timeout_s), hosts))
    bad = [f"{h.address} (line {h.line}): {why}" for h, why in zip(hosts, answers, strict=True) if why]
    if bad:
        raise SpecError(
            f"cannot reach {len(bad)} host(s) with the {launcher.name} launcher: " + "; ".join(bad) + ". Fix the "
            "host file or the login (ssh keys, user=, port=), or remove the host."
        )


def check_cpu_quotas(hosts: Sequence[Host], faults: Sequence[HostFault], launcher: Launcher) -> None:
    """Refuse CPU quotas (``cpu=`` in the host file, slow faults) where they cannot be set.

    Raises:
        SpecError: the launcher's processes are not this machine's (ssh), or no root / cgroup cpu controller.
    """
    users = [f"{h.address} (line {h.line}) cpu={h.cpu:g}" for h in hosts if h.cpu is not None]
    users += [f"--fault {f.describe()}" for f in faults if f.kind == "slow"]
    if not users:
        return
    if launcher.name not in ("local", "netns"):
        raise SpecError(
            f"{', '.join(users)}: a CPU quota emulates a slower VM on this machine, so it needs the local or netns "
            f"launcher; a host reached by {launcher.name} runs at its own speed. Remove cpu= / the slow fault."
        )
    why = unavailable()
    if why:
        raise SpecError(f"{', '.join(users)}: {why}; run as root on Linux with the cgroup cpu controller.")


def check_options(options: ClusterOptions) -> None:
    """Refuse timeouts that are not positive, a lease not longer than the heartbeat timeout, a checkpoint
    location that cannot be reached from here.

    Raises:
        OptionError: naming the option.
    """
    for name in ("heartbeat_timeout_s", "hang_timeout_s", "lease_s", "window_s"):
        check_seconds(name, getattr(options, name))
    if options.lease_s <= options.heartbeat_timeout_s:
        raise OptionError(
            "lease_s",
            f"({options.lease_s:g} s) must be longer than {{heartbeat_timeout_s}} ({options.heartbeat_timeout_s:g} s): "
            "a worker must not give up on the controller before the controller gives up on it.",
            mentions=("heartbeat_timeout_s",),
        )


def require_forwarded(names: Sequence[str], what: str, resuming: bool = False) -> None:
    """Every variable to forward to the hosts must be set here: a name alone would reach no host, and the
    training command would run without it (a run saves the names of forwarded variables, never their values).

    Args:
        what: who forwards them, for the message (``--forward-env``, or the run being resumed).

    Raises:
        SpecError: naming the variables that are not set and how to set them.
    """
    missing = [name for name in names if name not in os.environ]
    if not missing:
        return
    listed = ", ".join(missing)
    verb = "is" if len(missing) == 1 else "are"
    again = (
        "resume again (a run saves the names of forwarded variables, never their values)" if resuming else "start again"
    )
    them = "it" if len(missing) == 1 else "them"
    raise SpecError(
        f"{what} {listed} to every host, but {listed} {verb} not set in this shell, so the training command would "
        f"run without {them}: set {them} (export {missing[0]}=...) and {again}."
    )


def run_cluster_job(
    spec_path: str | Path,
    train_command: Sequence[str],
    run_dir: str | Path,
    hostfile: str | Path,
    launcher: Launcher,
    plan_path: str | Path | None = None,
    config_text: str | None = None,
    faults: Sequence[HostFault] = (),
    inject: Injector = inject_locally,
    ckpt_dir: str | None = None,
    ckpt_every: int | None = None,
    heartbeat_timeout_s: float = 10.0,
    hang_timeout_s: float = 120.0,
    lease_s: float = 30.0,
    window_s: float = DEFAULT_WINDOW_S,
    endpoint_address: str = "127.0.0.1",
    forward_env: Sequence[str] = (),
    launcher_setup: LauncherSetup | None = None,
    report: Reporter = no_report,
) -> RunOutcome:
    """Run a job across the hosts of ``hostfile`` (see :mod:`srifty.runtime.cluster`).

    Everything is checked before anything is launched: the spec, the host file (unknown instance types,
    duplicate addresses), the configuration against the hosts (too few), every host's reachability, the
    options and the faults.

    Raises:
        SpecError: bad input (exit code 2 in the CLI), before anything is launched.
        SriftyError: the run failed; every process it started on every host has been ended.
    """
    check_options(ClusterOptions("", 1, heartbeat_timeout_s, hang_timeout_s, lease_s, window_s=window_s))
    check_ckpt_every(ckpt_every)
    if ckpt_dir is not None:
        check_location(ckpt_dir)
    require_forwarded(forward_env, "--forward-env passes")
    spec_file = Path(spec_path).resolve()
    spec = load_spec(spec_file)
    host_text = Path(hostfile).read_text(encoding="utf-8") if Path(hostfile).is_file() else None
    cloud, region = host_area(spec)
    hosts = load_hostfile(hostfile, region, cloud)
    host_spec = spec_over_hosts(spec, hosts)
    config, iter_s, _ = start_config(spec_file, spec, plan_path, config_text, host_spec)
    assign_hosts(config, hosts)
    check_faults(faults, len(hosts), spec.iterations)
    check_cpu_quotas(hosts, faults, launcher)
    out = Path(run_dir).resolve()
    check_reachable(hosts, launcher, 15.0)
    prepare_run_dir(out, report)
    policy = spot_policy_for(host_spec, config, move_zones=False)  # hosts stay where they are
    every = ckpt_every or default_ckpt_every(spec, config, iter_s, policy)
    options = ClusterOptions(
        ckpt_dir=ckpt_dir or str(out / "checkpoints"), ckpt_every=every, heartbeat_timeout_s=heartbeat_timeout_s,
        hang_timeout_s=hang_timeout_s, lease_s=lease_s, window_s=window_s, endpoint_address=endpoint_address,
        forward_env=tuple(forward_env),
    )  # fmt: skip
    setup = RunSetup(
        str(spec_file), host_text, launcher_setup or LauncherSetup(launcher.name), tuple(train_command), os.getcwd(),
        options,
    )  # fmt: skip
    state = RunState.start(setup, config, inventory(hosts), time.time())
    runner = ClusterRunner(
        state, host_spec, hosts, launcher, out, plan_remaining, faults, inject, report=report, policy=policy
    )
    return write_summary(runner.run(), out)


def read_run_state(run_dir: str | Path) -> RunState | LocalRunState:
    """The state of a run (``RUN_DIR/run.json``): across hosts, or on this machine.

    Raises:
        SpecError: there is none (not the folder of a ``srifty run``).
        ArtifactError: it is damaged or of another schema version.
    """
    return load_run_state(run_dir)


def _checkpoint_step(state: RunState, report: Reporter = no_report) -> int:
    """The last checkpoint: the marker (a path or an fsspec URL) when this machine can read it (workers write
    it before they notify the controller), else the last one the controller heard of."""
    step = state.checkpoint_step or 0
    location = state.setup.ckpt_location()
    try:
        latest = read_latest(location)
    except (OSError, ValueError, KeyError, TypeError) as err:
        report(f"cannot read the checkpoint marker in {location} ({err}); using the last one the controller heard of")
        return step
    return step if latest is None else max(step, latest["step"])


def resume_cluster_job(
    run_dir: str | Path,
    launcher: Launcher,
    faults: Sequence[HostFault] = (),
    inject: Injector = inject_locally,
    report: Reporter = no_report,
) -> RunOutcome:
    """Continue a multi-host run whose controller was killed: end whatever is left of its last launch on
    every host, log ``resume`` after the decisions already made, and continue from the last checkpoint.

    Raises:
        SpecError: no run there, its controller is still running, or it already finished.
    """
    out = Path(run_dir).resolve()
    state = RunState.load(out)
    if state.finished:
        raise SpecError(f"the run in {out} already finished; start a new one with another --run-dir.")
    pid = state.controller_pid
    if pid and pid != os.getpid() and is_alive(pid) and "srifty" in describe(pid):
        raise SpecError(f"the run in {out} is still controlled by {describe(pid)}; stop it before resuming.")
    require_forwarded(state.setup.options.forward_env, f"the run in {out} forwarded", resuming=True)
    check_location(state.setup.ckpt_location())
    spec = load_spec(state.setup.spec_path)
    cloud, region = host_area(spec)
    hosts = parse_hostfile(state.setup.hostfile_text or "", region, cloud, source=f"{out}/run.json host file")
    check_faults(faults, len(hosts), spec.iterations)
    check_cpu_quotas(hosts, faults, launcher)
    ended = [describe(p) for p in end_marked(state.mark)]
    for left in remove_groups_of(state.mark.removeprefix("SRIFTY_OWNER_")):
        report(f"could not remove the killed controller's CPU-quota group {left}")
    for host in hosts:
        if host.address in state.launch_hosts and host.address not in state.lost:
            why = launcher.end_remote(host, state.mark, 15.0)
            if why:
                report(f"could not end the old processes on {host.address}: {why}")
    state = state.replace(checkpoint_step=_checkpoint_step(state, report))
    runner = ClusterRunner(
        state, spec_over_hosts(spec, hosts), hosts, launcher, out, plan_remaining, faults, inject, report=report,
        resumed_after=ended,
    )  # fmt: skip
    return write_summary(runner.run(), out)
