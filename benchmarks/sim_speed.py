"""Simulator speed: invocations per second on a resnet50-sized profile with 100 sampled iterations.

The planner's exhaustive mode calls the simulator up to 10,000 times per plan. This measures, on one core
(``OMP_NUM_THREADS=1``, torch not imported), the time of 10,000 calls over a planner-like sweep of
configurations (g4dn.8xlarge × 1..64 VMs × local batches 16..256), first with cold caches (every world
size and batch new: one event-driven allreduce and bandwidth-model query per new configuration), then warm.

Run: ``OMP_NUM_THREADS=1 python -m benchmarks.sim_speed``. Writes BENCHMARKS.md ("Simulator speed") and the
raw figures to ``--save``; ``--before FILE`` (an earlier run's ``--save``) puts those figures beside these.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from benchmarks.common import machine_description, write_section
from srifty.catalog import load_catalog
from srifty.compute import bundled_profiles_for
from srifty.network import load_default_model
from srifty.sim import SimOptions, Simulator
from srifty.vocab import make_config


def _before_arg(before: Path | None) -> str:
    return "" if before is None else f" --before {before}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--save", type=Path, default=Path("benchmarks/results/sim_speed.json"))
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--label", default="", help="what this run measures (kept in --save)")
    parser.add_argument("--no-write", action="store_true", help="do not touch BENCHMARKS.md")
    args = parser.parse_args()
    profile = next(p for p in bundled_profiles_for("resnet50") if p.device.kind == "cpu")
    instance = load_catalog().get("g4dn.8xlarge", region="us-east-1")
    net = load_default_model()
    configs = [make_config([(instance, n, b)]) for n in range(1, 65) for b in (16, 32, 64, 128, 256)]
    rows = []
    for _ in range(args.repeats):
        sim = Simulator({"T4": profile}, net, SimOptions(iters=100))
        rng = np.random.default_rng(0)
        started = time.perf_counter()
        for config in configs:
            sim.simulate(config, rng)
        cold = (time.perf_counter() - started) / len(configs)
        started = time.perf_counter()
        for i in range(args.calls):
            sim.simulate(configs[i % len(configs)], rng)
        warm_total = time.perf_counter() - started
        rows.append((cold, warm_total))
    cold_med = statistics.median(r[0] for r in rows)
    warm_med = statistics.median(r[1] for r in rows)
    now = {"cold_s_per_call": cold_med, "warm_s_total": warm_med, "calls": args.calls, "label": args.label}
    args.save.write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    n_params = len(profile.params)
    header = "| cache | per call | calls/s | 10,000 calls |"
    rule = "|---|---|---|---|"
    if before is not None:
        header = "| cache | before: per call | before: 10,000 calls | per call | calls/s | 10,000 calls |"
        rule = "|---|---|---|---|---|---|"

    def row(name: str, per_call_s: float, total_10k_s: float, old: tuple[float, float] | None) -> str:
        cells = [name]
        if old is not None:
            cells += [_per_call(old[0]), f"{old[1]:.2f} s"]
        cells += [_per_call(per_call_s), f"{1 / per_call_s:,.0f}", f"{total_10k_s:.2f} s"]
        return "| " + " | ".join(cells) + " |"

    old_cold = (before["cold_s_per_call"], before["cold_s_per_call"] * 1e4) if before else None
    old_warm = (
        (before["warm_s_total"] / before["calls"], before["warm_s_total"] * 1e4 / before["calls"]) if before else None
    )
    body = "\n".join(
        [
            f"Profile: bundled resnet50 CPU profile ({n_params} parameter tensors, {len(profile.buckets)} DDP",
            "buckets); bandwidth model: the embedded default; 100 sampled iterations per call; configurations",
            f"g4dn.8xlarge × 1..64 VMs × local batch 16..256 ({len(configs)} distinct). "
            f"Median of {args.repeats} repeats."
            + (f" *Before*: {before['label']}." if before and before.get("label") else ""),
            "",
            header,
            rule,
            row("cold (first visit of each configuration)", cold_med, cold_med * 1e4, old_cold),
            row(
                "warm (planner revisiting world sizes and batches)",
                warm_med / args.calls,
                warm_med * 1e4 / args.calls,
                old_warm,
            ),
            "",
            "Target (issue #5): 10,000 calls in under 2 s on one core. Cold calls are dominated by the bandwidth",
            "model query and the event-driven allreduce, both cached by world size and slowest type. Since issue",
            "#14 the query asks the booster at knot sizes and interpolates, adds residual curves, and asks a",
            "second time for the spread (its interval quantiles); most of that time is pandas feature encoding.",
            "",
            f"Command: `OMP_NUM_THREADS=1 python -m benchmarks.sim_speed{_before_arg(args.before)}`. "
            f"Machine: {machine_description()}.",
        ]
    )
    if not args.no_write:
        write_section("Simulator speed", body)
    print(body)


def _per_call(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.0f} µs"


if __name__ == "__main__":
    main()
