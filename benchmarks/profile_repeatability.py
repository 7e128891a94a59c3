"""How well the testbed benchmarks repeat: the last run of each against an earlier one on the same machine.

Nothing is measured here. Both testbed benchmarks (:mod:`benchmarks.end_to_end`, :mod:`benchmarks.multihost_resnet`)
measure their profiles, interference factors and allocation probes again at every run, predict, then run. Set side
by side with an earlier run, they show which of their parts repeat: the measured iteration times, the predictions
made from the re-measured profiles, and the profiles' own latency at their probed batches.

The earlier run is the one the raw files keep under ``earlier`` whose machine line names ``--run-commit``; its
profiles are read from git at ``--profiles-at`` (the commit that stored that run's results).

Usage: ``python -m benchmarks.profile_repeatability --run-commit c6da2c6 --profiles-at 3f15e6e``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import profile_rounds
from benchmarks.common import ROOT, commit_of, machine_description, markdown_table, write_section
from srifty.compute import load_profile

SECTION = "Testbed benchmarks: what repeats between runs"
#: Each benchmark: its raw file, its profiles' folder and the prediction keys compared.
BENCHMARKS = {
    "end_to_end": ("end_to_end.json", "end_to_end_profiles"),
    "multihost_resnet": ("multihost_resnet.json", "multihost_resnet_profiles"),
}
PREDICTIONS = (("srifty_probed_s", "srifty, probed, measured interference"), ("apm_probed_s", "APM, probed"))
RESULTS = ROOT / "benchmarks" / "results"


def _means(measurements: dict[str, Any]) -> dict[str, float]:
    """Each case's measured mean iteration time (s) over the run's repetitions."""
    by_case: dict[str, list[float]] = {}
    for row in measurements["rows"]:
        by_case.setdefault(row["case"], []).append(row.get("measured_s", row.get("measured_mean_s")))
    return {case: statistics.fmean(values) for case, values in by_case.items()}


def _change(now: float, before: float) -> float:
    return (now / before - 1.0) * 100.0


def run_rows(name: str, raw: dict[str, Any], run_commit: str) -> tuple[list[list[str]], dict[str, list[float]]]:
    """Per case: measured and predicted, now against the earlier run; and every |change| (%) by quantity."""
    earlier = [r for r in raw.get("earlier", []) if commit_of(r["measurements"]["machine"]).startswith(run_commit)]
    if not earlier:
        raise SystemExit(f"{name}: no earlier run at commit {run_commit} in its raw file; pass one its runs name")
    before = earlier[-1]
    measured_now, measured_before = _means(raw["measurements"]), _means(before["measurements"])
    predicted_before = {r["case"]: r for r in before["predictions"]["rows"]}
    changes: dict[str, list[float]] = {"measured": [], **{key: [] for key, _ in PREDICTIONS}}
    rows = []
    for row in raw["predictions"]["rows"]:
        case = row["case"]
        if case not in measured_before or case not in predicted_before:
            continue
        cells = [name, case]
        pairs = [("measured", measured_now[case], measured_before[case])]
        pairs += [(key, row[key], predicted_before[case][key]) for key, _ in PREDICTIONS]
        for key, now, was in pairs:
            changes[key].append(abs(_change(now, was)))
            cells.append(f"{was * 1e3:.0f} → {now * 1e3:.0f} ({_change(now, was):+.1f}%)")
        rows.append(cells)
    return rows, changes


def _git_file(revision: str, path: Path, into: Path) -> Path | None:
    shown = subprocess.run(
        ["git", "show", f"{revision}:{path.relative_to(ROOT).as_posix()}"], cwd=ROOT, capture_output=True, check=False
    )
    if shown.returncode != 0:
        return None
    out = into / path.name
    out.write_bytes(shown.stdout)
    return out


def profile_rows(name: str, folder: Path, revision: str) -> tuple[list[list[str]], list[float]]:
    """Per profile: the fitted iteration latency at each probed batch, at ``revision`` against now.

    Raises:
        SystemExit: git knows no commit ``revision`` (a one-line message naming what to pass).
    """
    known = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], cwd=ROOT, capture_output=True
    )
    if known.returncode != 0:
        raise SystemExit(f"--profiles-at {revision}: git knows no such commit; name the one that stored the run")
    rows, changes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(folder.glob("*.json")):
            old_path = _git_file(revision, path, Path(tmp))
            if old_path is None:
                continue
            now, was = load_profile(path), load_profile(old_path)
            cells = []
            for batch in sorted({s.batch for s in now.samples} | {s.batch for s in was.samples}):
                a, b = float(was.predict_ms("iter", batch)), float(now.predict_ms("iter", batch))
                changes.append(abs(_change(b, a)))
                cells.append(f"{batch}: {a:.0f} → {b:.0f} ({_change(b, a):+.0f}%)")
            rows.append([name, path.stem, "; ".join(cells)])
    return rows, changes


def _summary(label: str, values: list[float]) -> str:
    if not values:
        return f"{label}: none to compare"
    return f"{label} median {statistics.median(values):.1f}%, largest {max(values):.1f}%"


def render(run_commit: str, profiles_at: str) -> str:
    run_table, prof_table = [], []
    changes: dict[str, list[float]] = {"measured": [], **{key: [] for key, _ in PREDICTIONS}}
    profile_changes: list[float] = []
    now_commits = set()
    for name, (raw_file, folder) in BENCHMARKS.items():
        raw = json.loads((RESULTS / raw_file).read_text())
        now_commits.add(commit_of(raw["measurements"]["machine"]))
        rows, by_key = run_rows(name, raw, run_commit)
        run_table += rows
        for key, values in by_key.items():
            changes[key] += values
        rows_p, values_p = profile_rows(name, RESULTS / folder, profiles_at)
        prof_table += rows_p
        profile_changes += values_p
    summary = "; ".join(
        [_summary("measured iteration time", changes["measured"])]
        + [_summary(label, changes[key]) for key, label in PREDICTIONS]
        + [_summary("profiles' fitted iteration at their probed batches", profile_changes)]
    )
    return "\n".join(
        [
            f"Each testbed benchmark's last run (commit {', '.join(sorted(now_commits))}) against its run at commit "
            f"{run_commit} on the same machine; both measured their profiles, interference factors and allocation "
            "probes afresh, predicted before their runs, then ran every case 3 times. Nothing is measured here.",
            "",
            f"|change| between the runs: {summary}.",
            "",
            "**The runs and their predictions** (ms, earlier → last):",
            "",
            *markdown_table(["benchmark", "case", "measured", *(label for _, label in PREDICTIONS)], run_table),
            "",
            "**The profiles** (fitted iteration latency in ms at each probed batch, earlier → last; each measured by "
            "`srifty profile --iters 6 --warmup 2` under the type's CPU quota, a batch's iterations in one stretch):",
            "",
            *markdown_table(["benchmark", "profile", "batch: earlier → last"], prof_table),
            "",
            rounds_line(),
            "",
            f"Command: `python -m benchmarks.profile_repeatability --run-commit {run_commit} --profiles-at "
            f"{profiles_at}` (seconds). Machine: {machine_description()}.",
        ]
    )


def rounds_line() -> str:
    """Why the profiles move more than the runs, with what ``benchmarks.profile_rounds`` measured of it."""
    line = (
        "Where the profiles move more than the runs: a run's case is timed in three repetitions spread over the "
        "benchmark's span, a profile's batch in one stretch of seconds."
    )
    if not profile_rounds.RESULTS.exists():
        return line
    runs = json.loads(profile_rounds.RESULTS.read_text())["runs"]
    (one, (one_median, _)), (more, (more_median, _)) = profile_rounds.summary(runs).items()
    return line + (
        f' Timing each batch in rounds spread over the profile does not remove it: "{profile_rounds.SECTION}" '
        f"found one model's profiles moving by a median {one_median:.1f}% ({one}) and {more_median:.1f}% ({more}), "
        f"its first half {profile_rounds.drift_pct(runs):+.1f}% against its second (the machine's speed drifting "
        "over minutes): a profile measures the machine in the minutes it runs."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-commit", required=True, help="the commit the earlier run's machine line names")
    parser.add_argument("--profiles-at", required=True, help="the git revision that stored the earlier run's files")
    args = parser.parse_args()
    write_section(SECTION, render(args.run_commit, args.profiles_at))


if __name__ == "__main__":
    main()
