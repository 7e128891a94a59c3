"""benchmarks.profile_repeatability: the last run against an earlier one, case by case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks import profile_repeatability, profile_rounds
from benchmarks.profile_repeatability import RESULTS, _summary, profile_rows, run_rows


def _run(commit: str, measured_s: list[float], srifty_s: float, apm_s: float) -> dict[str, Any]:
    return {
        "predictions": {"rows": [{"case": "a", "srifty_probed_s": srifty_s, "apm_probed_s": apm_s}]},
        "measurements": {
            "machine": f"x, commit {commit}",
            "rows": [{"case": "a", "measured_s": m} for m in measured_s],
        },
    }


def test_the_earlier_run_is_found_by_its_commit_and_each_change_is_signed_against_it() -> None:
    raw = _run("new", [1.1, 1.1], 1.2, 1.0)
    raw["earlier"] = [_run("other", [5.0], 5.0, 5.0), _run("abc1234", [1.0, 1.0], 1.0, 1.0)]
    rows, changes = run_rows("bench", raw, "abc1234")
    assert rows == [["bench", "a", "1000 → 1100 (+10.0%)", "1000 → 1200 (+20.0%)", "1000 → 1000 (+0.0%)"]]
    assert changes["measured"] == pytest.approx([10.0])
    assert changes["srifty_probed_s"] == pytest.approx([20.0])


def test_an_earlier_run_the_raw_file_does_not_keep_is_a_one_line_error() -> None:
    raw = _run("new", [1.0], 1.0, 1.0)
    raw["earlier"] = []
    with pytest.raises(SystemExit, match="no earlier run at commit zzz"):
        run_rows("bench", raw, "zzz")


def test_a_quantity_with_nothing_to_compare_says_so() -> None:
    assert _summary("profiles", []) == "profiles: none to compare"
    assert _summary("runs", [1.0, 3.0, 2.0]) == "runs median 2.0%, largest 3.0%"


def test_a_profiles_revision_git_does_not_know_is_a_one_line_error() -> None:
    with pytest.raises(SystemExit, match="--profiles-at no-such-rev: git knows no such commit"):
        profile_rows("bench", RESULTS / "end_to_end_profiles", "no-such-rev")


def test_the_reason_line_quotes_the_rounds_benchmark_from_its_saved_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(profile_rounds, "RESULTS", tmp_path / "missing.json")
    assert "rounds" not in profile_repeatability.rounds_line()  # no measurement, no claim
    runs = [
        {"way": way, "iter_ms": {str(b): ms * b for b in profile_rounds.AT_BATCHES}, "seconds": 1.0}
        for way, ms in (
            ("1 round of 6", 10.0),
            ("3 rounds of 2", 10.0),
            ("1 round of 6", 12.0),
            ("3 rounds of 2", 11.0),
        )
    ]
    (tmp_path / "rounds.json").write_text(json.dumps({"runs": runs}))
    monkeypatch.setattr(profile_rounds, "RESULTS", tmp_path / "rounds.json")
    line = profile_repeatability.rounds_line()
    assert "median 20.0% (1 round of 6) and 10.0% (3 rounds of 2)" in line
    assert "-13.0% against its second" in line  # (10 + 10) / (12 + 11) - 1
