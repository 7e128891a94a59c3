"""The benchmarks' "before" block: a section as committed at a git revision, without its own before block."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from benchmarks.common import BEFORE_HEADING, published_section, with_before

SECTION = """# Benchmarks

## Other

other text

## Plans

| a | b |
|---|---|
| 1 | 2 |

Command: `python -m x`. Machine: m, commit 111.


(Interim: measured elsewhere; to be regenerated.)

### Before: as published at 000

| a | b |
|---|---|
| 0 | 0 |

## Last

last
"""


def _repo(tmp_path: Path) -> str:
    (tmp_path / "BENCHMARKS.md").write_text(SECTION)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "BENCHMARKS.md"], ["commit", "-qm", "s"]):
        subprocess.run([*git, *args], cwd=tmp_path, check=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_a_published_section_keeps_its_tables_and_drops_its_own_before_and_interim_remarks(tmp_path: Path) -> None:
    revision = _repo(tmp_path)
    body = published_section("Plans", revision, tmp_path)
    assert body.startswith("| a | b |") and "| 1 | 2 |" in body and body.endswith("commit 111.")
    assert "Interim" not in body and "| 0 | 0 |" not in body and "last" not in body


def test_a_missing_section_or_revision_is_a_clear_error(tmp_path: Path) -> None:
    revision = _repo(tmp_path)
    with pytest.raises(SystemExit, match="no section '## Nowhere'"):
        published_section("Nowhere", revision, tmp_path)
    with pytest.raises(SystemExit, match="git cannot show"):
        published_section("Plans", "0" * 40, tmp_path)


def test_with_before_appends_the_published_section_only_when_asked(tmp_path: Path) -> None:
    revision = _repo(tmp_path)
    assert with_before("new", "Plans", None, tmp_path) == "new"
    both = with_before("new", "Plans", revision, tmp_path)
    assert both.startswith(f"new\n\n{BEFORE_HEADING}{revision}\n\n| a | b |") and both.count(BEFORE_HEADING) == 1
    twice = with_before("new", "Plans", [revision, revision[:8]], tmp_path)
    older = published_section("Plans", revision, tmp_path)
    assert twice.count(BEFORE_HEADING) == 2 and twice.endswith(f"{BEFORE_HEADING}{revision[:8]}\n\n{older}")


def test_the_commit_a_machine_line_names_and_a_markdown_table() -> None:
    from benchmarks.common import commit_of, markdown_table

    assert commit_of("AMD EPYC, 2 cores, Python 3.11.7, commit 3f15e6e") == "3f15e6e"
    assert commit_of("AMD EPYC, 2 cores") == "unknown"
    assert markdown_table(["a", "b"], [["x", 1.5]]) == ["| a | b |", "|---|---|", "| x | 1.5 |"]
