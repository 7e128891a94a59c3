"""`srifty run`: run training, track it against the plan, re-plan on preemption or certain violation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from srifty.cli.console import err, out, styled
from srifty.errors import SpecError
from srifty.processes import signals_as_exit


def show_scenario(spec_path: Path, run_dir: Path, plan_path: Path | None) -> None:
    """``--emulated``: replay the spec's scenario on the emulated cloud and print what happened."""
    from srifty.evaluate.scenario import run_scenario
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
    spec_path: Annotated[Path, typer.Argument(help="Job spec YAML.")],
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
) -> None:
    """Run training with torchrun (local processes), or a scenario on the emulated cloud (--emulated).

    Give the training command after `--`, e.g. `srifty run job.yaml -- python examples/train_tiny.py`.
    """
    if emulated:
        show_scenario(spec_path, run_dir, plan_path)
        return
    command = list(ctx.args)
    if not command:
        raise SpecError("give the training command after `--`, e.g. `srifty run job.yaml -- python train.py`")
    from srifty.runtime.api import run_local_job
    from srifty.runtime.local import Fault

    faults = []
    if preempt_at is not None:
        faults.append(Fault("preempt", preempt_at, preempt_rank))
    if hang_at is not None:
        faults.append(Fault("hang", hang_at, hang_rank))
    with signals_as_exit():  # SIGTERM/SIGHUP end the workers too, as Ctrl-C does
        outcome = run_local_job(
            spec_path, command, run_dir, plan_path, config, faults, hang_timeout, ckpt_every, report=_warn
        )
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
    err.print(styled("yellow", "warning:", f" {text}"), soft_wrap=True)
