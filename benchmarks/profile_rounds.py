"""Does timing the probed batches in rounds (``srifty profile --rounds``) make CPU profiles repeat?

The testbed benchmarks' profiles moved by a median 4.2 % (largest 30 %) between two runs on the same machine
while the runs they predict moved 1.1 % ("Testbed benchmarks: what repeats between runs"). A profile times each
batch in one stretch of seconds; a slow spell of this shared VM then moves one batch's point. This benchmark
profiles the same model under the same CPU quota several times, alternating two ways with the same number of
timed iterations per batch: one round of 6, and 3 rounds of 2 (each round a pass over every probed batch). It
reports how far each way's fitted iteration latency moves between its profiles, at fixed batches.

Run (as root, cgroup v1 CPU quota as in ``benchmarks.end_to_end``):
``flock /tmp/srifty-cpu.lock python -m benchmarks.profile_rounds [--pairs 4] [--quota 0.45]``.
Writes BENCHMARKS.md ("CPU profiles timed in rounds: do they repeat?") and
``benchmarks/results/profile_rounds.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, machine_description, markdown_table, write_section
from benchmarks.end_to_end import joining, make_cgroup, remove_cgroups
from srifty.artifacts import atomic_write_text
from srifty.compute import load_profile

RESULTS = ROOT / "benchmarks" / "results" / "profile_rounds.json"
MODEL, IMAGE_SIZE, MAX_BATCH = "resnet18", 64, 16
#: (label, rounds, timed iterations per round): the same 6 timed iterations per batch either way.
WAYS = (("1 round of 6", 1, 6), ("3 rounds of 2", 3, 2))
AT_BATCHES = (1, 4, 8, 16)
SECTION = "CPU profiles timed in rounds: do they repeat?"
HEAD = (
    "way",
    "profiles",
    "moved, median",
    "moved, largest",
    "seconds per profile (median)",
    "fitted iteration (ms) at each batch, profile by profile",
)


def profile_once(rounds: int, iters: int, cgroup: Path, out: Path) -> tuple[dict[int, float], float]:
    """One ``srifty profile`` in ``cgroup``: its fitted iteration latency (ms) at :data:`AT_BATCHES`, and the
    seconds it took."""
    args = [sys.executable, "-m", "srifty.cli.main", "profile", "--model", MODEL, "--image-size", str(IMAGE_SIZE),
            "--threads", "1", "--max-batch", str(MAX_BATCH), "--warmup", "2", "--iters", str(iters),
            "--rounds", str(rounds), "--no-interference", "--no-op-counts", "--out", str(out)]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, preexec_fn=joining(cgroup))
    seconds = time.perf_counter() - started
    latency = load_profile(out).latency["iter"]
    return {b: float(latency.predict_ms(b)) for b in AT_BATCHES}, seconds


def moves(profiles: list[dict[int, float]]) -> list[float]:
    """|relative change| of the fitted latency at each batch between every two profiles of one way (%)."""
    return [
        abs(b_ms[batch] / a_ms[batch] - 1) * 100
        for a_ms, b_ms in itertools.combinations(profiles, 2)
        for batch in AT_BATCHES
    ]


def profiles_of(runs: list[dict], label: str) -> list[dict[int, float]]:
    """The fitted latencies (ms by batch) of the profiles of way ``label``, in the order taken."""
    return [{int(b): v for b, v in r["iter_ms"].items()} for r in runs if r["way"] == label]


def summary(runs: list[dict]) -> dict[str, tuple[float, float]]:
    """Each way's median and largest move (%) over ``runs``."""
    found = {}
    for label, _, _ in WAYS:
        changes = moves(profiles_of(runs, label))
        found[label] = (statistics.median(changes), max(changes))
    return found


def drift_pct(runs: list[dict]) -> float:
    """How much slower the first half of the profiles (both ways, in the order taken) ran than the second: the
    median over batches of their mean fitted latencies' ratio, minus 1 (%). Drift over minutes, which no
    timing within one profile can spread."""
    half = len(runs) // 2
    ratios = [
        statistics.mean(r["iter_ms"][str(b)] for r in runs[:half])
        / statistics.mean(r["iter_ms"][str(b)] for r in runs[half:])
        for b in AT_BATCHES
    ]
    return (statistics.median(ratios) - 1) * 100


def render(saved: dict) -> str:
    """The BENCHMARKS.md section from the saved results."""
    rows = []
    moved = summary(saved["runs"])
    for label, _, _ in WAYS:
        profiles = profiles_of(saved["runs"], label)
        seconds = [r["seconds"] for r in saved["runs"] if r["way"] == label]
        by_batch = "; ".join(f"{b}: " + ", ".join(f"{p[b]:.0f}" for p in profiles) for b in AT_BATCHES)
        median, largest = moved[label]
        rows.append(
            [
                label,
                str(len(profiles)),
                f"{median:.1f}%",
                f"{largest:.1f}%",
                f"{statistics.median(seconds):.0f}",
                by_batch,
            ]
        )
    return "\n".join(
        [
            f"`srifty profile --model {MODEL} --image-size {IMAGE_SIZE} --threads 1 --max-batch {MAX_BATCH} "
            f"--warmup 2` under a {saved['quota']:g}-core CPU quota (cgroup v1, as the end-to-end benchmark "
            "profiles its emulated types), no interference or op counts. The two ways alternate, one profile "
            "each in turn, with 6 timed iterations per batch either way (`--rounds 1 --iters 6` against "
            "`--rounds 3 --iters 2`; rounds pass over every probed batch). Moved: the |relative change| of "
            f"the fitted iteration latency at batches {', '.join(map(str, AT_BATCHES))} between every two "
            "profiles of one way.",
            "",
            *markdown_table(HEAD, rows),
            "",
            "Drift: the fitted latencies of the first half of the profiles (both ways, in the order taken) were "
            f"{drift_pct(saved['runs']):+.1f}% against the second half's (median over the batches), a change over "
            "minutes that no timing inside one profile can spread; rounds can only even out spells shorter than a "
            "profile.",
            *[
                f"Earlier run ({e['pairs']} pairs, {e['elapsed_s']:.0f} s, {e['machine']}): "
                + "; ".join(f"{w}: moved median {m:.1f}%, largest {x:.1f}%" for w, (m, x) in summary(e["runs"]).items())
                + f"; drift {drift_pct(e['runs']):+.1f}%."
                for e in saved.get("earlier", [])
            ],
            "",
            f"Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.profile_rounds --pairs {saved['pairs']} "
            f"--quota {saved['quota']:g}` ({saved['elapsed_s']:.0f} s). Machine: {saved['machine']}.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=4, help="profiles of each way")
    parser.add_argument("--quota", type=float, default=0.45, help="CPU cores of the quota")
    parser.add_argument("--from-results", action="store_true", help="only rewrite the section from the results")
    args = parser.parse_args()
    if args.from_results:
        write_section(SECTION, render(json.loads(RESULTS.read_text())))
        return
    started = time.perf_counter()
    runs = []
    try:
        cgroup = make_cgroup("rounds", args.quota)
        with tempfile.TemporaryDirectory() as folder:
            for pair in range(args.pairs):
                for label, rounds, iters in WAYS if pair % 2 == 0 else WAYS[::-1]:
                    iter_ms, seconds = profile_once(rounds, iters, cgroup, Path(folder) / "p.json")
                    runs.append({"way": label, "pair": pair, "iter_ms": iter_ms, "seconds": seconds})
                    print(json.dumps(runs[-1]), flush=True)
    finally:
        remove_cgroups()
    earlier = json.loads(RESULTS.read_text()) if RESULTS.exists() else None
    saved = {
        "earlier": ([*earlier.pop("earlier", []), earlier] if earlier else []),
        "pairs": args.pairs,
        "quota": args.quota,
        "elapsed_s": time.perf_counter() - started,
        "machine": machine_description(),
        "runs": runs,
    }
    atomic_write_text(RESULTS, json.dumps(saved, indent=1) + "\n")
    body = render(saved)
    write_section(SECTION, body)
    print(body)


if __name__ == "__main__":
    main()
