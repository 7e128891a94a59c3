"""Result tables of the evaluations, as rows of strings: printed by the CLI, written to BENCHMARKS.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from srifty.evaluate.accuracy import AccuracyRun
from srifty.evaluate.cases import CaseResult, CasesRun

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
ACCURACY_HEADER = ("group", "n", "srifty MAPE", "APM MAPE")
UNDER_HEADER = ("method", "MAPE", "underestimates", "MAPE when under", "90th pct. when under")


def _num(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def case_rows(case: CaseResult) -> list[list[str]]:
    """One row for the true optimum, then one per method."""
    opt = case.optimum
    rows = [
        [
            case.name,
            "**true optimum**",
            opt["config"] if opt else "none feasible",
            _num(opt["time_s"] if opt else None, ",.0f"),
            _num(opt["cost_usd"] if opt else None, ",.3f"),
            _num(opt["throughput_samples_per_s"] if opt else None, ",.0f"),
            "1.000" if opt else "—",
            "",
            f"{case.truth_s:.1f} ({case.space_size} judged)",
        ]
    ]
    for m in case.methods:
        rows.append(
            [
                case.name,
                m.method,
                m.config if m.config else f"no plan ({m.note})",
                _num(m.true_time_s, ",.0f"),
                _num(m.true_cost_usd, ",.3f"),
                _num(m.true_throughput_samples_per_s, ",.0f"),
                _num(m.ratio_to_optimum, ".3f"),
                ", ".join(m.violations) or ("none" if m.config else "—"),
                f"{m.solve_s:.2f}",
            ]
        )
    return rows


def cases_rows(run: CasesRun) -> list[list[str]]:
    """Every case's rows."""
    return [row for case in run.cases for row in case_rows(case)]


def accuracy_rows(run: AccuracyRun) -> list[list[str]]:
    """Table 5 of the paper: MAPE of srifty and APM by model, world size and instance type, and overall."""
    s, a = run.summary["srifty"], run.summary["apm"]
    rows: list[list[str]] = []
    for key, label in (("model", "model"), ("world_size", "world size"), ("instance_type", "instance type")):
        groups = s["by"][key]
        order = sorted(groups, key=lambda g: (int(g) if key == "world_size" else 0, g))
        for g in order:
            rows.append([f"{label}: {g}", str(groups[g]["n"]), _pct(groups[g]["mape"]), _pct(a["by"][key][g]["mape"])])
    rows.append(["**overall**", str(s["overall"]["n"]), _pct(s["overall"]["mape"]), _pct(a["overall"]["mape"])])
    return rows


def underestimation_rows(run: AccuracyRun) -> list[list[str]]:
    """Figure 7 of the paper: how often each method underestimates, and by how much."""
    rows = []
    for method, label in (("srifty", "srifty"), ("apm", "APM")):
        o = run.summary[method]["overall"]
        rows.append([label, _pct(o["mape"]), _pct(o["under_rate"]), _pct(o["under_mape"]), _pct(o["under_p90"])])
    return rows


def markdown(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)
