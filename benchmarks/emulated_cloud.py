"""Plan quality and one-shot prediction accuracy on the EMULATED cloud, over seeds (issues 8 and 13): the paper's
case studies and the harder suite against every baseline and the reference, and the Table 5 / Figure 7 study.

All three run the same library code as ``srifty eval cases --seeds``, ``srifty eval suite`` and ``srifty eval
accuracy``, write their raw results under ``benchmarks/results/emulated_cloud`` and their sections of
BENCHMARKS.md. The "before" column of the paper cases comes from the same evaluation run by the code before
issue 13 (commit eb88169; its truth was srifty's own roofline estimate), stored in ``results/emulated_cloud/before``.
Heavy: hold the CPU lock.

    flock /tmp/srifty-cpu.lock python -m benchmarks.emulated_cloud cases      # about 10 minutes
    flock /tmp/srifty-cpu.lock python -m benchmarks.emulated_cloud suite      # about 30 minutes
    flock /tmp/srifty-cpu.lock python -m benchmarks.emulated_cloud accuracy   # about 5 minutes
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.common import ROOT, machine_description, write_section
from srifty.evaluate import (
    AccuracySettings,
    CaseSettings,
    generate_suite,
    run_accuracy,
    run_seeds,
    save_accuracy,
    save_seeds,
    write_suite,
)
from srifty.evaluate.seeds import (
    SRIFTY_SPACE_BEST,
    SeedsRun,
    in_processes,
    summarise,
    summarise_by_case,
    why_summary,
)
from srifty.evaluate.tables import (
    ACCURACY_HEADER,
    METHOD_LABELS,
    SEEDS_CASE_HEADER,
    SEEDS_HEADER,
    UNDER_HEADER,
    WHY_HEADER,
    accuracy_rows,
    markdown,
    seeds_case_rows,
    seeds_summary_rows,
    underestimation_rows,
    why_rows,
)

RESULTS = ROOT / "benchmarks" / "results" / "emulated_cloud"
BEFORE = RESULTS / "before"
#: The commit whose judge the "before" runs used (the last before issue 24).
BEFORE_COMMIT = "1081475"
OLD_JUDGE = (
    "srifty's own scoring and power-of-two space, a best-known reference pooled from the methods' choices, a "
    "network truth of rated bandwidth × hidden factors, op counts of the unmeasured models from srifty's CPU profiles"
)
#: The paper cases' "before": the table the old judge gave, as published (commit ad00cfc, the last regeneration).
CASES_BEFORE_TEXT = (
    f' "before": the same cases and seeds judged by the judge before issue 24 ({OLD_JUDGE}), each method planning '
    "with that commit's code, as BENCHMARKS.md published it at commit ad00cfc "
    "(`benchmarks/results/emulated_cloud/before/cases_seeds.csv`, see its README)."
)
#: The suite's "before": the old judge run on this suite's specs and seeds (a `git archive` of BEFORE_COMMIT).
SUITE_BEFORE_TEXT = (
    f' "before": the same specs and seeds judged by the judge before issue 24 (commit {BEFORE_COMMIT}: {OLD_JUDGE}), '
    "each method planning with that commit's code (`benchmarks/results/emulated_cloud/before/suite_seeds.csv`, "
    "see its README)."
)
CASES_SECTION = "Plan quality on the emulated cloud"
SUITE_SECTION = "Plan quality on the harder suite (emulated cloud)"
ACCURACY_SECTION = "Iteration-time prediction on the emulated cloud"
DEFAULT_SEEDS = tuple(range(10))
#: The one-shot MAPE (median over seeds 0-9) the judge before issue 24 gave, as BENCHMARKS.md published it
#: (commit ad00cfc, the same grid and seeds); ``before/accuracy_mape.json``, where a before run wrote it, wins.
BEFORE_MAPE = {"srifty": 0.091, "apm": 0.188, "paleo": 0.411}
BEFORE_MAPE_FILE = BEFORE / "accuracy_mape.json"

TRUTH_TEXT = (
    "**EMULATED cloud, not EC2.** The judge is the cloud's own model and the truth side of `srifty eval` "
    "(`srifty.evaluate.truth`), sharing nothing with srifty's predictors or planner (the `judge-apart` import "
    "contract): compute from the real H200 curves carried to each GPU by a launch pipeline of wave-quantised "
    "kernels calibrated on public throughput, over the judge's own analytical counts of each model (models the "
    "H200 did not measure: less certain), each seed drawing the truth within its fit errors (section "
    '"Emulated cloud: calibration of its compute truth"); execution with a straggler process fitted on 400 '
    "H200 iterations, launch skew, per-model and per-run bucket readiness, allreduces one after another on one "
    "NCCL stream; a network fitted to public nccl-tests and torch.distributed tables of real clusters and the "
    'testbed\'s probes (section "Emulated cloud: its network truth against real clusters"), with racks, an '
    "oversubscribed spine, spread placements and zone crossings. srifty learns it only by measuring: 4-probe "
    "profiles per GPU type (its own probe placement and fits), grid probes and its bandwidth model (4 Optuna "
    "trials per MTU side); APM's alpha-beta on the same rows; Paleo from op counts; Oracle BO measures up to a "
    "third of its space on the truth (homogeneous configurations); random: the median of 20 uniform draws; best "
    "homogeneous: srifty's predictor over single-type configurations only. The absolute numbers are the "
    "emulation's; the comparison between methods is the point."
)
RATIO_TEXT = (
    "Ratio: the goal's quantity (time for `min_time`, cost for `min_cost`) over the reference's. The reference is "
    "the judge's own and no method's choice enters it: the best configuration the judge finds in its space (any "
    "local batch that fits, not only powers of two; the VMs of one type may split their share unevenly, some at "
    "b and the rest at b − 1; every VM count up to the quota; the global batch met exactly), and within srifty's "
    "rule (one power-of-two batch per type), searched whole where the space has at most 400 shapes (VM counts "
    "per type), else by branch and bound on the judge's steady outcome with its own bounds, the best 12 judged "
    "in full. A choice that breaks a constraint on the truth, or no plan where one was feasible, counts as ∞. "
    "Each configuration's truth: 4 placement draws × 25 iterations, the same draws for every configuration. "
    "\"Best of srifty's space\": the best the judge finds within srifty's rule, over the reference (above 1 "
    "where the wider space does better)."
)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def seeds_csv_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``save_seeds`` CSV in the form :func:`srifty.evaluate.seeds.rows_of` makes them."""
    with path.open(encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    return [
        {
            "seed": int(r["seed"]),
            "case": r["case"],
            "method": r["method"],
            "config": r["config"] or None,
            "ratio": None if r["ratio"] == "" else float(r["ratio"]),
            "violations": [v for v in r["violations"].split(";") if v],
            "reference": r["reference"],
            "solve_s": float(r["solve_s"] or 0.0),
        }
        for r in table
    ]


def _apm_notes(run: SeedsRun) -> list[str]:
    """Where srifty did not beat APM, and why (computed per case and seed by srifty.evaluate.why)."""
    by = {(r["seed"], r["case"], r["method"]): r["ratio"] for r in run.rows()}
    why = {(w["seed"], w["case"]): w for w in run.why_rows() if w["against"] == "vs_apm"}
    pairs = [
        (s, c)
        for (s, c, m), ratio in by.items()
        if m == "srifty" and ratio is not None and by.get((s, c, "apm")) is not None
    ]
    lost = [(s, c) for s, c in pairs if by[(s, c, "apm")] < by[(s, c, "srifty")] - 0.005]
    won = [(s, c) for s, c in pairs if by[(s, c, "srifty")] < by[(s, c, "apm")] - 0.005]

    def text(v: float) -> str:
        return "∞" if v == math.inf else f"{v:.3f}"

    lines = [
        f"srifty against APM over the {len(pairs)} (case, seed) pairs with a feasible reference: better by more "
        f"than 0.5% in {len(won)}, within 0.5% in {len(pairs) - len(won) - len(lost)}, worse in {len(lost)}.",
        *_wide_space_lines(run),
    ]
    for s, c in sorted(lost, key=lambda x: (x[1], x[0])):
        w = why.get((s, c))
        if w is None:
            cause = "not explained"
        else:
            detail = w["detail"].removeprefix(w["cause"]).strip()
            cause = f"{w['cause']}: {detail}"
        lines.append(f"- {c}, seed {s}: srifty {text(by[(s, c, 'srifty')])}, APM {text(by[(s, c, 'apm')])}; {cause}.")
    return lines


def _wide_space_lines(run: SeedsRun) -> list[str]:
    """What the judge's wider space gains over srifty's rule, and whether any method beat the reference."""
    rows = run.rows()
    rule = [r["ratio"] for r in rows if r["method"] == SRIFTY_SPACE_BEST and r["ratio"] is not None]
    finite = [x for x in rule if math.isfinite(x)]
    methods = [r for r in rows if r["method"] != SRIFTY_SPACE_BEST and r["ratio"] is not None]
    beaten = sorted({(r["case"], r["seed"]) for r in methods if math.isfinite(r["ratio"]) and r["ratio"] < 0.995})
    return [
        f"The judge's wider space against the best of srifty's space, over the {len(rule)} pairs with a feasible "
        f"reference: better by more than 0.5% in {sum(1 for x in finite if x > 1.005)}, by more than 2% in "
        f"{sum(1 for x in finite if x > 1.02)} (largest {max(finite, default=1.0):.3f}); nothing feasible within "
        f"srifty's rule where the wider space found something in {len(rule) - len(finite)}. A method's choice beat "
        f"the reference by more than 0.5% in {len(beaten)} pairs"
        + (": " + ", ".join(f"{c} seed {s}" for c, s in beaten) if beaten else "")
        + " (the reference divides each shape's work one way; a method may find a luckier division).",
    ]


def _seeds_body(run: SeedsRun, before: list[dict[str, Any]] | None) -> list[str]:
    rows = run.rows()
    summary = summarise(rows)
    header = SEEDS_HEADER + (("before: median ratio [p10–p90]", "before: within 5%") if before is not None else ())
    return [
        markdown(header, seeds_summary_rows(summary, summarise(before) if before is not None else None)),
        "",
        "Why srifty lost where it lost (`srifty.evaluate.why`: search, or which part of its prediction moved the "
        "wrong configuration ahead, measured on the truth):",
        "",
        markdown(WHY_HEADER, why_rows(why_summary(run.why_rows()))),
        "",
        *_apm_notes(run),
        "",
        "Per case, over seeds:",
        "",
        markdown(SEEDS_CASE_HEADER, seeds_case_rows(summarise_by_case(rows))),
    ]


def cases(seeds: Sequence[int], jobs: int) -> None:
    """The paper's case studies over seeds, with the pre-issue-13 figures beside."""
    specs = sorted((ROOT / "examples").glob("case*.yaml"))
    started = time.perf_counter()
    run = run_seeds(specs, CaseSettings(), seeds, "paper cases", lambda m: print(m, flush=True), jobs)
    json_path, csv_path = save_seeds(run, RESULTS, "cases_seeds")
    old_path = BEFORE / "cases_seeds.csv"
    old = [r for r in seeds_csv_rows(old_path) if r["seed"] in seeds] if old_path.exists() else None
    body = [
        TRUTH_TEXT,
        "",
        f"The paper's case studies (`examples/case*.yaml`) over {len(seeds)} seeds ({seeds[0]}–{seeds[-1]}); "
        + RATIO_TEXT
        + ("" if old is None else CASES_BEFORE_TEXT),
        "",
        *_seeds_body(run, old),
        "",
        f"Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.emulated_cloud cases"
        f"{_jobs_text(jobs)}` (the same code: `srifty "
        f"eval cases --seed {seeds[0]} --seeds {len(seeds)} --out {_rel(RESULTS)}`). {run.elapsed_s:.0f} s in all "
        f"on {machine_description()}."
        f"{_jobs_note(jobs)} Raw results: `{_rel(csv_path)}` (one row per seed, case and method) and "
        f"`{_rel(json_path)}` (every seed's run; per-configuration points for seed {seeds[0]}; `srifty report` "
        "charts it).",
    ]
    write_section(CASES_SECTION, "\n".join(body))
    print(f"wrote {json_path}, {csv_path} and BENCHMARKS.md ({time.perf_counter() - started:.0f} s)")


class SavedSeeds:
    """A :class:`SeedsRun` as ``save_seeds`` wrote it, for rendering its section again (what the section
    reads: the rows, the explanations, the first seed's cases, the wall time) without judging anything."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.elapsed_s = float(doc["elapsed_s"])
        cases = [
            SimpleNamespace(**{k: c[k] for k in ("name", "space_size", "reference")}) for c in doc["runs"][0]["cases"]
        ]
        self.runs = [SimpleNamespace(cases=cases)]

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(self.doc["seeds"])

    def rows(self) -> list[dict[str, Any]]:
        return [{**r, "ratio": math.inf if r["ratio"] == "inf" else r["ratio"]} for r in self.doc["rows"]]

    def why_rows(self) -> list[dict[str, Any]]:
        return list(self.doc["why_rows"])


def suite(seeds: Sequence[int], size: int, jobs: int, from_saved: bool = False) -> None:
    """The harder suite over seeds (``from_saved``: the section rendered again from the saved results, for a
    new "before" file; nothing is judged, and the seeds are the saved run's)."""
    started = time.perf_counter()
    specs = generate_suite(size, 0)
    write_suite(specs, RESULTS / "suite_specs")
    json_path, csv_path = RESULTS / "suite_seeds.json", RESULTS / "suite_seeds.csv"
    run: Any
    if from_saved:
        run = SavedSeeds(json.loads(json_path.read_text()))
        seeds = list(run.seeds)
    else:
        run = run_seeds([(s, str(s.name)) for s in specs], CaseSettings(), seeds, "harder suite", print, jobs)
        json_path, csv_path = save_seeds(run, RESULTS, "suite_seeds", with_points=False)
    first = run.runs[0].cases
    spaces = ", ".join(f"{c.name} {c.space_size:,}" for c in first)
    exhaustive = sum(c.reference == "exhaustive" for c in first)
    old_path = BEFORE / "suite_seeds.csv"
    old = [r for r in seeds_csv_rows(old_path) if r["seed"] in seeds] if old_path.exists() else None
    body = [
        TRUTH_TEXT,
        "",
        f"The harder suite: {size} specs from `srifty.evaluate.generate_suite` (generator seed 0; written to "
        "`benchmarks/results/emulated_cloud/suite_specs/`): 3–6 candidate types across GPU generations (T4, "
        "A10G, V100, A100, H100), spot and on-demand, quotas up to 64 VMs, the bundled models in turn, jobs of "
        "30 minutes to 4 hours of compute on their fastest configuration, the "
        "constraint (a deadline for `min_cost`, a budget for `min_time`, sometimes both) placed between the "
        "extremes of the judge's time/cost Pareto front so that it binds. The judge's spaces, in shapes (VM "
        f"counts per type): {spaces} ({exhaustive} of {len(first)} searched whole, the rest by branch and bound). "
        f"Over {len(seeds)} seeds ({seeds[0]}–{seeds[-1]}). " + RATIO_TEXT + ("" if old is None else SUITE_BEFORE_TEXT),
        "",
        *_seeds_body(run, old),
        "",
        f"Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.emulated_cloud suite"
        f"{_jobs_text(jobs)}` (the same code: `srifty "
        f"eval suite --seed {seeds[0]} --seeds {len(seeds)} --size {size} --out DIR`). {run.elapsed_s:.0f} s in "
        f"all on {machine_description()}."
        f"{_jobs_note(jobs)} Raw results: `{_rel(csv_path)}` and `{_rel(json_path)}` (choices and ratios; "
        "the judged configurations' points are not kept, `srifty eval suite --out` writes them)."
        + (
            " This section was rendered again from those saved results (`--from-saved`: nothing judged again) once "
            "the before file had all its seeds."
            if from_saved
            else ""
        ),
    ]
    write_section(SUITE_SECTION, "\n".join(body))
    print(f"wrote {json_path}, {csv_path} and BENCHMARKS.md ({time.perf_counter() - started:.0f} s)")


def accuracy(seeds: Sequence[int], jobs: int) -> None:
    """The accuracy grid on every seed; the first seed's run in detail."""
    started = time.perf_counter()
    runs = []
    if jobs > 1:
        done = in_processes(run_accuracy, [(AccuracySettings(seed=seed),) for seed in seeds], jobs)
    else:
        done = [run_accuracy(AccuracySettings(seed=seed), lambda m: print(m, flush=True)) for seed in seeds]
    for seed, one in zip(seeds, done, strict=True):
        runs.append(one)
        print(f"seed {seed}: " + ", ".join(f"{m} {100 * s['overall']['mape']:.1f}%" for m, s in one.summary.items()))
    json_path, csv_path = save_accuracy(runs[0], RESULTS)
    run = runs[0]
    s = run.settings
    before_mape = json.loads(BEFORE_MAPE_FILE.read_text()) if BEFORE_MAPE_FILE.exists() else BEFORE_MAPE
    spread = []
    for method in run.summary:
        values = sorted(r.summary[method]["overall"]["mape"] for r in runs)
        lo, hi = values[max(0, round(0.1 * (len(values) - 1)))], values[round(0.9 * (len(values) - 1))]
        before = before_mape.get(method)
        spread.append(
            f"| {METHOD_LABELS.get(method, method)} | {100 * statistics.median(values):.1f}% | "
            f"{100 * lo:.1f}–{100 * hi:.1f}% | "
            f"{'—' if before is None else f'{100 * before:.1f}%'} |"
        )
    body = [
        TRUTH_TEXT,
        "",
        "One-shot iteration-time prediction as in the paper's 2K-setup study (Table 5, Figure 7), per method "
        f"with a predictor of its own (the others plan with srifty's simulator or measure): {len(run.rows)} "
        f"homogeneous configurations per seed, {len(s.models)} models × {len(s.instance_types)} instance types "
        f"({', '.join(s.instance_types)}) × world sizes {', '.join(map(str, s.world_sizes))} GPUs × every "
        f"power-of-two local batch that fits, up to {s.max_batch}. Each configuration is one experiment: a fresh "
        f"placement draw and {s.iters} iterations, whose mean is the measurement. Error = predicted / measured − 1.",
        "",
        f"Overall MAPE over {len(seeds)} seeds (each a different world, learned afresh), beside what the judge "
        "before issue 24 gave on the same grid and seeds (median over seeds; "
        + (
            f"run at commit {BEFORE_COMMIT}, `{_rel(BEFORE_MAPE_FILE)}`):"
            if BEFORE_MAPE_FILE.exists()
            else "as BENCHMARKS.md published it at commit ad00cfc):"
        ),
        "",
        "| method | median MAPE over seeds | p10–p90 | before |",
        "|---|---|---|---|",
        *spread,
        "",
        f"Seed {seeds[0]} in detail:",
        "",
        markdown(ACCURACY_HEADER, accuracy_rows(run)),
        "",
        "Underestimation (Figure 7; the paper: srifty underestimates in 52% of cases, ≤ 21% error in 90% of "
        "those; APM underestimates 93% of the time with a 58% MAPE when it does):",
        "",
        markdown(UNDER_HEADER, underestimation_rows(run)),
        "",
        *_split_lines(run.rows),
        "",
        f"Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.emulated_cloud accuracy"
        f"{_jobs_text(jobs)}` (one seed: `srifty eval "
        f"accuracy --seed {seeds[0]} --out {_rel(RESULTS)}`). {time.perf_counter() - started:.0f} s in all on "
        f"{machine_description()}."
        f"{_jobs_note(jobs)} Raw results (seed {seeds[0]}): `{_rel(csv_path)}` (one row per experiment, "
        f"with the truth's certainty) and `{_rel(json_path)}`.",
    ]
    if run.skipped:
        body += ["", "Skipped: " + "; ".join(run.skipped) + "."]
    write_section(ACCURACY_SECTION, "\n".join(body))
    print(f"wrote {json_path}, {csv_path} and BENCHMARKS.md ({time.perf_counter() - started:.0f} s)")


def _jobs_text(jobs: int) -> str:
    """The command's ``--jobs`` (nothing with one process)."""
    return f" --jobs {jobs}" if jobs > 1 else ""


def _jobs_note(jobs: int) -> str:
    """What ``--jobs`` means for the figures (nothing with one process)."""
    return f" Seeds ran {jobs} at once, one process each: solve times include the others' load." if jobs > 1 else ""


def _split_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Where the error is: single GPUs (compute only), the rest, and the less certain truths, computed."""

    def mape(part: list[dict[str, Any]], key: str) -> str:
        return f"{100 * sum(abs(r[key]) for r in part) / len(part):.1f}%" if part else "—"

    methods = [m for m in ("srifty", "apm", "paleo") if rows and f"{m}_error" in rows[0]]
    alone = [r for r in rows if r["world_size"] == 1]
    shared = [r for r in rows if r["world_size"] > 1]
    uncertain = [r for r in rows if "less certain" in r.get("truth_certainty", "")]
    under = [r for r in shared if r["srifty_error"] < 0]

    def per(part: list[dict[str, Any]]) -> str:
        return ", ".join(f"{METHOD_LABELS.get(m, m)} {mape(part, f'{m}_error')}" for m in methods)

    return [
        f"The paper's Table 5: srifty 8.3% MAPE overall against APM's 24%, on EC2. Here: single GPUs (compute "
        f"only, no network): {per(alone)}; with a network: {per(shared)} (srifty underestimates "
        f"{100 * len(under) / max(len(shared), 1):.0f}% of them); on models whose truth is less certain (no GPU "
        f"measurement): {per(uncertain)}.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("cases", "suite", "accuracy"))
    parser.add_argument("--seeds", type=int, nargs="*", default=list(DEFAULT_SEEDS))
    parser.add_argument("--size", type=int, default=20, help="specs in the harder suite")
    parser.add_argument("--jobs", type=int, default=1, help="seeds at once, one process each")
    parser.add_argument(
        "--from-saved", action="store_true", help="suite: render the section again from the saved results"
    )
    args = parser.parse_args()
    if args.what == "cases":
        cases(args.seeds, args.jobs)
    elif args.what == "suite":
        suite(args.seeds, args.size, args.jobs, args.from_saved)
    else:
        accuracy(args.seeds, args.jobs)


if __name__ == "__main__":
    main()
