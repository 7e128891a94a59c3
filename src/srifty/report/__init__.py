"""``srifty report``: one self-contained HTML file (plotly.js inlined) of plans, evaluations and a runtime
timeline. Charts where the data exists: throughput against GPUs per instance type, the time-vs-cost
Pareto front with the chosen plan marked, predicted against true iteration time, and the timeline.

plotly is imported only when a report is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from srifty.artifacts import atomic_write_text
from srifty.errors import ArtifactError
from srifty.report.html import figure_count, render_html
from srifty.report.inputs import read_input, read_timeline
from srifty.report.sections import Section, sections_for, timeline_sections


def build_sections(inputs: Sequence[Path], timeline: Path | None = None) -> tuple[list[Section], bool]:
    """The report's sections, and whether any input comes from the emulated cloud.

    Raises:
        ArtifactError: an unreadable input, or nothing to report.
    """
    if not inputs and timeline is None:
        raise ArtifactError("nothing to report: pass a plan or evaluation file, or --timeline.")
    sections: list[Section] = []
    emulated = False
    for path in inputs:
        item = read_input(Path(path))
        emulated = emulated or item.kind != "plan"
        try:
            sections.extend(sections_for(item))
        except MALFORMED as err:
            raise ArtifactError(_malformed(path, item.kind, err)) from None
    if timeline is not None:
        records = read_timeline(Path(timeline))
        try:
            sections.extend(timeline_sections(records, str(timeline)))
        except MALFORMED as err:
            raise ArtifactError(_malformed(timeline, "timeline", err)) from None
    return sections, emulated


#: What reading a field of a damaged or hand-edited file raises.
MALFORMED = (KeyError, TypeError, ValueError, IndexError, AttributeError)


def _malformed(path: Path, kind: str, err: Exception) -> str:
    return (
        f"'{path}' is a {kind} file with a missing or malformed field ({type(err).__name__}: {err}); regenerate it "
        "with the command that wrote it."
    )


def build_report(inputs: Sequence[Path], out_path: Path, timeline: Path | None = None, title: str = "") -> Path:
    """Write the HTML report of ``inputs`` (and ``timeline``) to ``out_path`` atomically; returns the path.

    Raises:
        ArtifactError: an unreadable input, or nothing to report.
    """
    sections, emulated = build_sections(inputs, timeline)
    if figure_count(sections) == 0:
        raise ArtifactError("the inputs hold nothing to chart (no cases, rows or configurations).")
    sources = [str(p) for p in inputs] + ([str(timeline)] if timeline is not None else [])
    page = render_html(title or "srifty report", sections, sources, emulated)
    return atomic_write_text(out_path, page)


__all__ = ["build_report", "build_sections"]
