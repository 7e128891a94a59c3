"""The Python API behind ``srifty run --hosts`` and ``srifty run --resume``."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from srifty.artifacts import atomic_write_text, read_json_artifact
from srifty.catalog import load_catalog
from srifty.checkpoints import check_location, read_latest
from srifty.errors import SpecError
from srifty.plan.api import plan_job, require_global_batch, spec_area, spec_config
from srifty.processes import describe, is_alive
from srifty.runtime.api import checkpoint_every, config_from_plan, plan_remaining, spot_policy_for
from srifty.runtime.cluster import (
    RUN_STATE_KIND,
    RUN_STATE_VERSION,
    ClusterOptions,
    ClusterRunner,
    HostFault,
    Injector,
    end_leftovers,
    inject_locally,
)
from srifty.runtime.controller import Controller
from srifty.runtime.cpu_quota import remove_groups_of, unavailable
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.hosts import Host, assign_hosts, inventory, load_hostfile, parse_hostfile
from srifty.runtime.launchers import Launcher
from srifty.runtime.local import RunOutcome, make_log
from srifty.runtime.progress import DEFAULT_WINDOW_S
from srifty.spec import CandidateSpec, JobSpec, load_spec
from srifty.vocab import Config, parse_config


def host_area(spec: JobSpec) -> tuple[str, str]:
    """``(cloud, region)`` a host file is read in: the spec's one region (a host file's VMs are in one place).

    Raises:
        SpecError: the spec plans in several regions or clouds.
    """
    try:
        return spec_area(spec, load_catalog())
    except SpecError as err:
        raise SpecError(f"--hosts: {err}") from None


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


def check_host_faults(faults: Sequence[HostFault], hosts: Sequence[Host], iterations: int) -> None:
    """Refuse faults that can never fire.

    Raises:
        SpecError: a host index outside the host file or an iteration not before the last one.
    """
    for fault in faults:
        if not 0 <= fault.host < len(hosts):
            raise SpecError(
                f"--fault {fault.kind}@{fault.iteration}:{fault.host}: the host file has hosts 0 to {len(hosts) - 1}."
            )
        if not 0 <= fault.iteration < iterations:
            raise SpecError(
                f"--fault {fault.kind}@{fault.iteration}:{fault.host} can never fire: the job runs iterations 1 to "
                f"{iterations}."
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


def _positive(name: str, value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise SpecError(f"{name} must be a positive number of seconds, got {value}.")


def _start_config(
    spec_file: Path, spec: JobSpec, host_spec: JobSpec, plan_path: str | Path | None, config_text: str | None
) -> tuple[Config, float | None]:
    if config_text is not None:
        try:
            return spec_config(config_text, host_spec, load_catalog()), None
        except SpecError as error:
            raise SpecError(f"--config: {error}") from None
    if plan_path is not None:
        return config_from_plan(Path(plan_path), spec_file, spec)
    plan, _ = plan_job(host_spec)
    if plan.best is None:
        raise SpecError(plan.infeasibility.message if plan.infeasibility else "no feasible configuration")
    return plan.best.config, plan.best.estimate.iter_mean_s


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
    launcher_setup: dict[str, Any] | None = None,
    report: Callable[[str], None] = lambda _: None,
) -> RunOutcome:
    """Run a job across the hosts of ``hostfile`` (see :mod:`srifty.runtime.cluster`).

    Everything is checked before anything is launched: the spec, the host file (unknown instance types,
    duplicate addresses), the configuration against the hosts (too few), every host's reachability, the
    options and the faults.

    Raises:
        SpecError: bad input (exit code 2 in the CLI), before anything is launched.
        SriftyError: the run failed; every process it started on every host has been ended.
    """
    for name, value in (("--heartbeat-timeout", heartbeat_timeout_s), ("--hang-timeout", hang_timeout_s)):
        _positive(name, value)
    _positive("--lease", lease_s)
    _positive("--window", window_s)
    if lease_s <= heartbeat_timeout_s:
        raise SpecError(
            f"--lease ({lease_s:g} s) must be longer than --heartbeat-timeout ({heartbeat_timeout_s:g} s): a worker "
            "must not give up on the controller before the controller gives up on it."
        )
    if ckpt_every is not None and ckpt_every < 1:
        raise SpecError(f"--ckpt-every must be at least 1 iteration, got {ckpt_every}.")
    if ckpt_dir is not None:
        check_location(ckpt_dir)
    spec_file = Path(spec_path).resolve()
    spec = load_spec(spec_file)
    host_text = Path(hostfile).read_text(encoding="utf-8") if Path(hostfile).is_file() else None
    cloud, region = host_area(spec)
    hosts = load_hostfile(hostfile, region, cloud)
    host_spec = spec_over_hosts(spec, hosts)
    config, iter_s = _start_config(spec_file, spec, host_spec, plan_path, config_text)
    require_global_batch(config, spec, "configuration")
    assign_hosts(config, hosts)
    check_host_faults(faults, hosts, spec.iterations)
    check_cpu_quotas(hosts, faults, launcher)
    out = Path(run_dir).resolve()
    if (out / "run.json").exists():
        raise SpecError(
            f"{out} already holds a multi-host run (run.json); continue it with `srifty run --resume {out}`, or "
            "give another --run-dir."
        )
    check_reachable(hosts, launcher, 15.0)
    out.mkdir(parents=True, exist_ok=True)
    policy = spot_policy_for(host_spec, config)
    every = ckpt_every or checkpoint_every(spec, iter_s, policy)
    options = ClusterOptions(
        ckpt_dir=ckpt_dir or str(out / "checkpoints"),
        ckpt_every=every,
        heartbeat_timeout_s=heartbeat_timeout_s,
        hang_timeout_s=hang_timeout_s,
        lease_s=lease_s,
        window_s=window_s,
        endpoint_address=endpoint_address,
        forward_env=tuple(forward_env),
    )
    controller = Controller(
        host_spec,
        config,
        plan_remaining,
        make_log(out),
        window_s=options.window_s,
        quotas=inventory(hosts),
        policy=policy,
    )
    runner = ClusterRunner(controller, hosts, launcher, train_command, out, options, faults, inject, report=report)
    runner.setup = {
        "spec_path": str(spec_file),
        "hostfile_text": host_text,
        "launcher": launcher_setup or {"kind": launcher.name},
        "train_command": list(train_command),
        "cwd": os.getcwd(),
        "options": options.__dict__,
        "finished": False,
    }
    return _finish(runner, out)


def _finish(runner: ClusterRunner, out: Path) -> RunOutcome:
    outcome = runner.run()
    runner.setup["finished"] = True
    runner.save_state()
    summary = {"iterations": outcome.iterations, "launches": outcome.launches, "configs": outcome.configs}
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=1))
    return outcome


def read_run_state(run_dir: str | Path) -> dict[str, Any]:
    """The state of a multi-host run (``RUN_DIR/run.json``).

    Raises:
        SpecError: there is none (not a ``srifty run --hosts`` folder).
    """
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        raise SpecError(
            f"{run_dir} holds no multi-host run (no run.json); give the --run-dir of a `srifty run --hosts`."
        )
    return read_json_artifact(path, RUN_STATE_KIND, RUN_STATE_VERSION)


def _checkpoint_step(state: dict[str, Any], report: Callable[[str], None] = lambda _: None) -> int:
    """The last checkpoint: the marker (a path or an fsspec URL) when this machine can read it (workers write
    it before they notify the controller), else the last one the controller heard of."""
    step = int(state.get("checkpoint_step") or 0)
    location = str(state["options"]["ckpt_dir"])
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
    report: Callable[[str], None] = lambda _: None,
) -> RunOutcome:
    """Continue a multi-host run whose controller was killed: end whatever is left of its last launch on
    every host, log ``resume`` after the decisions already made, and continue from the last checkpoint.

    Raises:
        SpecError: no run there, its controller is still running, or it already finished.
    """
    out = Path(run_dir).resolve()
    state = read_run_state(out)
    if state.get("finished"):
        raise SpecError(f"the run in {out} already finished; start a new one with another --run-dir.")
    pid = int(state.get("controller_pid") or 0)
    if pid and pid != os.getpid() and is_alive(pid) and "srifty" in describe(pid):
        raise SpecError(f"the run in {out} is still controlled by {describe(pid)}; stop it before resuming.")
    os.chdir(state["cwd"])
    check_location(str(state["options"]["ckpt_dir"]))
    spec = load_spec(state["spec_path"])
    cloud, region = host_area(spec)
    hosts = parse_hostfile(state["hostfile_text"], region, cloud, source=f"{out}/run.json host file")
    ended = [describe(p) for p in end_leftovers(state["mark"])]
    for left in remove_groups_of(str(state["mark"]).removeprefix("SRIFTY_OWNER_")):
        report(f"could not remove the killed controller's CPU-quota group {left}")
    for host in hosts:
        if host.address in state["launch_hosts"] and host.address not in state["lost"]:
            why = launcher.end_remote(host, state["mark"], 15.0)
            if why:
                report(f"could not end the old processes on {host.address}: {why}")
    host_spec = spec_over_hosts(spec, hosts)
    config = parse_config(state["config"], region, cloud, load_catalog(), state["markets"], state.get("zone"))
    quotas = {(t, m): int(n) for t, m, n in state["quotas"]}
    log = DecisionLog(out / "decisions.jsonl")
    logged = log.read()
    step = _checkpoint_step(state, report)
    options = ClusterOptions(**{**state["options"], "forward_env": tuple(state["options"]["forward_env"])})
    runner_now = _now(state)
    last = logged[-1].iteration if logged else 0
    first = Decision(
        runner_now,
        step,
        "resume",
        f"the controller was restarted; {len(ended)} leftover process(es) of the old launch ended; continuing "
        f"from the checkpoint at iteration {step} (the last decision was at iteration {last}, "
        f"{len(logged)} decision(s) kept)",
        config.notation(),
        {"ended": ended},
    )
    controller = Controller(
        host_spec, config, plan_remaining, log, window_s=options.window_s, quotas=quotas, first=first
    )
    controller.set_aside = [str(a) for a in state.get("slow") or []]
    controller.resume_at(step, runner_now, float(state.get("spent_usd") or 0.0))
    check_host_faults(faults, hosts, spec.iterations)
    check_cpu_quotas(hosts, faults, launcher)
    runner = ClusterRunner(
        controller, hosts, launcher, state["train_command"], out, options, faults, inject,
        lost=state["lost"], started_unix=float(state["started_unix"]), report=report,
    )  # fmt: skip
    runner.checkpoint_step = step
    runner.launches = int(state.get("launches") or 0)
    runner.setup = {k: state[k] for k in ("spec_path", "hostfile_text", "launcher", "train_command", "cwd", "options")}
    runner.setup["finished"] = False
    runner.timeline = _old_timeline(out)
    runner._event("resume", from_iteration=step, ended=ended)
    return _finish(runner, out)


def _now(state: dict[str, Any]) -> float:
    import time

    return time.time() - float(state["started_unix"])


def _old_timeline(out: Path) -> list[dict[str, object]]:
    try:
        old = json.loads((out / "timeline.json").read_text())
    except (OSError, ValueError):
        return []
    return old if isinstance(old, list) else []
