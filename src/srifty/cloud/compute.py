"""The emulated cloud's compute truth: how fast a model really trains on a GPU type, and how much fits (EMULATED).

Built from measurements by the cloud's own physics, never from srifty's models:

* a model the H200 measured, on the H200: its fitted launch-pipeline kernels (:mod:`srifty.cloud.kernels`;
  within a few percent of the measured medians, see BENCHMARKS.md);
* a measured model on another GPU: those kernels carried by the roofline split and the GPU's slots, host and
  memory (:mod:`srifty.cloud.transfer`), calibrated on public throughput;
* a model the H200 did not measure: kernels from its op counts and the measured models' medians, then
  carried the same way. **Less certain** (leave-one-out error in BENCHMARKS.md), and labelled so.

Each seed draws the truth within its own uncertainty, hidden from every planner: a factor on the model's
GPU spans (log-normal with the H200 kernel fit's error for a measured model, the leave-one-out error for an
unmeasured one) and one per (model, GPU) for the cross-GPU part (the public rows' RMS log error), and a
launch-time factor per GPU's host. Memory: parameters, gradients and momentum plus activations per sample
(fitted on the H200's peaks; from counted forward bytes for unmeasured models), plus a CUDA context, with
allocator headroom; a batch fits when that stays within the GPU's memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.cloud.compute_constants import Calibration
from srifty.cloud.compute_fit import MemoryLine
from srifty.cloud.errors import CloudError
from srifty.cloud.hardware import REFERENCE_GPU, gpu_hardware
from srifty.cloud.kernels import KernelModel
from srifty.cloud.params import CloudParams, named_rng
from srifty.cloud.transfer import carry, from_counts, phase_work

#: How sure the truth is of itself, per origin.
MEASURED, CARRIED, FROM_COUNTS = "measured", "carried", "from op counts (less certain)"
#: The largest batch the truth answers for (a search beyond it is refused as out of memory).
BATCH_LIMIT = 1 << 16


@dataclass
class ComputeTruth:
    """True compute of one model on one GPU type (means over iterations, on a VM whose speed factor is 1).

    Attributes:
        model, gpu: what and where.
        kernels: the launch pipeline on this GPU in this seed's world.
        memory: peak allocated bytes against batch.
        memory_capacity_bytes: the GPU's memory.
        certainty: :data:`MEASURED`, :data:`CARRIED` or :data:`FROM_COUNTS`.
        origin: where it came from, in words.
        hidden_factor: this seed's draw on the GPU spans (for reports after the fact; never for planners).
    """

    model: str
    gpu: str
    kernels: KernelModel
    memory: MemoryLine
    memory_capacity_bytes: int
    certainty: str
    origin: str
    hidden_factor: float
    context_bytes: float = 0.6 * 2**30
    headroom: float = 1.05
    _cache: dict[int, tuple[float, float, float]] = field(default_factory=dict, repr=False)

    def phases_ms(self, batch: int) -> tuple[float, float, float]:
        """``(forward, backward, step)`` mean ms at ``batch`` (cached)."""
        hit = self._cache.get(batch)
        if hit is None:
            fw, bwd, step = self.kernels.phase_ms(np.array([float(batch)]))
            hit = (float(fw[0]), float(bwd[0]), float(step[0]))
            self._cache[batch] = hit
        return hit

    def mean_ms(self, phase: str, batch: ArrayLike) -> NDArray[np.float64]:
        """Mean latency (ms) of ``phase`` (``fw``, ``bw``, ``step`` or ``iter``) at each batch."""
        b = np.asarray(batch)
        values = [self.phases_ms(int(x)) for x in np.atleast_1d(b).ravel()]
        pick = {"fw": lambda v: v[0], "bw": lambda v: v[1], "step": lambda v: v[2], "iter": sum}[phase]
        return np.array([pick(v) for v in values]).reshape(b.shape)

    def peak_bytes(self, batch: int) -> float:
        """Peak memory allocated by training at ``batch``."""
        return self.memory.peak_bytes(batch)

    def fits(self, batch: int) -> bool:
        """Whether ``batch`` trains without running out of memory."""
        return 1 <= batch <= BATCH_LIMIT and (
            self.headroom * self.peak_bytes(batch) + self.context_bytes <= self.memory_capacity_bytes
        )

    @property
    def max_batch(self) -> int:
        """The largest batch that fits (0 if none)."""
        room = (self.memory_capacity_bytes - self.context_bytes) / self.headroom - self.memory.base_bytes
        if room <= 0:
            return 0
        batch = min(int(room // max(self.memory.per_sample_bytes, 1.0)), BATCH_LIMIT)
        while batch > 0 and not self.fits(batch):  # rounding only: a step or two
            batch -= 1
        return batch

    def rank_curve_ms(self) -> NDArray[np.float64]:
        """One GPU's steady iteration time (ms) at every batch from 1 to :attr:`max_batch`: forward, backward and
        the step's GPU span, or the host's issue span where that is longer. Wave quantisation makes the curve
        step up and down a little; each batch gets the least time of it and every larger batch, so the curve is
        non-decreasing and never above the truth (searches bound with it)."""
        batches = np.arange(1, self.max_batch + 1, dtype=float)
        if batches.size == 0:
            return np.zeros(0)
        fw, bwd, _ = self.kernels.phase_ms(batches)
        rank = np.maximum(fw + bwd + self.step_gpu_ms, self.host_issue_ms)
        return np.minimum.accumulate(rank[::-1])[::-1]

    @property
    def step_gpu_ms(self) -> float:
        """The optimizer step's GPU span."""
        return self.kernels.step_gpu_ms

    @property
    def host_issue_ms(self) -> float:
        """Host time to issue a whole iteration (forward, backward, step), from its start."""
        k = self.kernels
        return k.fw.host_ms + k.bwd.host_ms + k.step_host_ms


def _lognormal(seed: int, sigma: float, *names: str) -> float:
    if sigma <= 0:
        return 1.0
    return float(named_rng(seed, "hidden-compute", *names).lognormal(0.0, sigma))


def build_truth(
    workload: Mapping[str, Any],
    gpu: str,
    calibration: Calibration,
    seed: int,
    params: CloudParams,
    memory_capacity_bytes: int | None = None,
) -> ComputeTruth:
    """The truth of ``workload`` (a workloads.json record) on the catalog GPU ``gpu`` in seed ``seed``'s world.

    Raises:
        CloudError: a GPU the cloud has no figures for.
    """
    name = str(workload["model"])
    hw = gpu_hardware(gpu)
    measured = calibration.kernels.get(name)
    cross = calibration.cross
    if measured is not None:
        reference = measured
        model_sigma = calibration.kernel_error.get(name, 0.0)
        memory = calibration.memory[name]
    else:
        reference = from_counts(workload, calibration.defaults_for(str(workload.get("kind", ""))), cross)
        model_sigma = calibration.count_error
        fw_bytes = phase_work(workload, "fw").bytes
        memory = calibration.memory_defaults.line(float(workload["param_bytes"]), fw_bytes)
    works = {p: phase_work(workload, p) for p in ("fw", "bwd")}
    on_target = carry(reference, works, hw, cross) if hw.name != REFERENCE_GPU else reference
    certainty = FROM_COUNTS if measured is None else (MEASURED if hw.name == REFERENCE_GPU else CARRIED)
    gpu_sigma = 0.0 if certainty == MEASURED else calibration.cross_error
    factor = _lognormal(seed, model_sigma, name) * _lognormal(seed, gpu_sigma, name, hw.name)
    host = _lognormal(seed, params.host_launch_sigma, "host", hw.name)
    kernels = on_target.scaled(factor)
    kernels = replace(
        kernels,
        fw=replace(kernels.fw, launch_ms=kernels.fw.launch_ms * host),
        bwd=replace(kernels.bwd, launch_ms=kernels.bwd.launch_ms * host),
        step_host_ms=kernels.step_host_ms * host,
    )
    origin = {
        MEASURED: f"EMULATED: the H200's measured curves ({name}), as fitted by the cloud's kernel model",
        CARRIED: f"EMULATED: {name}'s H200 measurements carried to {gpu} by the cloud's kernel model",
        FROM_COUNTS: f"EMULATED, less certain: {name} from op counts (no GPU measured it), on {gpu}",
    }[certainty]
    capacity = memory_capacity_bytes if memory_capacity_bytes is not None else hw.memory_bytes
    if not math.isfinite(factor) or factor <= 0:
        raise CloudError(f"hidden compute factor for {name} on {gpu} is {factor}")
    return ComputeTruth(
        model=name,
        gpu=gpu,
        kernels=kernels,
        memory=memory,
        memory_capacity_bytes=int(capacity),
        certainty=certainty,
        origin=origin,
        hidden_factor=factor,
        context_bytes=params.cuda_context_bytes,
        headroom=params.allocator_headroom,
    )
