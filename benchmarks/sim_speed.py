"""Simulator speed: invocations per second on a resnet50-sized profile with 100 sampled iterations.

The planner's exhaustive mode calls the simulator up to 10,000 times per plan. This measures, on one core
(``OMP_NUM_THREADS=1``, torch not imported), the time of 10,000 calls over a planner-like sweep of
configurations (g4dn.8xlarge × 1..64 VMs × local batches 16..256), first with cold caches (every world
size and batch new: one event-driven allreduce and bandwidth-model query per new configuration), then warm.

Run: ``OMP_NUM_THREADS=1 python -m benchmarks.sim_speed``. Writes BENCHMARKS.md ("Simulator speed").
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks.common import machine_description, write_section
from srifty.catalog import load_catalog
from srifty.compute.bundled import bundled_profiles_for
from srifty.network import load_default_model
from srifty.sim import SimOptions, Simulator
from srifty.vocab import make_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
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
    n_params = len(profile.params)
    body = "\n".join(
        [
            f"Profile: bundled resnet50 CPU profile ({n_params} parameter tensors, {len(profile.buckets)} DDP",
            "buckets); bandwidth model: the embedded default; 100 sampled iterations per call; configurations",
            f"g4dn.8xlarge × 1..64 VMs × local batch 16..256 ({len(configs)} distinct). "
            f"Median of {args.repeats} repeats.",
            "",
            "| cache | per call | calls/s | 10,000 calls |",
            "|---|---|---|---|",
            f"| cold (first visit of each configuration) | {cold_med * 1e3:.2f} ms | {1 / cold_med:,.0f} | "
            f"{cold_med * 1e4:.1f} s |",
            f"| warm (planner revisiting world sizes and batches) | {warm_med / args.calls * 1e6:.0f} µs | "
            f"{args.calls / warm_med:,.0f} | {warm_med * 1e4 / args.calls:.2f} s |",
            "",
            "Target (issue #5): 10,000 calls in under 2 s on one core. Cold calls are dominated by the bandwidth",
            "model query (XGBoost) and the event-driven allreduce, both cached by world size and slowest type.",
            "",
            f"Command: `OMP_NUM_THREADS=1 python -m benchmarks.sim_speed`. Machine: {machine_description()}.",
        ]
    )
    write_section("Simulator speed", body)
    print(body)


if __name__ == "__main__":
    main()
