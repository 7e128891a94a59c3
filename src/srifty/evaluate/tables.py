"""Result tables of the evaluations, as rows of strings: printed by the CLI, written to BENCHMARKS.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from srifty.evaluate.accuracy import AccuracyRun
from srifty.evaluate.cases import CaseResult, CasesRun
from srifty.evaluate.seeds import SRIFTY_SPACE_BEST
from srifty.plan import METHODS

CASE_HEADER = (
    "case",
    "method",
    "chosen configuration",
    "true time (s)",
    "true cost ($)",
    "samples/s",
    "ratio to optimum",
    "violations",
    "solve (s)",
)
#: How tables print each method (the registry's labels).
METHOD_LABELS = {name: method.label for name, method in METHODS.items()}
METHOD_LABELS[SRIFTY_SPACE_BEST] = "best of srifty's space (the judge's search)"
ACCURACY_HEADER = ("group", "n", "srifty MAPE", "APM MAPE", "Paleo MAPE")
UNDER_HEADER = ("method", "MAPE", "underestimates", "MAPE when under", "90th pct. when under")


def _num(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _where(config: str, zone: str | None) -> str:
    """A configuration with the zone its spot VMs run in."""
    return f"{config} ({zone})" if zone else config


def case_rows(case: CaseResult) -> list[list[str]]:
    """One row for the true optimum, then one per method."""
    opt = case.optimum
    rows = [
        [
            case.name,
            "**true optimum**",
            _where(opt["config"], opt.get("zone")) if opt else "none feasible",
            _num(opt["time_s"] if opt else None, ",.0f"),
            _num(opt["cost_usd"] if opt else None, ",.3f"),
            _num(opt["throughput_samples_per_s"] if opt else None, ",.0f"),
            "1.000" if opt else "—",
            "",
            f"{case.truth_s:.1f} ({case.reference}, {case.n_judged} judged)",
        ]
    ]
    for m in case.methods:
        no_plan = "correct: none feasible" if case.optimum is None else "missed a feasible plan"
        rows.append(
            [
                case.name,
                METHOD_LABELS.get(m.method, m.method),
                _where(m.config, m.zone) if m.config else "no plan",
                _num(m.true_time_s, ",.0f"),
                _num(m.true_cost_usd, ",.3f"),
                _num(m.true_throughput_samples_per_s, ",.0f"),
                _num(m.ratio_to_optimum, ".3f"),
                ", ".join(m.violations) or ("none" if m.config else no_plan),
                f"{m.solve_s:.2f}",
            ]
        )
    return rows


def cases_rows(run: CasesRun) -> list[list[str]]:
    """Every case's rows."""
    return [row for case in run.cases for row in case_rows(case)]


def accuracy_rows(run: AccuracyRun) -> list[list[str]]:
    """Table 5 of the paper: MAPE of srifty, APM and Paleo by model, world size and instance type, and overall."""
    s = run.summary["srifty"]
    others = [run.summary.get(m) for m in ("apm", "paleo")]
    rows: list[list[str]] = []

    def mape(summary: dict[str, Any] | None, key: str | None, g: str | None) -> str:
        if summary is None:
            return "—"
        part = summary["overall"] if key is None else summary["by"][key].get(str(g), {})
        return _pct(part.get("mape"))

    for key, label in (("model", "model"), ("world_size", "world size"), ("instance_type", "instance type")):
        groups = s["by"][key]
        order = sorted(groups, key=lambda g: (int(g) if key == "world_size" else 0, g))
        for g in order:
            rows.append(
                [f"{label}: {g}", str(groups[g]["n"]), _pct(groups[g]["mape"]), *(mape(o, key, g) for o in others)]
            )
    rows.append(
        ["**overall**", str(s["overall"]["n"]), _pct(s["overall"]["mape"]), *(mape(o, None, None) for o in others)]
    )
    return rows


def underestimation_rows(run: AccuracyRun) -> list[list[str]]:
    """Figure 7 of the paper: how often each method underestimates, and by how much."""
    rows = []
    for method, label in (("srifty", "srifty"), ("apm", "APM"), ("paleo", "Paleo")):
        if method not in run.summary:
            continue
        o = run.summary[method]["overall"]
        rows.append([label, _pct(o["mape"]), _pct(o["under_rate"]), _pct(o["under_mape"]), _pct(o["under_p90"])])
    return rows


def markdown(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


SUMMARY_HEADER = (
    "method",
    "within 5% of the optimum",
    "geometric-mean ratio",
    "violations where a plan was feasible",
    "right about infeasible cases",
    "mean solve (s)",
)


def _knee_floor(knee: float | None) -> int:
    if knee is None or knee < 1:
        return 1
    return 1 << (int(knee).bit_length() - 1)


SEEDS_HEADER = (
    "method",
    "median ratio [p10–p90]",
    "within 2%",
    "within 5%",
    "deadline violations",
    "budget violations",
    "no plan (feasible existed)",
    "right about infeasible",
    "mean solve (s)",
)
BEFORE_HEADER = ("before: median ratio [p10–p90]", "before: within 5%")


def _ratio_text(value: Any) -> str:
    if value is None:
        return "—"
    if value == "inf" or (isinstance(value, float) and math.isinf(value)):
        return "∞"
    return f"{float(value):.3f}"


def spread_text(stats: dict[str, Any]) -> str:
    """``median [p10–p90]`` of a method's ratios (∞: a constraint broken or no plan)."""
    if not stats.get("n"):
        return "—"
    return f"{_ratio_text(stats['median'])} [{_ratio_text(stats['p10'])}–{_ratio_text(stats['p90'])}]"


def seeds_summary_rows(
    summary: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]] | None = None
) -> list[list[str]]:
    """One row per method over every (case, seed); with ``before``, its median and within-5% beside."""
    rows = []
    for method, s in summary.items():
        n = s["n"]
        row = [
            METHOD_LABELS.get(method, method),
            spread_text(s),
            f"{s['within_2pct']} of {n}",
            f"{s['within_5pct']} of {n}",
            str(s["deadline_violations"]),
            str(s["budget_violations"]),
            str(s["no_plan"]),
            f"{s['right_about_infeasible']} of {s['infeasible_cases']}" if s["infeasible_cases"] else "—",
            f"{s['mean_solve_s']:.2f}",
        ]
        if before is not None:
            b = before.get(method)
            row += [spread_text(b), f"{b['within_5pct']} of {b['n']}"] if b else ["(new)", "(new)"]
        rows.append(row)
    return rows


SEEDS_CASE_HEADER = ("case", "reference", "method", "median ratio [p10–p90]", "within 5%", "violations", "no plan")


def seeds_case_rows(per_case: dict[str, dict[str, dict[str, Any]]]) -> list[list[str]]:
    """Per case and method, over seeds."""
    rows = []
    for case, methods in per_case.items():
        for method, s in methods.items():
            if not s["n"]:
                rows.append(
                    [
                        case,
                        "none feasible",
                        METHOD_LABELS.get(method, method),
                        "—",
                        "—",
                        "—",
                        f"right {s['right_about_infeasible']} of {s['infeasible_cases']}",
                    ]
                )
                continue
            rows.append(
                [
                    case,
                    ", ".join(s["reference"]),
                    METHOD_LABELS.get(method, method),
                    spread_text(s),
                    f"{s['within_5pct']} of {s['n']}",
                    str(s["deadline_violations"] + s["budget_violations"]),
                    str(s["no_plan"]),
                ]
            )
    return rows


WHY_HEADER = ("srifty lost", "(case, seed) pairs", "search", "compute shape", "network", "stragglers")


def why_rows(summary: dict[str, dict[str, int]]) -> list[list[str]]:
    """How many of srifty's losses each cause explains (:mod:`srifty.evaluate.why`)."""
    labels = {"vs_optimum": "to the reference (beyond 2%, a broken constraint, or no plan)", "vs_apm": "to APM"}
    rows = []
    for against in ("vs_optimum", "vs_apm"):
        counts = summary.get(against, {})
        rows.append([labels[against], str(sum(counts.values())), *(str(counts.get(c, 0)) for c in WHY_HEADER[2:])])
    return rows
