"""`srifty launch`: plan, bring the plan up through SkyPilot, and run it under srifty's controller."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from srifty.cli.console import err, out, styled
from srifty.errors import SpecError
from srifty.processes import signals_as_exit

if TYPE_CHECKING:
    from srifty.integrations.skypilot.launch import Launch


def launch_command(
    ctx: typer.Context,
    spec_path: Annotated[Path | None, typer.Argument(help="Job spec YAML, inside the folder SkyPilot copies.")] = None,
    plan_path: Annotated[Path | None, typer.Option("--plan", help="Plan JSON from `srifty plan --json`.")] = None,
    dryrun: Annotated[
        bool, typer.Option("--dryrun", help="Stop after SkyPilot's dry run of every task: nothing is rented.")
    ] = False,
    down: Annotated[
        Path | None, typer.Option("--down", help="Tear down every cluster of the launch in this run folder.")
    ] = None,
    sky: Annotated[
        str | None, typer.Option("--sky", help="SkyPilot's `sky` executable (default: $SRIFTY_SKY, then PATH).")
    ] = None,
    install: Annotated[
        str | None,
        typer.Option(
            help="Where the VMs install srifty from: a wheel file or a pip requirement such as "
            "git+https://github.com/OWNER/srifty@COMMIT (default: where this srifty came from, if a VM can reach it)."
        ),
    ] = None,
    zone_names: Annotated[
        Path | None,
        typer.Option(help="AWS zone ID to name mapping (SkyPilot's az_mappings CSV; default: SkyPilot's own)."),
    ] = None,
    run_dir: Annotated[
        Path | None, typer.Option(help="Where the task files and launch.json go (default runs/srifty-<job>).")
    ] = None,
) -> None:
    """Plan a job and bring it up through SkyPilot: one cluster per group of the plan, in the plan's zone, spot
    or on-demand as planned, with srifty's controller (`srifty run --hosts`) on the first cluster's head node.

    Give the training command after `--`, e.g. `srifty launch job.yaml -- python train.py`. `--dryrun` runs
    SkyPilot's own dry run of every task and rents nothing; `srifty launch --down RUN_DIR` tears it all down.
    """
    from srifty.integrations.skypilot.sky import Sky, find_sky

    if down is not None:
        from srifty.integrations.skypilot.launch import down_run

        if spec_path is not None or ctx.args:
            raise SpecError("--down tears down a launch by its run folder: give no spec or training command.")
        record = down_run(down, Sky(find_sky(sky), echo=_echo))
        out.print(f"torn down: {', '.join(record.clusters) or 'nothing was launched'}")
        return
    if spec_path is None:
        raise SpecError("give the job spec, e.g. `srifty launch job.yaml -- python train.py` (or --down RUN_DIR)")
    if not ctx.args:
        raise SpecError("give the training command after `--`, e.g. `srifty launch job.yaml -- python train.py`")
    from srifty.integrations.skypilot.launch import prepare_launch

    train_command = shlex.join(ctx.args)
    launch = prepare_launch(
        spec_path, train_command, Sky(find_sky(sky), echo=_echo), plan_path=plan_path, install=install,
        zone_names=zone_names, run_dir=run_dir, report=_report,
    )  # fmt: skip
    with signals_as_exit():
        launch.dry_run()
        if dryrun:
            _summary(launch, "dry run passed: nothing was rented")
            return
        launch.up(train_command)
    _summary(launch, f"running: follow it with `sky logs {launch.tasks.head}`")
    out.print(f"the clusters stay up until you tear them down: srifty launch --down {launch.run_dir}", soft_wrap=True)


def _summary(launch: Launch, verdict: str) -> None:
    out.print(styled("bold", "SkyPilot commands issued", f" ({len(launch.sky.calls)}):"))
    for call in launch.sky.calls:
        out.print(f"  {call.command}  [{call.wall_s:.1f} s, exit {call.returncode}]", soft_wrap=True, markup=False)
    out.print(f"{verdict}; task files and launch.json in {launch.run_dir}", soft_wrap=True)


def _echo(line: str) -> None:
    err.print(f"  sky | {line}", soft_wrap=True, markup=False, highlight=False)


def _report(text: str) -> None:
    out.print(styled("bold", "launch:", f" {text}"), soft_wrap=True)
