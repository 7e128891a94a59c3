"""Evaluation results as files: a versioned JSON artefact (kind ``eval-cases`` or ``eval-accuracy``) and a
CSV of the raw rows beside it, each written atomically."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from srifty.artifacts import atomic_write_text, write_json_artifact
from srifty.evaluate.accuracy import AccuracyRun
from srifty.evaluate.cases import CasesRun
from srifty.evaluate.seeds import SeedsRun, tag_infinite

CASES_KIND = "eval-cases"
ACCURACY_KIND = "eval-accuracy"
EVAL_SCHEMA_VERSION = 1
CASE_COLUMNS = (
    "case",
    "model",
    "goal",
    "method",
    "config",
    "predicted_iter_s",
    "predicted_time_s",
    "predicted_cost_usd",
    "true_iter_s",
    "true_time_s",
    "true_cost_usd",
    "true_throughput_samples_per_s",
    "ratio_to_optimum",
    "throughput_ratio",
    "violations",
    "solve_s",
    "n_evaluated",
    "note",
)


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (JSON has no NaN or infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def _csv(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json_safe(v) for k, v in row.items()})
    return buffer.getvalue()


def save_cases(run: CasesRun, folder: Path) -> tuple[Path, Path]:
    """Write ``cases.json`` and ``cases.csv`` (one row per case and method) into ``folder``."""
    doc = json_safe(run.to_dict())
    json_path = write_json_artifact(folder / "cases.json", CASES_KIND, EVAL_SCHEMA_VERSION, doc)
    rows = []
    for case in run.cases:
        opt = case.optimum
        rows.append(
            {
                "case": case.name,
                "model": case.model,
                "goal": case.goal,
                "method": "true_optimum",
                "config": opt["config"] if opt else "",
                "true_iter_s": opt["iter_s"] if opt else None,
                "true_time_s": opt["time_s"] if opt else None,
                "true_cost_usd": opt["cost_usd"] if opt else None,
                "true_throughput_samples_per_s": opt["throughput_samples_per_s"] if opt else None,
                "ratio_to_optimum": 1.0 if opt else None,
                "throughput_ratio": 1.0 if opt else None,
                "solve_s": case.truth_s,
                "n_evaluated": case.space_size,
                "note": "every feasible configuration judged on the truth",
            }
        )
        for m in case.methods:
            row = {"case": case.name, "model": case.model, "goal": case.goal, **m.__dict__}
            row["violations"] = ";".join(m.violations)
            rows.append(row)
    csv_path = atomic_write_text(folder / "cases.csv", _csv(CASE_COLUMNS, rows))
    return json_path, csv_path


def save_accuracy(run: AccuracyRun, folder: Path) -> tuple[Path, Path]:
    """Write ``accuracy.json`` and ``accuracy.csv`` (one row per experiment) into ``folder``."""
    doc = json_safe(run.to_dict())
    json_path = write_json_artifact(folder / "accuracy.json", ACCURACY_KIND, EVAL_SCHEMA_VERSION, doc)
    columns = list(run.rows[0]) if run.rows else ["model"]
    csv_path = atomic_write_text(folder / "accuracy.csv", _csv(columns, run.rows))
    return json_path, csv_path


SEEDS_KIND = "eval-seeds"
SEEDS_COLUMNS = ("seed", "case", "method", "config", "ratio", "violations", "reference", "solve_s")


def save_seeds(run: SeedsRun, folder: Path, stem: str = "seeds", with_points: bool = True) -> tuple[Path, Path]:
    """Write ``<stem>.json`` (every seed's run, the rows, the summary per method and per case) and ``<stem>.csv``
    (one row per seed, case and method; ratio ``inf``: a constraint broken or no plan) into ``folder``.

    Args:
        with_points: keep the first seed's per-configuration points (every judged configuration with its true
            outcome and the predictions); without, the file holds the choices and ratios only (a harder-suite
            run judges tens of thousands of configurations: about 10 MB of points).
    """
    doc = json_safe(run.to_dict())
    if not with_points:
        for seed_run in doc["runs"]:
            for case in seed_run["cases"]:
                case["points"] = []
    json_path = write_json_artifact(folder / f"{stem}.json", SEEDS_KIND, EVAL_SCHEMA_VERSION, doc)
    rows = [{**r, "violations": ";".join(r["violations"])} for r in tag_infinite(run.rows())]
    csv_path = atomic_write_text(folder / f"{stem}.csv", _csv(SEEDS_COLUMNS, rows))
    return json_path, csv_path
