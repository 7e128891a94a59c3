"""A small evaluation on the emulated cloud, shared by the evaluation and report tests: one synthetic model,
two instance types, small quotas, untuned network fit. Not a benchmark: a fast, real run of the harness."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from srifty.cloud import EmulatedCloud
from srifty.evaluate import CaseSettings, CasesRun, run_cases
from srifty.vocab import make_config
from tests.factories import cloud_source_profile

SPEC = """\
description: "test: a synthetic model on two types, minimise cost within a deadline"
model: synthetic
global_batch: 256
iterations: 200
goal: min_cost
deadline_s: 400
region: us-east-1
candidates:
  - {instance_type: g4dn.8xlarge, market: spot, quota: 4}
  - {instance_type: p3.8xlarge, market: spot, quota: 2}
"""

METHODS = ("srifty", "apm", "paleo", "cgf", "fgf")


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """A spec file and a folder holding the synthetic source profile; returns ``(spec, profiles folder)``."""
    profiles = folder / "profiles"
    cloud_source_profile().save(profiles / "synthetic__cpu.json")
    spec = folder / "small-case.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    return spec, profiles


def settings(profiles: Path, seed: int = 0, methods: tuple[str, ...] = METHODS) -> CaseSettings:
    """Fast settings: 2 placements of 5 iterations, no tuning, probes up to 8 GPUs on 2 allocations."""
    return CaseSettings(
        seed=seed,
        n_allocations=2,
        iters=5,
        fit_trials=0,
        probe_allocations=2,
        max_probe_world=8,
        methods=methods,
        profile_dirs=(profiles,),
    )


def small_run(folder: Path, seed: int = 0) -> CasesRun:
    """Evaluate the small case."""
    spec, profiles = write_inputs(folder)
    return run_cases([spec], settings(profiles, seed))


def timeline_records(seed: int = 0) -> list[dict[str, object]]:
    """A runtime-like timeline from the cloud's API: launch, iterations, a preemption, the end."""
    cloud = EmulatedCloud({"synthetic": [cloud_source_profile()]}, seed=seed)
    config = make_config([(cloud.instance("g4dn.8xlarge"), 4, 64, "spot")])
    rng = np.random.default_rng(seed)
    launch = cloud.launch_time_s(rng)
    times = cloud.iteration_times_s(config, cloud.allocate(config, rng), 200, rng)
    clock = launch + np.cumsum(times)
    records: list[dict[str, object]] = [{"time_s": 0.0, "iteration": 0, "event": "launch", "vms": 4}]
    records += [{"time_s": float(clock[i]), "iteration": i + 1, "event": "iteration"} for i in range(0, 200, 10)]
    records.append({"time_s": float(clock[99]), "iteration": 100, "event": "inject_preempt", "vm": 2})
    records.append({"time_s": float(clock[-1]), "iteration": 200, "event": "finished"})
    return records
