"""`srifty run`: run training, track it against the plan, re-plan on preemption or certain violation."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from srifty.cli.console import err, out, styled
from srifty.cli.options import refuse_without
from srifty.errors import SpecError
from srifty.processes import signals_as_exit

if TYPE_CHECKING:
    from srifty.runtime import RunOutcome


def show_scenario(spec_path: Path, run_dir: Path, plan_path: Path | None) -> None:
    """``--emulated``: replay the spec's scenario on the emulated cloud and print what happened."""
    from srifty.evaluate import run_scenario
    from srifty.spec import load_spec

    if plan_path is not None:
        raise SpecError("--emulated plans on the emulated cloud itself; drop --plan")
    outcome = run_scenario(load_spec(spec_path), run_dir)
    table = Table(title="emulated run (EMULATED cloud, emulated clock)")
    for column in ("time s", "iteration", "event"):
        table.add_column(column)
    for e in outcome.timeline:
        if e["event"] != "iteration":
            detail = {k: v for k, v in e.items() if k not in ("time_s", "iteration", "event")}
            table.add_row(str(e["time_s"]), str(e["iteration"]), f"{e['event']} {detail}")
    out.print(table)
    verdict = {True: "met", False: "MISSED", None: "none given"}[outcome.met_deadline]
    out.print(
        f"finished {outcome.iterations} iterations at {outcome.finished_s:.0f} s (deadline {verdict}), "
        f"cost ${outcome.cost_usd:.2f}; configurations: {' → '.join(outcome.configs)}"
    )
    out.print(f"timeline: {run_dir / 'timeline.json'}; decisions: {run_dir / 'decisions.jsonl'}")


def run_command(
    ctx: typer.Context,
    spec_path: Annotated[Path | None, typer.Argument(help="Job spec YAML (not with --resume).")] = None,
    plan_path: Annotated[Path | None, typer.Option("--plan", help="Plan JSON from `srifty plan --json`.")] = None,
    config: Annotated[str | None, typer.Option(help="Start on this configuration instead of a plan.")] = None,
    run_dir: Annotated[Path, typer.Option(help="Progress, checkpoints, decision log, timeline.")] = Path("runs/latest"),
    preempt_at: Annotated[int | None, typer.Option(help="Kill a worker (SIGKILL) at this iteration.")] = None,
    preempt_rank: Annotated[int, typer.Option(help="Which rank --preempt-at kills.")] = 0,
    hang_at: Annotated[int | None, typer.Option(help="Stop a worker (SIGSTOP) at this iteration.")] = None,
    hang_rank: Annotated[int, typer.Option(help="Which rank --hang-at stops.")] = 0,
    hang_timeout: Annotated[
        float, typer.Option(help="Seconds without progress before a worker counts as hung.")
    ] = 60.0,
    ckpt_every: Annotated[
        int | None, typer.Option(help="Iterations between checkpoints (default: Young's rule).")
    ] = None,
    emulated: Annotated[
        bool, typer.Option("--emulated", help="Run on the emulated cloud instead of processes.")
    ] = False,
    hosts: Annotated[
        Path | None, typer.Option("--hosts", help="Host file: one VM per line (address, instance type, market).")
    ] = None,
    launcher: Annotated[str, typer.Option(help="With --hosts: how to reach the hosts (ssh, netns, local).")] = "ssh",
    testbed: Annotated[
        str | None, typer.Option(help="With --hosts: the network testbed the hosts are (netns, or ssh into it).")
    ] = None,
    ssh_key: Annotated[str | None, typer.Option(help="ssh launcher: private key file.")] = None,
    ssh_user: Annotated[str | None, typer.Option(help="ssh launcher: login name (host file user= wins).")] = None,
    ssh_port: Annotated[int | None, typer.Option(help="ssh launcher: port (host file port= wins).")] = None,
    ssh_option: Annotated[list[str] | None, typer.Option(help="ssh launcher: an extra -o option (repeatable).")] = None,
    controller_address: Annotated[
        str | None, typer.Option(help="With --hosts: the address workers report to (default: found by route).")
    ] = None,
    ckpt_dir: Annotated[
        str | None,
        typer.Option(
            help="With --hosts: checkpoints, a path every host can write or an fsspec URL (s3://bucket/run; "
            "default RUN_DIR/checkpoints)."
        ),
    ] = None,
    heartbeat_timeout: Annotated[
        float, typer.Option(help="With --hosts: seconds of silence from a host before it counts as lost.")
    ] = 10.0,
    lease: Annotated[
        float, typer.Option(help="With --hosts: seconds a worker keeps going without reaching the controller.")
    ] = 30.0,
    forward_env: Annotated[
        list[str] | None, typer.Option(help="With --hosts: pass this environment variable on to every host.")
    ] = None,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            help="With --hosts: inject vanish@ITER:HOST, partition@ITER:HOST or slow@ITER:HOST[:cpu=CORES] "
            "(repeatable)."
        ),
    ] = None,
    window: Annotated[
        float, typer.Option(help="With --hosts: seconds of throughput the controller projects with (K).")
    ] = 300.0,
    resume: Annotated[
        Path | None,
        typer.Option("--resume", help="Continue the run in this folder (after Ctrl-C, SIGTERM, a killed controller)."),
    ] = None,
) -> None:
    """Run training with torchrun (local processes, or one torchrun per host with --hosts), or a scenario on
    the emulated cloud (--emulated).

    Give the training command after `--`, e.g. `srifty run job.yaml -- python examples/train_tiny.py`, or
    `srifty run job.yaml --hosts hosts.txt -- python train.py`. `srifty run --resume RUN_DIR` continues a run
    that was interrupted (Ctrl-C, SIGTERM) or whose controller was killed, on this machine or across hosts.
    """
    _refuse_idle_options(ctx, hosts is not None, emulated, resume is not None)
    if resume is not None:
        from srifty.cli.hosts_cmd import resume as resume_run

        if spec_path is not None or ctx.args:
            raise SpecError("--resume continues the run as it was started: give no spec or training command.")
        with signals_as_exit():
            outcome = resume_run(resume, fault or [], report=_warn)
        _show(outcome, resume)
        return
    if spec_path is None:
        raise SpecError("give the job spec, e.g. `srifty run job.yaml -- python train.py` (or --resume RUN_DIR)")
    if emulated:
        show_scenario(spec_path, run_dir, plan_path)
        return
    command = list(ctx.args)
    if not command:
        raise SpecError("give the training command after `--`, e.g. `srifty run job.yaml -- python train.py`")
    if hosts is not None:
        from srifty.cli.hosts_cmd import run_on_hosts
        from srifty.runtime import LauncherSetup

        if preempt_at is not None or hang_at is not None:
            raise SpecError(
                "with --hosts, inject faults with --fault vanish@ITER:HOST, partition@ITER:HOST or slow@ITER:HOST."
            )
        setup = LauncherSetup(
            launcher, testbed, ssh_key, ssh_user, ssh_port, tuple(ssh_option or ()), controller_address
        )
        with signals_as_exit():
            outcome = run_on_hosts(
                spec_path, command, run_dir, hosts, setup, fault or [], _warn, plan_path=plan_path,
                config_text=config, ckpt_dir=ckpt_dir, ckpt_every=ckpt_every, heartbeat_timeout_s=heartbeat_timeout,
                hang_timeout_s=hang_timeout, lease_s=lease, window_s=window,
                forward_env=forward_env or (),
            )  # fmt: skip
        _show(outcome, run_dir)
        return
    from srifty.runtime import Fault, run_local_job

    faults = []
    if preempt_at is not None:
        faults.append(Fault("preempt", preempt_at, preempt_rank))
    if hang_at is not None:
        faults.append(Fault("hang", hang_at, hang_rank))
    with signals_as_exit():  # SIGTERM/SIGHUP end the workers too, as Ctrl-C does
        outcome = run_local_job(
            spec_path, command, run_dir, plan_path, config, faults, hang_timeout, ckpt_every, report=_warn
        )
    _show(outcome, run_dir)


#: Options of `srifty run` that only do something with --hosts.
HOST_OPTIONS = (
    "launcher", "testbed", "ssh_key", "ssh_user", "ssh_port", "ssh_option", "controller_address", "ckpt_dir",
    "heartbeat_timeout", "lease", "forward_env", "fault", "window",
)  # fmt: skip
#: Options of a run on local processes (and --hosts), which an emulated run has no use for.
PROCESS_OPTIONS = ("config", "preempt_at", "preempt_rank", "hang_at", "hang_rank", "hang_timeout", "ckpt_every")


def _refuse_idle_options(ctx: typer.Context, with_hosts: bool, emulated: bool, resuming: bool) -> None:
    """Options given where they would do nothing are refused, naming what they need."""
    if resuming:
        kept = {"resume", "fault"}
        idle = [p.name for p in ctx.command.params if p.name is not None and p.name not in kept]
        refuse_without(ctx, idle, "a new run", "--resume continues a run with the options it started with")
        return
    if emulated:
        refuse_without(ctx, [*HOST_OPTIONS, *PROCESS_OPTIONS, "hosts"], "a run of real processes", "drop --emulated")
    elif not with_hosts:
        refuse_without(ctx, HOST_OPTIONS, "--hosts", '`srifty run --help` marks such options "With --hosts"')
    refuse_without(ctx, [] if ctx.params.get("preempt_at") is not None else ["preempt_rank"], "--preempt-at")
    refuse_without(ctx, [] if ctx.params.get("hang_at") is not None else ["hang_rank"], "--hang-at")


def _show(outcome: RunOutcome, run_dir: Path) -> None:
    table = Table(title=f"srifty run: {outcome.iterations} iterations in {outcome.launches} launch(es)")
    table.add_column("time s", justify="right")
    table.add_column("iteration", justify="right")
    table.add_column("event")
    for event in outcome.timeline:
        if event["event"] != "iteration":
            detail = {k: v for k, v in event.items() if k not in ("time_s", "iteration", "event")}
            table.add_row(f"{event['time_s']}", str(event["iteration"]), f"{event['event']} {detail}")
    out.print(table)
    out.print(f"decision log: {outcome.log_path}; timeline: {run_dir / 'timeline.json'}")


def _warn(text: str) -> None:
    if text.startswith("interrupted"):  # where an interrupted run stopped: not a warning, the answer
        err.print(styled("bold", text), soft_wrap=True)
        return
    err.print(styled("yellow", "warning:", f" {text}"), soft_wrap=True)
