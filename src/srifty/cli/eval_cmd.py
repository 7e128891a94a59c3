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
from srifty.plan import METHODS

app = typer.Typer(
    help="Judge srifty and its baselines on the EMULATED cloud (ground truth for plans and predictions).",
    no_args_is_help=True,
)

ProfilesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profiles",
        help="Folder of profiles (with op counts) of models the emulated cloud does not bundle (repeatable).",
    ),
]
MethodsOption = Annotated[str | None, typer.Option(help=f"Comma-separated: {', '.join(METHODS)} (default: all).")]
AllocationsOption = Annotated[int, typer.Option(help="Placement draws each configuration's truth averages.")]
ItersOption = Annotated[int, typer.Option(help="Iterations per placement draw.")]
FitTrialsOption = Annotated[int, typer.Option(help="Optuna trials per MTU side for the bandwidth model.")]
SeedsOption = Annotated[
    int | None,
    typer.Option(
        "--seeds",
        help="Run this many seeds (SEED, SEED+1, ...) and report each method's spread over them.",
    ),
]

JobsOption = Annotated[
    int,
    typer.Option(
        "--jobs", help="Seeds evaluated at once, one process each (solve times then include the others' load)."
    ),
]


def _jobs(jobs: int) -> int:
    if jobs < 1:
        raise SpecError(f"--jobs takes a positive count, got {jobs}.")
    return jobs


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


def _settings(
    seed: int, methods: str | None, allocations: int, iters: int, fit_trials: int, profiles: list[Path] | None
) -> object:
    from srifty.evaluate import ALL_METHODS, CaseSettings

    if allocations < 1 or iters < 1 or fit_trials < 0:
        raise SpecError("--allocations and --iters must be at least 1, --fit-trials at least 0.")
    return CaseSettings(
        seed=seed,
        n_allocations=allocations,
        iters=iters,
        fit_trials=fit_trials,
        methods=_csv_list(methods, "methods") or ALL_METHODS,
        profile_dirs=tuple(profiles or ()),
    )


def _show_seeds(run: object, title: str, out_dir: Path | None, stem: str) -> None:
    from srifty.evaluate import (
        SEEDS_CASE_HEADER,
        SEEDS_HEADER,
        WHY_HEADER,
        SeedsRun,
        save_seeds,
        seeds_case_rows,
        seeds_summary_rows,
        summarise,
        summarise_by_case,
        why_rows,
        why_summary,
    )

    assert isinstance(run, SeedsRun)
    rows = run.rows()
    _print_table(f"{title}: each method over {len(run.seeds)} seeds", SEEDS_HEADER, seeds_summary_rows(summarise(rows)))
    _print_table(f"{title}: per case", SEEDS_CASE_HEADER, seeds_case_rows(summarise_by_case(rows)))
    _print_table("why srifty lost, where it lost", WHY_HEADER, why_rows(why_summary(run.why_rows())))
    out.print(
        f"ratio: the goal's quantity over the reference's (∞: a constraint broken or no plan); {run.elapsed_s:.0f} s"
    )
    if out_dir is not None:
        for path in save_seeds(run, out_dir, stem):
            out.print(f"wrote {path}")


def _seed_list(seed: int, seeds: int | None) -> list[int]:
    if seeds is not None and seeds < 1:
        raise SpecError(f"--seeds takes a positive count, got {seeds}.")
    return list(range(seed, seed + (seeds or 1)))


@app.command("cases")
def cases(
    specs: Annotated[list[Path] | None, typer.Argument(help="Job specs (default: examples/case*.yaml).")] = None,
    seed: Annotated[
        int, typer.Option(help="Seed of the emulated cloud and every learner (the first, with --seeds).")
    ] = 0,
    seeds: SeedsOption = None,
    jobs: JobsOption = 1,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Write the results (JSON and CSV) here.")] = None,
    profiles: ProfilesOption = None,
    methods: MethodsOption = None,
    allocations: AllocationsOption = 4,
    iters: ItersOption = 25,
    fit_trials: FitTrialsOption = 4,
) -> None:
    """Plan each case with srifty and every baseline, and judge them against the true optimum (over several
    seeds with --seeds: cases.json/csv for one seed, seeds.json/csv for several)."""
    from srifty.evaluate import CASE_HEADER, CaseSettings, cases_rows, run_cases, run_seeds, save_cases

    settings = _settings(seed, methods, allocations, iters, fit_trials, profiles)
    assert isinstance(settings, CaseSettings)
    paths = specs or _default_specs()
    progress = lambda msg: err.print(styled("dim", msg))  # noqa: E731
    if seeds is not None:
        run = run_seeds(paths, settings, _seed_list(seed, seeds), "cases", progress, _jobs(jobs))
        _show_seeds(run, "plan quality on the EMULATED cloud", out_dir, "seeds")
        return
    one = run_cases(paths, settings, progress)
    _print_table(f"plan quality on the EMULATED cloud (seed {seed})", CASE_HEADER, cases_rows(one))
    out.print(
        f"network: {one.network['probe_rows']} probe rows, bandwidth model fitted with {one.network['fit_trials']} "
        f"Optuna trials per MTU side; total {one.elapsed_s:.0f} s"
    )
    if out_dir is not None:
        for path in save_cases(one, out_dir):
            out.print(f"wrote {path}")


@app.command("suite")
def suite(
    seed: Annotated[int, typer.Option(help="First seed of the emulated cloud and every learner.")] = 0,
    seeds: Annotated[int, typer.Option("--seeds", help="How many seeds (SEED, SEED+1, ...).")] = 10,
    jobs: JobsOption = 1,
    size: Annotated[int, typer.Option("--size", help="How many specs the suite generates.")] = 20,
    suite_seed: Annotated[int, typer.Option(help="Seed of the spec generator (the same seed, the same suite).")] = 0,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Write suite.json/csv and the generated specs (specs/) here.")
    ] = None,
    methods: MethodsOption = None,
    allocations: AllocationsOption = 4,
    iters: ItersOption = 25,
    fit_trials: FitTrialsOption = 4,
) -> None:
    """The harder suite: generated specs (3-6 types across GPU generations, quotas up to 64, constraints near
    the Pareto front, spaces up to 10^7), every method judged over several seeds."""
    from srifty.evaluate import CaseSettings, generate_suite, run_seeds, write_suite

    if size < 1:
        raise SpecError(f"--size takes a positive count, got {size}.")
    _jobs(jobs)
    settings = _settings(seed, methods, allocations, iters, fit_trials, None)
    assert isinstance(settings, CaseSettings)
    specs = generate_suite(size, suite_seed)
    if out_dir is not None:
        paths = write_suite(specs, out_dir / "specs")
        out.print(f"wrote {len(paths)} specs to {out_dir / 'specs'}")
    progress = lambda msg: err.print(styled("dim", msg))  # noqa: E731
    run = run_seeds(
        [(s, str(s.name)) for s in specs], settings, _seed_list(seed, seeds), "suite", progress, _jobs(jobs)
    )
    _show_seeds(run, f"harder suite (generator seed {suite_seed}) on the EMULATED cloud", out_dir, "suite")


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
    """One-shot iteration-time MAPE of srifty, APM and Paleo over a configuration grid (Table 5, Figure 7)."""
    from srifty.evaluate import (
        ACCURACY_HEADER,
        DEFAULT_MODELS,
        DEFAULT_TYPES,
        DEFAULT_WORLD_SIZES,
        UNDER_HEADER,
        AccuracySettings,
        accuracy_rows,
        run_accuracy,
        save_accuracy,
        underestimation_rows,
    )

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
        typer.Argument(
            help="Plans (srifty plan --json), eval cases.json, seeds.json, suite.json or accuracy.json files."
        ),
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
