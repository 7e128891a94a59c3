"""A diagnostic, not a prediction: how much of the testbed benchmarks' error is the allocation they drew.

The testbed draws each case's allocation (its hosts' link factors, :func:`srifty.network.testbed.draw_factors`)
from its seed; the embedded bandwidth model was fitted on 20 other allocations, whose slowest links ran at 0.57 to
0.93 of the family's shaped rate (0.83 on average for g4dn.8xlarge, 0.72 for g4dn.2xlarge), and it predicts
their average: it cannot know the draw before the job starts. Here each case is predicted again with every bus
bandwidth scaled by its draw's slowest link over its family's training average (gloo's allreduce ran at 0.84 to
0.89 of the slowest link in every training allocation, so the bandwidth is taken to scale with it), beside
srifty's prediction from the same saved profiles with this commit's simulator (the benchmark's own predictions
can differ: made with the simulator of their day, and a profile may have been measured again since). Prints;
writes nothing: ``python -m benchmarks.allocation_draw`` (seconds; reads the saved profiles and runs of
``benchmarks.end_to_end`` and ``benchmarks.multihost_resnet``).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import end_to_end as e2e
from benchmarks import multihost_resnet as mh
from benchmarks.common import ROOT
from srifty.network import load_default_model, load_default_probes
from srifty.network.testbed import draw_factors

RESULTS = ROOT / "benchmarks" / "results"


def training_slowest_fraction() -> dict[str, float]:
    """Per family: the mean over its training allocations of their slowest link over the family's shaped rate."""
    probes = load_default_probes()
    frame = probes[probes.collective == "allreduce"]
    fraction = frame.slowest_link_gbps / (frame.rated_network_gbps / frame.emulation_scale)
    per_allocation = fraction.groupby([frame.instance_type, frame.allocation_id]).median()
    return {str(k): float(v) for k, v in per_allocation.groupby(level=0).mean().items()}


def drawn_slowest(n_hosts: int, seed: int) -> float:
    """The slowest link of the allocation the benchmarks draw with ``seed``, over the family's shaped rate."""
    allocation, hosts = draw_factors(n_hosts, np.random.default_rng(seed))
    return allocation * min(hosts)


def score(cases: list[Any], raw: Path, profiles: Path, measured_key: str, first_seed: int) -> list[tuple[Any, ...]]:
    """``(case, measured s, srifty s, srifty given the draw s, slowest drawn)`` for each case of a saved run."""
    saved = json.loads(raw.read_text(encoding="utf-8"))
    runs: dict[str, list[float]] = {}
    for row in saved["measurements"]["rows"]:
        runs.setdefault(row["case"], []).append(row[measured_key])
    trained, model = training_slowest_fraction(), load_default_model()
    _, alpha_beta = e2e.scaled_models()
    out = []
    for index, case in enumerate(cases):
        slowest = drawn_slowest(len(case.hosts), first_seed + index)
        saved_profiles = e2e.saved_profiles(case, profiles)
        plain = e2e.predict(case, saved_profiles, e2e.ScaledBandwidth(model, e2e.SCALE), alpha_beta)
        scale = e2e.SCALE * trained[case.family] / slowest
        given = e2e.predict(case, saved_profiles, e2e.ScaledBandwidth(model, scale), alpha_beta)
        measured = statistics.fmean(runs[case.name])
        out.append((case.name, measured, plain["srifty_s"], given["srifty_s"], slowest))
    return out


def main() -> None:
    benches = (
        ("single machine (benchmarks.end_to_end)", e2e.CASES, RESULTS / "end_to_end.json",
         RESULTS / "end_to_end_profiles", "measured_s", 7),
        ("multi-host (benchmarks.multihost_resnet)", mh.CASES, RESULTS / "multihost_resnet.json", mh.PROFILES,
         "measured_mean_s", mh.SEED),
    )  # fmt: skip
    for title, cases, raw, profiles, key, seed in benches:
        rows = score(cases, raw, profiles, key, seed)
        print(f"{title}: srifty's error as predicted / given the allocation drawn")
        for name, measured, plain, given, slowest in rows:
            print(f"  {name:36s} slowest link {slowest:.2f}  {plain / measured - 1:+.1%} / {given / measured - 1:+.1%}")
        mapes = [statistics.fmean(abs(r[k] / r[1] - 1) * 100 for r in rows) for k in (2, 3)]
        print(f"  MAPE {mapes[0]:.1f}% / {mapes[1]:.1f}%")


if __name__ == "__main__":
    main()
