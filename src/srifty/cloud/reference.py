"""Calibrate the emulated cloud's estimated compute truth to public GPU training throughput (EMULATED).

For a model with rows in ``data/reference_training_throughput.csv`` (single-GPU FP32 training, samples/s
at a batch), the calibration is the geometric mean over those rows of::

    measured_iter_s / estimated_iter_s = (batch / samples_per_s) / estimate.iter(batch)

where ``estimate`` is srifty's cross-GPU estimate of the source profile on that row's GPU. The factor
multiplies the truth of *every* GPU type for that model: the estimate's error from a CPU source is mostly
the source's (how the CPU ran the model), shared by all targets. Models without rows are not calibrated
(factor 1). See ``data/README.md`` for provenance.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from srifty.catalog import Catalog
from srifty.compute import Profile, choose_source, estimate_profile

REFERENCE_FILE = "reference_training_throughput.csv"


@dataclass(frozen=True)
class ReferenceRow:
    """One public throughput figure: ``samples_per_s`` of FP32 training at ``batch_per_gpu`` on one GPU."""

    model: str
    gpu: str
    batch_per_gpu: int
    samples_per_s: float
    source: str


@dataclass(frozen=True)
class Calibration:
    """A multiplier on a model's estimated latencies, and how it was found."""

    factor: float
    note: str


@cache
def reference_rows() -> tuple[ReferenceRow, ...]:
    """Every bundled reference row."""
    text = resources.files("srifty.cloud").joinpath("data", REFERENCE_FILE).read_text(encoding="utf-8")
    return tuple(
        ReferenceRow(r["model"], r["gpu"], int(r["batch_per_gpu"]), float(r["samples_per_s"]), r["source_repo"])
        for r in csv.DictReader(text.splitlines())
        if r["precision"] == "FP32"
    )


def calibrate(sources: Sequence[Profile], catalog: Catalog | None = None) -> Calibration:
    """The calibration of ``sources``' model (factor 1 when no reference row applies)."""
    if not sources:
        return Calibration(1.0, "no source profile")
    model = sources[0].model
    rows = [r for r in reference_rows() if r.model == model]
    if not rows:
        return Calibration(1.0, f"no public reference for {model}; uncalibrated estimate")
    logs: list[float] = []
    for row in rows:
        choice = choose_source(sources, row.gpu, catalog)
        estimate = estimate_profile(choice.profile, row.gpu, catalog=catalog, reason=choice.reason)
        estimated_s = float(estimate.latency["iter"].predict_ms(np.array([row.batch_per_gpu]))[0]) / 1000.0
        if estimated_s > 0:
            logs.append(math.log((row.batch_per_gpu / row.samples_per_s) / estimated_s))
    if not logs:
        return Calibration(1.0, f"reference rows for {model} gave no usable estimate")
    factor = math.exp(sum(logs) / len(logs))
    gpus = ", ".join(sorted({r.gpu for r in rows}))
    return Calibration(factor, f"calibrated x{factor:.3f} to {len(logs)} public {gpus} FP32 training figure(s)")
