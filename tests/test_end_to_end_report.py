"""The end-to-end section's repeatability line: only where the run before predicted from the same profiles."""

from __future__ import annotations

from typing import Any

from benchmarks import end_to_end


def _run(written: str, perfect: dict[str, float], measured: dict[str, list[float]]) -> dict[str, Any]:
    rows = [{"case": c, "srifty_perfect_s": v, "srifty_s": v * 1.1, "apm_s": v * 0.9} for c, v in perfect.items()]
    meas = [{"case": c, "measured_s": m} for c, ms in measured.items() for m in ms]
    return {"predictions": {"written_utc": written, "rows": rows}, "measurements": {"rows": meas}}


def test_the_line_says_how_far_the_same_cases_moved_between_runs() -> None:
    perfect = {"a": 1.0, "b": 2.0}
    before = _run("then", perfect, {"a": [1.0, 1.0], "b": [2.0]})
    now = _run("now", perfect, {"a": [1.1], "b": [1.9, 1.9]})
    saved = {**now, "earlier": [before]}
    (line,) = [text for text in end_to_end._repeatability_lines(saved) if text]
    assert "moved from its by 7.5% on average (largest +10.0%, a)" in line  # +10% and -5%
    # That run's measurements (exactly the perfect-overlap predictions) against this run's predictions.
    assert "perfect overlap 0.0% (largest 0.0%), srifty, measured interference 10.0% (largest 10.0%)" in line
    other = {**now, "earlier": [_run("then", {"a": 1.0, "b": 2.5}, {"a": [1.0], "b": [2.0]})]}
    assert end_to_end._repeatability_lines(other) == []  # other profiles: no floor to read
    assert end_to_end._repeatability_lines(now) == []


def test_a_saved_profile_is_reused_only_within_the_hour_and_with_its_interference() -> None:
    import dataclasses
    import datetime as dt

    from tests.factories import synthetic_profile
    from tests.test_interference import measurement

    measured_at = dt.datetime(2026, 12, 4, 16, 0, tzinfo=dt.UTC)
    profile = synthetic_profile(created_at=measured_at.isoformat()).with_changes(interference=measurement())
    half_hour = measured_at.timestamp() + 1800
    assert end_to_end.stale_reason(profile, half_hour) is None
    assert "measured 5.5 h ago" in str(end_to_end.stale_reason(profile, measured_at.timestamp() + 5.5 * 3600))
    assert "no interference" in str(end_to_end.stale_reason(profile.with_changes(interference=None), half_hour))
    unreadable = dataclasses.replace(profile, created_at="yesterday")
    assert "unreadable" in str(end_to_end.stale_reason(unreadable, half_hour))


def test_remeasure_measures_a_type_once_per_run(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A type shared by several cases is measured once, not once per case (which overwrote the profile an
    earlier case had been predicted from)."""

    class NoProcesses:
        def popen(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            raise AssertionError("measured again")

    case = end_to_end.CASES[0]
    path = end_to_end.profile_path(case, case.hosts[0], tmp_path)
    monkeypatch.setattr(end_to_end, "_MEASURED_THIS_RUN", {path.resolve()})
    got = end_to_end.profile_type(case, case.hosts[0], tmp_path, tmp_path, NoProcesses(), True)  # type: ignore[arg-type]
    assert got == path


def test_the_probed_table_scores_the_probed_predictions_and_is_left_out_without_them() -> None:
    saved = _run("now", {"a": 1.0, "b": 2.0}, {"a": [1.0], "b": [2.0, 2.0]})
    assert end_to_end._probed_lines(saved["predictions"], {"a": [], "b": []}, 5.0) == []
    for row, probed in zip(saved["predictions"]["rows"], (1.1, 1.8), strict=True):
        row |= {"srifty_probed_s": probed, "srifty_probed_perfect_s": probed * 0.5, "allocation_level": 0.9,
                "allocation_saturated_gbps": 0.75}  # fmt: skip
    by_case = {"a": saved["measurements"]["rows"][:1], "b": saved["measurements"]["rows"][1:]}
    text = "\n".join(end_to_end._probed_lines(saved["predictions"], by_case, 5.0))
    assert "| a | x0.90 | 0.750 | 1000 | 550 | -45.0% | 1100 | +10.0% |" in text
    assert "measured interference 10.0% (largest 10.0%); APM, not probed, 5.0%." in text  # +10% and -10%
    assert "no case off by more than 12%): missed." in text
    for row in saved["predictions"]["rows"]:
        row["apm_probed_after_s"] = row["srifty_probed_s"] * 2
    saved["predictions"]["apm_probed_after"] = {"utc": "later"}
    text = "\n".join(end_to_end._probed_lines(saved["predictions"], by_case, 5.0))
    assert "| 1100 | +10.0% | 2200 | +120.0% |" in text
    assert "same ceiling): 100.0% (largest 120.0%), computed after the runs" in text
    assert "(`--probed-apm-after`, later): not a prediction made before them." in text
