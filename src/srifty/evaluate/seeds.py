"""Plan quality over many seeds: every case on every seed's emulated cloud, and the spread of each method.

A seed is a different world: the truth's draws within its own uncertainty, placements, network efficiencies,
and everything srifty learns there (:mod:`srifty.evaluate.cases` runs one seed). Per method, over every
(case, seed) with a feasible reference:

* the median and the 10th-90th percentiles of its **ratio** to the reference (time for ``min_time``, cost
  for ``min_cost``); a choice that breaks a constraint, or no plan, counts as an infinite ratio (worse than
  any feasible choice), so a method cannot look good by ignoring the constraints;
* the **share within 2% and 5%** of the reference (feasible choices only);
* **deadline and budget violations** (true ones), and plans missed where a feasible configuration existed;
* where nothing was feasible on the truth: how often the method rightly chose nothing;
* for srifty, why it lost where it lost (:mod:`srifty.evaluate.why`): to the reference, and to APM.

The same summary reads the rows of older evaluation files (``cases.json`` of one seed each), so a "before"
column comes from the same code.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from srifty.evaluate.cases import CaseSettings, CasesRun, SpecInput, run_cases

Progress = Callable[[str], None]
INF = float("inf")


@dataclass(frozen=True)
class SeedsRun:
    """One evaluation repeated over seeds: each seed's run, in seed order.

    Attributes:
        label: ``cases`` (the paper's case studies) or ``suite`` (the harder suite), or what the caller says.
        runs: one :class:`~srifty.evaluate.cases.CasesRun` per seed.
        elapsed_s: wall time of all of them.
    """

    label: str
    runs: tuple[CasesRun, ...]
    elapsed_s: float

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds, in order."""
        return tuple(r.settings.seed for r in self.runs)

    def rows(self) -> list[dict[str, Any]]:
        """One row per (seed, case, method): see :func:`rows_of`."""
        return [row for run in self.runs for row in rows_of(run.to_dict())]

    def why_rows(self) -> list[dict[str, Any]]:
        """One row per (seed, case, loss) srifty explained: see :func:`why_rows_of`."""
        return [row for run in self.runs for row in why_rows_of(run.to_dict())]

    def to_dict(self, points_for_first_seed_only: bool = True) -> dict[str, Any]:
        """JSON-ready form (without ``kind``/``schema_version``): every seed's run, the rows and the summary.

        Args:
            points_for_first_seed_only: keep the per-configuration points of the first seed only (they are
                what the report charts; every seed's would make the file large).
        """
        runs = []
        for i, run in enumerate(self.runs):
            doc = run.to_dict()
            if points_for_first_seed_only and i > 0:
                for case in doc["cases"]:
                    case["points"] = []
            runs.append(doc)
        rows = self.rows()
        return {
            "emulated": True,
            "note": "EMULATED cloud: every 'true' figure here comes from srifty's emulated cloud, not from real VMs",
            "label": self.label,
            "seeds": list(self.seeds),
            "elapsed_s": self.elapsed_s,
            "summary": tag_infinite(summarise(rows)),
            "per_case": tag_infinite(summarise_by_case(rows)),
            "rows": tag_infinite(rows),
            "why": why_summary(self.why_rows()),
            "why_rows": self.why_rows(),
            "runs": runs,
        }


def tag_infinite(value: Any) -> Any:
    """``value`` with every infinite float written ``"inf"`` (JSON has no infinity; ``None`` means "no
    reference" here, which is something else)."""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, Mapping):
        return {k: tag_infinite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [tag_infinite(v) for v in value]
    return value


def rows_of(cases_doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows of one seed's evaluation (a ``CasesRun.to_dict()`` or a ``cases.json`` document).

    Each row: ``seed``, ``case``, ``method``, ``config``, ``ratio`` (``inf`` for a violating choice or no plan
    where the reference is feasible; ``None`` where nothing is feasible), ``violations``, ``reference``
    (``exhaustive``/``branch and bound``/``none feasible``). Each case also gets a row for
    :data:`SRIFTY_SPACE_BEST`: the best the judge finds within srifty's rule (power-of-two batches, one per
    type), over the reference; above 1 where the wider space does better.
    """
    seed = int(cases_doc.get("settings", {}).get("seed", 0))
    out = []
    for case in cases_doc["cases"]:
        feasible = case.get("optimum") is not None
        reference = case.get("reference", "exhaustive") if feasible else "none feasible"
        methods = list(case["methods"])
        if "srifty_rule_optimum" in case:
            methods.append(_srifty_space_row(case))
        for m in methods:
            violations = list(m.get("violations") or [])
            if not feasible:
                ratio = None
            elif m.get("config") is None or violations or m.get("ratio_to_optimum") is None:
                ratio = INF
            else:
                ratio = float(m["ratio_to_optimum"])
            out.append(
                {
                    "seed": int(case.get("seed", seed)),
                    "case": case["name"],
                    "method": m["method"],
                    "config": m.get("config"),
                    "ratio": ratio,
                    "violations": violations,
                    "reference": reference,
                    "solve_s": float(m.get("solve_s", 0.0)),
                }
            )
    return out


#: The pseudo-method of :func:`rows_of`: the judge's best configuration within srifty's rule.
SRIFTY_SPACE_BEST = "srifty_space_best"


def _srifty_space_row(case: Mapping[str, Any]) -> dict[str, Any]:
    """The judge's best within srifty's rule as a method row (``None``: nothing feasible there)."""
    best, optimum = case.get("srifty_rule_optimum"), case.get("optimum")
    if best is None:
        return {"method": SRIFTY_SPACE_BEST, "config": None, "violations": [], "solve_s": 0.0}
    key = "time_s" if case["goal"] == "min_time" else "cost_usd"
    ratio = None if optimum is None or not optimum[key] else float(best[key]) / float(optimum[key])
    return {
        "method": SRIFTY_SPACE_BEST,
        "config": best["config"],
        "violations": list(best.get("violations") or []),
        "ratio_to_optimum": ratio,
        "solve_s": float((case.get("search_s") or {}).get("powers_of_two", 0.0)),
    }


def why_rows_of(cases_doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Why srifty lost, per case of one seed's evaluation: ``against`` is ``vs_optimum`` or ``vs_apm``."""
    seed = int(cases_doc.get("settings", {}).get("seed", 0))
    out = []
    for case in cases_doc["cases"]:
        for against, why in (case.get("why") or {}).items():
            out.append(
                {
                    "seed": int(case.get("seed", seed)),
                    "case": case["name"],
                    "against": against,
                    "cause": why["cause"],
                    "detail": why.get("detail", ""),
                }
            )
    return out


def why_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per loss (``vs_optimum``, ``vs_apm``), how many (case, seed) each cause explains."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = out.setdefault(row["against"], {})
        counts[row["cause"]] = counts.get(row["cause"], 0) + 1
    return out


def _quantile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (linear), infinite values included (``inf`` where they reach it)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q
    lo = math.floor(position)
    hi = min(lo + 1, len(ordered) - 1)
    if math.isinf(ordered[hi]) or math.isinf(ordered[lo]):
        return ordered[hi] if position > lo else ordered[lo]
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo)


def method_stats(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Statistics of one method's rows (see the module docstring)."""
    rows = list(rows)
    judged = [r for r in rows if r["ratio"] is not None]
    hopeless = [r for r in rows if r["ratio"] is None]
    ratios = [float(r["ratio"]) for r in judged]
    finite = [x for x in ratios if math.isfinite(x)]
    n = len(judged)
    return {
        "n": n,
        "median": _quantile(ratios, 0.5) if ratios else None,
        "p10": _quantile(ratios, 0.1) if ratios else None,
        "p90": _quantile(ratios, 0.9) if ratios else None,
        "geo_mean_feasible": float(np.exp(np.mean(np.log(finite)))) if finite else None,
        "within_2pct": sum(1 for x in finite if x <= 1.02),
        "beat_reference": sum(1 for x in finite if x < 0.995),
        "worse_than_reference": sum(1 for x in finite if x > 1.005),
        "within_5pct": sum(1 for x in finite if x <= 1.05),
        "deadline_violations": sum(1 for r in judged if "deadline" in r["violations"]),
        "budget_violations": sum(1 for r in judged if "budget" in r["violations"]),
        "no_plan": sum(1 for r in judged if r["config"] is None),
        "infeasible_cases": len(hopeless),
        "right_about_infeasible": sum(1 for r in hopeless if r["config"] is None),
        "mean_solve_s": float(np.mean([r["solve_s"] for r in rows])) if rows else 0.0,
    }


def summarise(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per method, over every (case, seed)."""
    methods = list(dict.fromkeys(r["method"] for r in rows))
    return {m: method_stats(r for r in rows if r["method"] == m) for m in methods}


def summarise_by_case(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per case, per method, over seeds; each entry also lists its ratios in seed order."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == case]
        out[case] = {}
        for method in dict.fromkeys(r["method"] for r in mine):
            picked = sorted((r for r in mine if r["method"] == method), key=lambda r: r["seed"])
            stats = method_stats(picked)
            stats["ratios"] = [r["ratio"] for r in picked]
            stats["seeds"] = [r["seed"] for r in picked]
            stats["reference"] = sorted({r["reference"] for r in picked})
            out[case][method] = stats
    return out


def run_seeds(
    spec_inputs: Sequence[SpecInput],
    settings: CaseSettings,
    seeds: Sequence[int],
    label: str = "cases",
    progress: Progress | None = None,
    jobs: int = 1,
) -> SeedsRun:
    """Run the evaluation of ``spec_inputs`` once per seed (``settings.seed`` is replaced by each).

    Args:
        jobs: seeds evaluated at once, each in a process of its own (seeds share nothing, so the results are
            those of one process; the methods' solve times then include the other processes' load).
            ``progress`` hears only "seed S done" lines when ``jobs`` > 1.
    """
    from dataclasses import replace

    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    started = time.perf_counter()
    per_seed = [replace(settings, seed=int(s)) for s in seeds]
    if jobs == 1 or len(per_seed) < 2:
        runs = tuple(run_cases(spec_inputs, one, progress) for one in per_seed)
        return SeedsRun(label, runs, time.perf_counter() - started)

    def done(i: int) -> None:
        if progress is not None:
            progress(f"seed {per_seed[i].seed} done")

    results = in_processes(run_cases, [(list(spec_inputs), one) for one in per_seed], jobs, done)
    return SeedsRun(label, tuple(results), time.perf_counter() - started)


def in_processes(
    fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], jobs: int, done: Callable[[int], None] | None = None
) -> list[Any]:
    """``fn(*args)`` for each ``args`` of ``calls``, at most ``jobs`` at once, each in a spawned process (a fresh
    interpreter, so no lock or thread pool of this process is inherited mid-use); the results in call order.
    ``done(i)`` hears of each call's end, in order. ``fn`` and its arguments must pickle."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(calls))), mp_context=context) as pool:
        futures = [pool.submit(fn, *args) for args in calls]
        results = []
        for i, future in enumerate(futures):
            results.append(future.result())
            if done is not None:
                done(i)
    return results
