"""Which charts each kind of input gets, and the words around them."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from srifty.report import figures
from srifty.report.inputs import ReportInput


@dataclass(frozen=True)
class Section:
    """A titled part of the report: paragraphs (already HTML-escaped) and plotly figures."""

    title: str
    paragraphs: tuple[str, ...] = ()
    figures: tuple[Any, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _p(text: str) -> str:
    return html.escape(text)


def plan_sections(item: ReportInput) -> list[Section]:
    """A plan: throughput against GPUs and time against cost of every configuration it evaluated."""
    doc = item.document
    points = doc.get("evaluated") or [*doc.get("pareto", []), *doc.get("alternatives", [])]
    points = [_point(p) for p in points]
    best = doc.get("best")
    chosen = {"chosen plan": _point(best)} if best else {}
    spec = doc.get("spec", {}).get("name") or item.path.stem
    text = [
        f"Plan of {spec} by {doc.get('method')} ({doc.get('mode')}): goal {doc.get('goal')}, global batch "
        f"{doc.get('global_batch')}, {doc.get('iterations')} iterations; {doc.get('n_evaluated')} configurations "
        f"predicted in {doc.get('solve_time_s', 0.0):.2f} s. Every number is srifty's prediction.",
        f"Chosen: {best['config']}." if best else "No configuration meets the constraints (infeasible).",
    ]
    if not doc.get("evaluated"):
        text.append("This plan file lists only its alternatives and Pareto front, not every configuration evaluated.")
    return [
        Section(
            f"Plan: {spec}",
            tuple(_p(t) for t in text),
            (
                figures.throughput_vs_gpus(
                    "predicted throughput against GPUs", {"predicted": points}, "throughput_samples_per_s"
                ),
                figures.time_vs_cost(
                    "predicted job time against cost", points, chosen, lambda p: p.get("feasible", True)
                ),
            ),
            ("Predicted against true iteration time needs measurements: see `srifty eval cases`.",),
        )
    ]


def _point(p: Mapping[str, Any]) -> dict[str, Any]:
    """A plan's scored configuration in the shape the charts read."""
    out = dict(p)
    if "instance_types" not in out:
        out["instance_types"] = sorted({g["instance_type"] for g in p.get("groups", [])})
    if "feasible" not in out:
        out["feasible"] = not p.get("violations")
    return out


def cases_sections(item: ReportInput) -> list[Section]:
    """An eval-cases run: per case, true and predicted throughput, time against cost with every method's
    choice, and srifty's and APM's predictions against the truth."""
    sections = []
    for case in item.document.get("cases", []):
        points = [dict(p) for p in case.get("points", [])]
        for p in points:
            if p.get("srifty_iter_s") and p.get("iter_s"):
                p["srifty_throughput_samples_per_s"] = p["throughput_samples_per_s"] * p["iter_s"] / p["srifty_iter_s"]
        chosen: dict[str, dict[str, Any]] = {}
        if case.get("optimum"):
            chosen["true optimum"] = case["optimum"]
        by_config = {p["config"]: p for p in points}
        rows = []
        for m in case.get("methods", []):
            ratio = "—" if m.get("ratio_to_optimum") is None else f"{m['ratio_to_optimum']:.3f}"
            rows.append(
                f"{m['method']}: {m.get('config') or 'no plan'}; ratio to optimum {ratio}; "
                f"violations: {', '.join(m.get('violations') or []) or 'none'}"
            )
            if m.get("config") and m["config"] in by_config:
                chosen[m["method"]] = by_config[m["config"]]
        pairs = {}
        for method in ("srifty", "apm"):
            usable = [p for p in points if p.get(f"{method}_iter_s") and p.get("iter_s")]
            pairs[method] = (
                [p["iter_s"] for p in usable],
                [p[f"{method}_iter_s"] for p in usable],
                [p["config"] for p in usable],
            )
        constraints = []
        if case.get("deadline_s"):
            constraints.append(f"deadline {case['deadline_s']:.0f} s")
        if case.get("budget_usd"):
            constraints.append(f"budget ${case['budget_usd']:.2f}")
        judged = (
            f"every one of the judge's {case['space_size']:,} shapes judged"
            if case.get("reference", "exhaustive") == "exhaustive"
            else f"{case.get('n_judged', 0):,} configurations judged ({case.get('reference', 'searched')} over "
            f"the judge's {case['space_size']:,} shapes)"
        )
        intro = (
            f"{case['model']}, goal {case['goal']}, global batch {case['global_batch']}, {case['iterations']} "
            f"iterations{'; ' + ', '.join(constraints) if constraints else ''}. {judged} "
            f"on the EMULATED cloud's truth, {case['n_feasible']} feasible."
        )
        sections.append(
            Section(
                f"Case {case['name']} (EMULATED cloud)",
                (_p(intro), *(_p(r) for r in rows)),
                (
                    figures.throughput_vs_gpus(
                        "throughput against GPUs: true (EMULATED) and srifty's prediction",
                        {"true": points, "srifty": points},
                        "throughput_samples_per_s",
                    ),
                    figures.time_vs_cost(
                        "true job time against cost, with each method's choice",
                        points,
                        chosen,
                        lambda p: not p.get("violations"),
                    ),
                    figures.predicted_vs_true("predicted against true iteration time", pairs),
                ),
            )
        )
    return sections


def seeds_sections(item: ReportInput) -> list[Section]:
    """An eval-seeds run: each method's ratios over every (case, seed), then per case over seeds."""
    doc = item.document
    summary = doc.get("summary", {})
    seeds = doc.get("seeds", [])
    text = [
        f"{doc.get('label', 'evaluation')} over {len(seeds)} seeds of the EMULATED cloud "
        f"({', '.join(map(str, seeds))}). "
        "Ratio: the goal's quantity over the reference's (the best configuration the judge finds in its own, wider "
        "space: exhaustively, or by branch and bound); ∞: a constraint broken on the truth, or no plan where one "
        "was feasible."
    ]
    for method, s in summary.items():
        if s.get("n"):
            text.append(
                f"{method}: median {_ratio(s['median'])} [p10 {_ratio(s['p10'])}, p90 {_ratio(s['p90'])}], within 5% "
                f"in {s['within_5pct']} of {s['n']}, {s['deadline_violations']} deadline and {s['budget_violations']} "
                "budget violations."
            )
    overall: dict[str, list[Any]] = {}
    for row in doc.get("rows", []):
        if row.get("ratio") is not None:
            overall.setdefault(row["method"], []).append(row["ratio"])
    sections = [
        Section(
            f"Plan quality over seeds: {doc.get('label', '')} (EMULATED cloud)",
            tuple(_p(t) for t in text),
            (figures.ratio_boxes("ratio to the reference, every case and seed", overall),),
        )
    ]
    for case, methods in doc.get("per_case", {}).items():
        ratios = {m: s.get("ratios", []) for m, s in methods.items() if s.get("n")}
        if not ratios:
            sections.append(Section(f"{case} over seeds", (_p("Nothing feasible on the truth in any seed."),), ()))
            continue
        rows = [
            f"{m}: median {_ratio(s['median'])} [{_ratio(s['p10'])}–{_ratio(s['p90'])}]" for m, s in methods.items()
        ]
        sections.append(
            Section(
                f"{case} over seeds",
                tuple(_p(r) for r in rows),
                (figures.ratio_boxes(f"{case}: ratio to the reference over seeds", ratios),),
            )
        )
    return sections


def _ratio(value: Any) -> str:
    if value is None:
        return "—"
    return "∞" if value == "inf" else f"{float(value):.3f}"


def accuracy_sections(item: ReportInput) -> list[Section]:
    """An eval-accuracy run: predictions against the truth, and MAPE by group."""
    doc = item.document
    rows = doc.get("rows", [])
    methods = [m for m in ("srifty", "apm", "paleo") if rows and f"{m}_iter_s" in rows[0]]
    pairs = {
        m: ([r["measured_iter_s"] for r in rows], [r[f"{m}_iter_s"] for r in rows], [_label(r) for r in rows])
        for m in methods
    }
    summary = doc.get("summary", {})
    text = []
    for m in methods:
        o = summary.get(m, {}).get("overall", {})
        if o.get("mape") is not None:
            text.append(
                f"{m}: MAPE {100 * o['mape']:.1f}% over {o['n']} configurations; underestimates "
                f"{100 * o['under_rate']:.0f}% of them, by {100 * o['under_mape']:.1f}% on average."
            )
    charts = [figures.predicted_vs_true("one-shot predicted against measured iteration time (EMULATED)", pairs)]
    for key, label in (("model", "model"), ("world_size", "world size"), ("instance_type", "instance type")):
        by = {m: summary.get(m, {}).get("by", {}).get(key, {}) for m in methods}
        if any(by.values()):
            charts.append(figures.mape_bars(f"MAPE by {label}", by))
    return [Section("Iteration-time prediction (EMULATED cloud)", tuple(_p(t) for t in text), tuple(charts))]


def _label(row: Mapping[str, Any]) -> str:
    return f"{row['model']} {row['n_vms']}x{row['instance_type']}@{row['local_batch']}"


def timeline_sections(records: Sequence[Mapping[str, Any]], source: str) -> list[Section]:
    """The runtime timeline."""
    events = [r for r in records if r["event"] != "iteration"]
    text = f"{len(records)} records from {source}; events: " + (
        ", ".join(f"{r['event']} at {r['time_s']:.0f} s" for r in events[:12]) or "none"
    )
    charts = [figures.timeline("iterations done against time", records)]
    segments = figures.launch_segments(records)
    if any(isinstance(r.get("loss"), int | float) for segment in segments for r in segment):
        charts.append(figures.loss_curve("training loss per iteration", records))
    if any(len(segment) > 1 for segment in segments):
        charts.append(figures.throughput_over_time("throughput over time (10-iteration window)", records))
    return [Section("Runtime timeline", (_p(text),), tuple(charts))]


def sections_for(item: ReportInput) -> list[Section]:
    """The sections of one input file."""
    if item.kind == "plan":
        return plan_sections(item)
    if item.kind == "eval-cases":
        return cases_sections(item)
    if item.kind == "eval-seeds":
        return seeds_sections(item)
    return accuracy_sections(item)
