"""The multi-host benchmarks' bookkeeping, on made-up runs: what rank 0 printed, iterations lost after a
controller kill (the workers' own record, not the killed controller's), and the prediction table's MAPE."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from benchmarks import end_to_end as e2e
from benchmarks import multihost as mh
from benchmarks import multihost_resnet as mr

from srifty.compute import load_profile


def _run(tmp_path: Path, killed_unix: float) -> dict:  # type: ignore[type-arg]
    """A run killed at ``killed_unix`` after the checkpoint at 20: the controller had recorded up to 20, the
    workers printed up to 23 before the kill, then the resumed launch redid 21-40."""
    hosts = tmp_path / "hosts"
    hosts.mkdir()
    first = "".join(f"iteration={i} rank=0 time={1000 + i}.5 loss=0.5\n" for i in range(1, 24))
    again = "".join(f"iteration={i} rank=0 time={2000 + i}.5 loss=0.4 forward_s=0.1\n" for i in range(21, 41))
    (hosts / "10.0.0.1.log").write_text("--- launch a node 0\n" + first + "--- launch b node 0\n" + again)
    (hosts / "10.0.0.2.log").write_text("iteration=3 rank=1 time=1003.5 loss=0.5\n")  # not rank 0: ignored
    timeline = [{"time_s": 0.0, "iteration": 0, "event": "launch", "config": "4xa@8"}]
    # the killed controller's timeline ends before iteration 20 (saved at the checkpoint notice), which the workers did
    timeline += [{"time_s": float(i), "iteration": i, "event": "iteration", "loss": 1.0 / i} for i in range(1, 20)]
    timeline += [{"time_s": 990.0, "iteration": 20, "event": "launch", "config": "4xa@8"}]
    timeline += [{"time_s": 1000.0 + i, "iteration": i, "event": "iteration", "loss": 1.0 / i} for i in range(21, 41)]
    return {
        "timeline": timeline,
        "decisions": [{"action": "start"}, {"action": "resume", "iteration": 20}, {"action": "finish"}],
        "run_started_unix": 0.0,
        "killed_unix": killed_unix,
        "worker_iterations": mh.worker_iterations(tmp_path),
    }


def test_worker_iterations_reads_rank_0_lines_of_every_host_log(tmp_path: Path) -> None:
    _run(tmp_path, 0.0)
    found = mh.worker_iterations(tmp_path)
    assert [n for n, _ in found] == [*range(1, 24), *range(21, 41)]
    assert found[0] == (1, 1001.5)


def test_iterations_lost_after_a_controller_kill_count_what_the_workers_reached(tmp_path: Path) -> None:
    run = _run(tmp_path, killed_unix=1023.9)  # after iteration 23's line, before the resumed launch's
    baseline = {i: 1.0 / i for i in range(1, 41)}
    measured = mh.measure(run, baseline, iterations_total=40)
    assert measured["iterations_lost"] == 3  # 23 reached, resumed from 20: not 0 as the controller's record says
    assert measured["kill_lost_counted_from"] == "workers"
    assert measured["final_iteration"] == 40 and measured["all_iterations_done"]  # 20 from the workers' lines
    assert measured["max_loss_diff"] == 0.0 and measured["max_loss_diff_first5"] == 0.0


def test_without_worker_lines_the_kill_is_counted_from_the_controllers_record(tmp_path: Path) -> None:
    run = {**_run(tmp_path, killed_unix=1023.9), "worker_iterations": []}
    measured = mh.measure(run, {}, iterations_total=40)
    assert measured["kill_lost_counted_from"] == "controller"
    assert not measured["all_iterations_done"]  # without the workers' lines nothing says 20 was done


def test_a_slow_host_is_detected_by_the_first_thing_srifty_does_about_it() -> None:
    timeline = [{"time_s": 0.0, "iteration": 0, "event": "launch", "config": "4xa@8"}]
    timeline += [{"time_s": float(i), "iteration": i, "event": "iteration", "loss": 1.0} for i in range(1, 31)]
    timeline.insert(26, {"time_s": 25.0, "iteration": 25, "event": "inject_slow", "host": "h2"})
    timeline += [{"time_s": 33.5, "iteration": 30, "event": "switch", "config": "1xa@32"}]
    timeline += [{"time_s": 34.0, "iteration": 30, "event": "launch", "config": "1xa@32"}]
    timeline += [{"time_s": 30.0 + i, "iteration": i, "event": "iteration", "loss": 1.0} for i in range(31, 41)]
    run = {"timeline": timeline, "decisions": [], "run_started_unix": 0.0, "killed_unix": None}
    measured = mh.measure(run, {}, iterations_total=40)
    assert measured["detection_s"] == 8.5 and measured["recovery_s"] == 36.0


def test_the_rerun_note_names_each_rows_latest_partial_run() -> None:
    """A scenario re-run later is credited to the later run only; a run none of whose rows remain is not named."""
    reruns = [
        {"scenarios": ["slow", "partition (ssh)"], "elapsed_s": 194.0, "machine": "A, commit a1"},
        {"scenarios": ["slow"], "elapsed_s": 139.4, "machine": "B, commit b2", "before": "slow was 7.2 s"},
        {"scenarios": ["vanish"], "elapsed_s": 50.0, "machine": "C, commit c3"},
        {"scenarios": ["vanish"], "elapsed_s": 60.0, "machine": "D, commit d4"},
    ]
    assert mh.rerun_note(reruns) == (
        "partly rerun: partition (ssh) with `--only` (194 s, A, commit a1); slow with `--only` (139 s, B, commit b2; "
        "before it, slow was 7.2 s); vanish with `--only` (60 s, D, commit d4); the other rows from the run below"
    )
    assert mh.rerun_note([]) == ""


def test_prediction_table_reports_mape_against_the_goal() -> None:
    pred = {
        "written_utc": "2026-11-30T18:00:00+00:00",
        "rows": [
            {"case": "a", "config": "2xq@16", "host_config": "2xg@16", "srifty_s": 1.05, "apm_s": 0.8},
            {"case": "b", "config": "4xq@8", "host_config": "4xg@8", "srifty_s": 0.97, "apm_s": 1.3},
        ],
    }
    row = {"measured_std_s": 0.1, "measured_median_s": 1.0, "forward_median_s_by_rank": {"0": 0.1, "1": 0.12}}
    meas = {
        "rows": [{"case": "a", "measured_mean_s": 1.0, **row}, {"case": "b", "measured_mean_s": 1.0, **row}],
        "machine": "m",
        "elapsed_s": 10.0,
    }
    text = "\n".join(mr._prediction_table(pred, meas))
    assert "**srifty 4.0%** (largest 5.0%), APM 25.0%" in text and "meets the issue's goal of ≤ 6%" in text
    assert "+5.0%" in text and "-3.0%" in text and "100 / 120" in text
    worse = {**pred, "rows": [{**pred["rows"][0], "srifty_s": 1.2}, pred["rows"][1]]}
    assert "misses" in "\n".join(mr._prediction_table(worse, meas))


def test_prediction_table_averages_repetitions_and_shows_the_perfect_overlap_model_beside() -> None:
    rows = [{"case": "a", "config": "2xq@16", "host_config": "2xg@16", "srifty_s": 1.0, "srifty_perfect_s": 0.8,
             "apm_s": 1.3}]  # fmt: skip
    run = {"measured_std_s": 0.1, "forward_median_s_by_rank": {"0": 0.1}, "other_processes_cores": 0.05}
    meas = {
        "rows": [
            {"case": "a", "repeat": 0, "measured_mean_s": 0.9, "measured_median_s": 0.9, **run},
            {"case": "a", "repeat": 1, "measured_mean_s": 1.1, "measured_median_s": 1.1, **run},
        ],
        "machine": "m",
        "elapsed_s": 10.0,
    }
    text = "\n".join(mr._prediction_table({"written_utc": "t", "rows": rows}, meas))
    assert "1000 (900 / 1100)" in text and "0.05 / 0.05" in text and "Repetitions: 2" in text
    assert "srifty, perfect overlap 20.0%" in text and "**srifty, measured interference 0.0%**" in text
    # over 12% on one configuration misses the goal whatever the mean
    off = [{**rows[0], "srifty_s": 1.13}]
    assert "misses" in "\n".join(mr._prediction_table({"written_utc": "t", "rows": off}, meas))


def test_prediction_table_judges_the_probed_predictions_against_apm_with_the_same_probe() -> None:
    base = {"case": "a", "config": "2xq@16", "host_config": "2xg@16", "srifty_s": 1.3, "apm_s": 1.2}
    probed = {"srifty_probed_perfect_s": 0.9, "srifty_probed_s": 1.04, "apm_probed_s": 1.1}
    run = {"measured_std_s": 0.1, "measured_median_s": 1.0, "forward_median_s_by_rank": {"0": 0.1}}
    meas = {"rows": [{"case": "a", "measured_mean_s": 1.0, **run}], "machine": "m", "elapsed_s": 1.0}
    text = "\n".join(mr._prediction_table({"written_utc": "t", "rows": [{**base, **probed}]}, meas))
    assert "srifty, allocation probed, measured interference 4.0%" in text and "APM, allocation probed 10.0%" in text
    assert "misses the issue's goal" in text  # the one-shot srifty is 30% off
    assert "Once each allocation is probed: srifty with its measured interference meets the goal" in text
    closer = {**probed, "apm_probed_s": 1.02}  # APM with the same probe closer still: not met
    text = "\n".join(mr._prediction_table({"written_utc": "t", "rows": [{**base, **closer}]}, meas))
    assert "probed: srifty with its measured interference misses the goal" in text


def _curve(ms_per_sample: float) -> Any:
    """A stand-in profile whose forward pass takes ``ms_per_sample`` per sample."""
    from srifty.compute.latency import LatencyModel

    fw = LatencyModel(
        (1.0, 64.0), (ms_per_sample, 64 * ms_per_sample), None, (1, 64), (ms_per_sample, 64 * ms_per_sample)
    )
    return SimpleNamespace(latency={"fw": fw})


def test_run_compute_ratios_compare_each_types_ranks_with_its_profile_at_their_batch() -> None:
    case = mr.CASES[1]  # resnet18, one fast host at batch 16 then two slow ones at batch 8
    fast, slow = (e2e.emulated_type(case, case.hosts[i]).name for i in (0, 2))
    profiles = {fast: _curve(10.0), slow: _curve(20.0)}  # 160 ms at 16, 160 ms at 8
    runs = [{"forward_median_s_by_rank": {"0": 0.08, "1": 0.12, "2": 0.16}},
            {"forward_median_s_by_rank": {"0": 0.16, "1": 0.08, "2": 0.16}}]  # fmt: skip
    ratios = mr.run_compute_ratios(case, runs, profiles)
    assert ratios[fast] == pytest.approx(0.75)  # median of 0.5 and 1.0
    assert ratios[slow] == pytest.approx(0.875)  # median of 0.75, 1.0, 0.5, 1.0
    with pytest.raises(ValueError, match="no forward pass of rank 2"):
        mr.run_compute_ratios(case, [{"forward_median_s_by_rank": {"0": 0.1, "1": 0.1}}], profiles)


def test_at_pace_scales_every_compute_time_and_nothing_else() -> None:
    profile = load_profile(mr.PROFILES / "train_resnet-model_q0.6.json")
    paced = mr.at_pace(profile, 0.5)
    for phase, curve in profile.latency.items():
        assert paced.latency[phase].predict_ms([16])[0] == pytest.approx(0.5 * curve.predict_ms([16])[0])
    assert paced.samples[0].fw_ms[0] == pytest.approx(0.5 * profile.samples[0].fw_ms[0])
    assert paced.samples[-1].iter_ms[-1] == pytest.approx(0.5 * profile.samples[-1].iter_ms[-1])
    assert paced.interference == profile.interference and paced.memory == profile.memory


def test_decomposition_is_shown_for_the_run_it_read_only() -> None:
    pred = {"written_utc": "t1", "rows": [{"case": "a", "srifty_probed_perfect_s": 1.2, "srifty_probed_s": 1.3,
                                           "apm_probed_s": 1.1}]}  # fmt: skip
    meas = {"rows": [{"case": "a", "measured_mean_s": 1.0}, {"case": "a", "measured_mean_s": 1.0}]}
    done = {"utc": "t2", "machine": "m", "predictions_written_utc": "t1",
            "rows": [{"case": "a", "compute_ratio_by_type": {"x": 0.8}, "srifty_probed_perfect_s": 0.96,
                      "srifty_probed_s": 1.04, "apm_probed_s": 0.9}]}  # fmt: skip
    text = "\n".join(mr._decomposed_lines({"predictions": pred, "measurements": meas, "decomposed": done}))
    assert "not a prediction" in text and "x x0.80" in text
    assert "srifty, probed, measured interference 30.0% -> 4.0% (largest 4.0%)" in text
    assert "APM, probed 10.0% -> 10.0%" in text
    later = {**pred, "written_utc": "t3"}  # a newer run's predictions: the decomposition is of another run
    assert mr._decomposed_lines({"predictions": later, "measurements": meas, "decomposed": done}) == []


def test_probed_predictions_made_again_after_the_runs_are_labelled_so() -> None:
    base = {"case": "a", "config": "2xq@16", "host_config": "2xg@16", "srifty_s": 1.3, "apm_s": 1.2,
            "srifty_probed_s": 1.2, "apm_probed_s": 1.1}  # fmt: skip
    again = {"srifty_probed_perfect_after_s": 0.9, "srifty_probed_after_s": 1.05, "apm_probed_after_s": 0.95}
    run = {"measured_std_s": 0.1, "measured_median_s": 1.0, "forward_median_s_by_rank": {"0": 0.1}}
    meas = {"rows": [{"case": "a", "measured_mean_s": 1.0, **run}], "machine": "m", "elapsed_s": 1.0}
    after = {"utc": "t2", "machine": "m2", "files_at": "abc1234", "run": 8}
    pred = {"written_utc": "t", "rows": [{**base, **again}], "probed_after": after}
    text = "\n".join(mr._prediction_table(pred, meas))
    assert "srifty, probed by size, measured interference, after the runs 5.0%" in text
    assert "APM, probed by size, after the runs 5.0%" in text
    assert "--part repredict-probed --run 8 --files-at abc1234" in text and "not predictions made before" in text
    # the run's own probed predictions stay what they were, and judge the goal
    assert "srifty, allocation probed, measured interference 20.0%" in text
    assert "probed: srifty with its measured interference misses the goal" in text
