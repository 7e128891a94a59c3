"""The files a report is made of: plans, evaluation results and runtime timelines, read and checked.

* a plan (``srifty plan --json``, kind ``plan``);
* an evaluation (``srifty eval cases --out``, kind ``eval-cases``; with ``--seeds``, or ``srifty eval suite
  --out``, kind ``eval-seeds``; ``srifty eval accuracy --out``, kind ``eval-accuracy``);
* a runtime timeline: a JSON list of records ``{"time_s": float, "iteration": int, "event": str, ...}``;
  ``event`` is ``"iteration"`` for progress and anything else (``launch``, ``inject_preempt``,
  ``preempted``, ``switch``, ``rollback``, ``finished``, ...) for what happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srifty.artifacts import read_json
from srifty.errors import ArtifactError

KINDS = ("plan", "eval-cases", "eval-seeds", "eval-accuracy")


@dataclass(frozen=True)
class ReportInput:
    """One input file: its kind, its path and its content."""

    kind: str
    path: Path
    document: dict[str, Any]


def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise ArtifactError(f"{what} '{path}' does not exist. Check the path.")
    return read_json(path)


def read_input(path: Path) -> ReportInput:
    """Read a plan or evaluation file, whatever its kind.

    Raises:
        ArtifactError: missing, not JSON, or not one of the kinds a report shows.
    """
    doc = _read_json(path, "report input")
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind not in KINDS:
        shown = kind if kind is not None else type(doc).__name__
        raise ArtifactError(
            f"'{path}' is a '{shown}' file; a report shows plans (`srifty plan --json`), `srifty eval cases --out` "
            "(with or without --seeds), `srifty eval suite --out` and `srifty eval accuracy --out` results. Pass a "
            "timeline with --timeline."
        )
    if int(doc.get("schema_version", 0)) > 1:
        raise ArtifactError(f"'{path}' is {kind} schema version {doc['schema_version']}, newer than this srifty reads.")
    return ReportInput(str(kind), path, doc)


def read_timeline(path: Path) -> list[dict[str, Any]]:
    """Read a runtime timeline (see the module docstring), sorted by time.

    Raises:
        ArtifactError: missing, not JSON, not a list, or a record without a numeric ``time_s``, an integer
            ``iteration`` or a string ``event``.
    """
    doc = _read_json(path, "timeline")
    if not isinstance(doc, list) or not doc:
        raise ArtifactError(f"'{path}' must be a non-empty JSON list of records with time_s, iteration and event.")
    for i, rec in enumerate(doc):
        ok = (
            isinstance(rec, dict)
            and isinstance(rec.get("time_s"), int | float)
            and isinstance(rec.get("iteration"), int)
            and isinstance(rec.get("event"), str)
        )
        if not ok:
            raise ArtifactError(
                f"'{path}' record {i} is {rec!r:.80}; every record needs a number time_s, an integer iteration and a "
                "string event."
            )
    return sorted(doc, key=lambda r: (float(r["time_s"]), int(r["iteration"])))
