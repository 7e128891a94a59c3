"""`srifty eval cases`, `srifty eval accuracy` and `srifty report`: judging plans and predictions on the
emulated cloud, and an HTML report of any of it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from srifty.cli.console import err, out, styled
from srifty.errors import SpecError
from srifty.plan.methods import METHODS

app = typer.Typer(
    help="Judge srifty and its baselines on the EMULATED cloud (ground truth for plans and predictions).",
    no_args_is_help=True,
)

ProfilesOption = Annotated[
    list[Path] | None,
    typer.Option("--profiles", help="Folder of source profiles for the cloud's compute truth (repeatable)."),
]


def _csv_list(text: str | None, what: str) -> tuple[str, ...] | None:
    if text is None:
        return None
    items = tuple(t.strip() for t in text.split(",") if t.strip())
    if not items:
        raise SpecError(f"--{what} needs at least one value, separated by commas.")
    return items


def _ints(text: str | None, what: str) -> tuple[int, ...] | None:
    items = _csv_list(text, what)
    if items is None:
        return None
    try:
        values = tuple(int(t) for t in items)
    except ValueError:
        raise SpecError(f"--{what} takes positive integers separated by commas, got '{text}'.") from None
    if min(values) < 1:
        raise SpecError(f"--{what} takes positive integers, got '{text}'.")
    return values


def _print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    table = Table(title=title)
    for i, column in enumerate(header):
        table.add_column(column.replace("**", ""), justify="left" if i < 3 else "right", overflow="fold")
    for row in rows:
        table.add_row(*(str(c).replace("**", "") for c in row))
    out.print(table)


def _default_specs() -> list[Path]:
    found = sorted(Path("examples").glob("case*.yaml"))
    if not found:
        raise SpecError(
            "no spec files given and none found as examples/case*.yaml here; pass spec files, "
            "or run from the srifty repository root."
        )
    return found


@app.command("cases")
def cases(
    specs: Annotated[list[Path] | None, typer.Argument(help="Job specs (default: examples/case*.yaml).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the emulated cloud and every learner.")] = 0,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Write cases.json and cases.csv here.")] = None,
    profiles: ProfilesOption = None,
    methods: Annotated[
        str | None,
        typer.Option(help=f"Comma-separated: {', '.join(METHODS)} (default: all)."),
    ] = None,
    allocations: Annotated[int, typer.Option(help="Placement draws each configuration's truth averages.")] = 4,
    iters: Annotated[int, typer.Option(help="Iterations per placement draw.")] = 25,
    fit_trials: Annotated[int, typer.Option(help="Optuna trials per MTU side for the bandwidth model.")] = 4,
) -> None:
    """Plan each case with srifty and every baseline, and judge them against the true optimum."""
    from srifty.evaluate import ALL_METHODS, CaseSettings, run_cases, save_cases
    from srifty.evaluate.tables import CASE_HEADER, cases_rows

    if allocations < 1 or iters < 1 or fit_trials < 0:
        raise SpecError("--allocations and --iters must be at least 1, --fit-trials at least 0.")
    settings = CaseSettings(
        seed=seed,
        n_allocations=allocations,
        iters=iters,
        fit_trials=fit_trials,
        methods=_csv_list(methods, "methods") or ALL_METHODS,
        profile_dirs=tuple(profiles or ()),
    )
    run = run_cases(specs or _default_specs(), settings, lambda msg: err.print(styled("dim", msg)))
    _print_table(f"plan quality on the EMULATED cloud (seed {seed})", CASE_HEADER, cases_rows(run))
    out.print(
        f"network: {run.network['probe_rows']} probe rows, bandwidth model fitted with {run.network['fit_trials']} "
        f"Optuna trials per MTU side; total {run.elapsed_s:.0f} s"
    )
    if out_dir is not None:
        for path in save_cases(run, out_dir):
            out.print(f"wrote {path}")


@app.command("accuracy")
def accuracy(
    seed: Annotated[int, typer.Option(help="Seed of the emulated cloud and every experiment.")] = 0,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Write accuracy.json and accuracy.csv here.")] = None,
    profiles: ProfilesOption = None,
    models: Annotated[str | None, typer.Option(help="Comma-separated models (default: the case studies').")] = None,
    types: Annotated[str | None, typer.Option(help="Comma-separated instance types.")] = None,
    world_sizes: Annotated[str | None, typer.Option(help="Comma-separated GPU counts.")] = None,
    max_batch: Annotated[int, typer.Option(help="Largest local batch tried.")] = 256,
    iters: Annotated[int, typer.Option(help="Iterations per experiment.")] = 20,
    fit_trials: Annotated[int, typer.Option(help="Optuna trials per MTU side for the bandwidth model.")] = 4,
) -> None:
    """One-shot iteration-time MAPE of srifty and APM over a grid of configurations (Table 5, Figure 7)."""
    from srifty.evaluate import AccuracySettings, run_accuracy, save_accuracy
    from srifty.evaluate.accuracy import DEFAULT_MODELS, DEFAULT_TYPES, DEFAULT_WORLD_SIZES
    from srifty.evaluate.tables import ACCURACY_HEADER, UNDER_HEADER, accuracy_rows, underestimation_rows

    if max_batch < 1 or iters < 1 or fit_trials < 0:
        raise SpecError("--max-batch and --iters must be at least 1, --fit-trials at least 0.")
    settings = AccuracySettings(
        seed=seed,
        models=_csv_list(models, "models") or DEFAULT_MODELS,
        instance_types=_csv_list(types, "types") or DEFAULT_TYPES,
        world_sizes=_ints(world_sizes, "world-sizes") or DEFAULT_WORLD_SIZES,
        max_batch=max_batch,
        iters=iters,
        fit_trials=fit_trials,
        profile_dirs=tuple(profiles or ()),
    )
    run = run_accuracy(settings, lambda msg: err.print(styled("dim", msg)))
    _print_table(f"iteration-time MAPE on the EMULATED cloud (seed {seed})", ACCURACY_HEADER, accuracy_rows(run))
    _print_table("underestimation", UNDER_HEADER, underestimation_rows(run))
    out.print(f"{len(run.rows)} configurations in {run.elapsed_s:.0f} s")
    for note in run.skipped:
        out.print(styled("yellow", "skipped:", f" {note}"))
    if out_dir is not None:
        for path in save_accuracy(run, out_dir):
            out.print(f"wrote {path}")


def report_command(
    inputs: Annotated[
        list[Path] | None,
        typer.Argument(help="Plans (srifty plan --json), eval cases.json or accuracy.json files."),
    ] = None,
    out_path: Annotated[Path, typer.Option("--out", help="HTML file to write.")] = Path("report.html"),
    timeline: Annotated[
        Path | None, typer.Option(help="A runtime timeline.json (records with time_s, iteration, event).")
    ] = None,
) -> None:
    """Write a self-contained HTML report (interactive plotly charts) of plans, evaluations and a timeline."""
    from srifty.report import build_report

    path = build_report(inputs or [], out_path, timeline)
    out.print(f"wrote {path}")
