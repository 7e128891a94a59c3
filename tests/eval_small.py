"""A small evaluation on the emulated cloud, shared by the evaluation and report tests: two cases (a synthetic
model the cloud knows only from a profile's op counts, and the bundled ResNet-18), two instance types each,
small quotas, untuned network fit, one seed. Not a benchmark: a fast, real run of the harness."""

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
SPEC_RESNET18 = """\
description: "test: ResNet-18 on T4 and V100 VMs, minimise time within a budget"
model: resnet18
global_batch: 512
iterations: 300
goal: min_time
budget_usd: 1.0
region: us-east-1
candidates:
  - {instance_type: g4dn.xlarge, market: spot, quota: 8}
  - {instance_type: p3.2xlarge, market: spot, quota: 4}
"""

METHODS = ("srifty", "apm", "paleo", "cgf", "fgf", "random", "homogeneous")


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """The synthetic case's spec and a folder holding its profile (with op counts, which is all the cloud takes
    from it); returns ``(spec, profiles folder)``."""
    profiles = folder / "profiles"
    cloud_source_profile().save(profiles / "synthetic__cpu.json")
    spec = folder / "small-case.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    return spec, profiles


def write_specs(folder: Path) -> tuple[list[Path], Path]:
    """Both cases' specs and the profiles folder."""
    spec, profiles = write_inputs(folder)
    resnet = folder / "small-resnet18.yaml"
    resnet.write_text(SPEC_RESNET18, encoding="utf-8")
    return [spec, resnet], profiles


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
    """Evaluate the two small cases on one seed."""
    specs, profiles = write_specs(folder)
    return run_cases(specs, settings(profiles, seed))


def timeline_records(seed: int = 0) -> list[dict[str, object]]:
    """A runtime-like timeline from the cloud's API: launch, iterations, a preemption, the end."""
    cloud = EmulatedCloud(["resnet18"], seed=seed)
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
