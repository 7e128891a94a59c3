"""The emulated cloud's compute physics: a launch pipeline of wave-quantised kernels (EMULATED).

Its own functional form, not srifty's (srifty fits piecewise-linear curves through probes; its estimator
scales measured op times by roofline ratios). A training iteration on one GPU is modelled as what a GPU
actually runs: the host issues kernels one after another, the GPU executes them in order, and each kernel
runs in *waves* of thread blocks.

* **Kernels.** A phase (forward, backward) launches ``K`` kernels. Kernel ``k`` splits its work into
  ``u_k`` thread blocks per sample; the ``u_k`` follow a log-normal spread (median ``u``, log-σ ``σ``) over
  a fixed set of :data:`KERNEL_GROUPS` quantiles in a fixed shuffled order (forward layers interleave large
  and small kernels). Every block costs the same time on a GPU, set so that once every kernel fills the GPU
  the phase costs ``T`` ms per sample.
* **Waves.** The GPU holds ``S`` blocks at once (``slots``: SMs × blocks per SM). A kernel with ``B·u_k``
  blocks runs ``ceil(B·u_k / S)`` waves, plus a fixed minimum time. So a kernel costs the same for every
  batch below ``S/u_k`` (under-occupied) and then grows in steps: the curve is stepped, not piecewise linear.
* **Launch pipeline.** The host issues one kernel every ``ℓ`` ms (Python, ATen dispatch, the driver); the GPU
  starts a kernel when it is issued and the previous one has finished: ``end_k = max(end_{k−1}, issue_k) +
  d_k``, whose closed form is ``end_K = max_k (issue_k + Σ_{j≥k} d_j)``. Small batches are launch-bound (flat
  at ``K·ℓ``), large ones GPU-bound (``B·T``); between them the curve bends smoothly, at a batch that depends
  on the GPU's slots and the host's speed.
* **Phases as CUDA events see them.** Events mark the phase boundaries on the stream: forward ends when its
  last kernel ends *and* the host has issued it; backward starts then; the optimizer step is a host span
  (``step_host_ms``: Python, foreach launches, ``zero_grad``) and a GPU span (``step_gpu_ms``: reading and
  writing weights, gradients and momentum). When the GPU is still busy with backward, the host has already
  issued the step, so only its GPU span shows (the H200 measured exactly this: 1.5 ms at batch 1,
  0.3 ms from batch 32 on, for ResNet-50).

Carrying the model to another GPU changes ``T`` (a roofline split of the H200's per-sample time into
convolution, matrix-product and memory parts, see :mod:`srifty.cloud.compute`), ``S`` (its SMs), ``ℓ`` (its
host) and the step's GPU span (its memory bandwidth). Pure numpy, vectorised over batches.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri

FloatArray = NDArray[np.float64]

#: Quantiles of the kernels' block-count spread; each stands for ``K / KERNEL_GROUPS`` identical kernels.
KERNEL_GROUPS = 48
#: Thread blocks one SM holds at once (a typical occupancy); only ratios of slots between GPUs matter.
BLOCKS_PER_SM = 4
#: Shortest kernel on any GPU (ms): launch-to-finish of an empty kernel.
MIN_KERNEL_MS = 0.003


def _unit_spread() -> FloatArray:
    """Standard-normal quantiles of the kernel groups, in a fixed shuffled order."""
    z = ndtri((np.arange(KERNEL_GROUPS) + 0.5) / KERNEL_GROUPS)
    return np.random.default_rng(20261129).permutation(z)


UNIT_SPREAD = _unit_spread()


@dataclass(frozen=True)
class PhaseKernels:
    """One phase's kernels on one GPU.

    Attributes:
        kernels: ``K``, kernel launches in the phase.
        blocks_median: ``u``, thread blocks per sample of the median kernel.
        blocks_sigma: ``σ``, log-spread of blocks per sample across kernels.
        per_sample_ms: ``T``, ms per sample once every kernel fills the GPU.
        launch_ms: ``ℓ``, host time to issue one kernel.
    """

    kernels: float
    blocks_median: float
    blocks_sigma: float
    per_sample_ms: float
    launch_ms: float

    def durations_ms(self, batches: FloatArray, slots: float) -> FloatArray:
        """GPU time of each kernel group (rows: batches, columns: groups), for ``K/groups`` kernels each."""
        blocks = self.blocks_median * np.exp(self.blocks_sigma * UNIT_SPREAD)
        per_group = self.kernels / KERNEL_GROUPS
        # Every block costs the same: Σ_k wave_ms·u_k/S = T, so the phase costs B·T at full occupancy.
        wave_ms = self.per_sample_ms * slots / (per_group * blocks.sum())
        waves = np.ceil(batches[:, None] * blocks[None, :] / slots)
        return per_group * (MIN_KERNEL_MS + wave_ms * waves)

    @property
    def host_ms(self) -> float:
        """Host time to issue the whole phase."""
        return self.kernels * self.launch_ms


@dataclass(frozen=True)
class KernelModel:
    """One model's training iteration on one GPU (see the module docstring).

    Attributes:
        fw: forward (and loss) kernels.
        bwd: backward kernels.
        step_host_ms: host span of ``optimizer.step()`` and ``zero_grad``.
        step_gpu_ms: GPU span of the update.
        slots: thread blocks the GPU holds at once.
    """

    fw: PhaseKernels
    bwd: PhaseKernels
    step_host_ms: float
    step_gpu_ms: float
    slots: float

    def phase_ms(self, batch: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(forward, backward, step)`` mean latency (ms) at each batch, as CUDA events measure them."""
        b = np.atleast_1d(np.asarray(batch, dtype=float))
        fw_end, fw_host = _pipeline(self.fw, b, self.slots, start_ms=np.zeros_like(b), host_start_ms=0.0)
        bwd_end, bwd_host = _pipeline(self.bwd, b, self.slots, start_ms=fw_end, host_start_ms=fw_host)
        step_end = np.maximum(bwd_end + self.step_gpu_ms, bwd_host + self.step_host_ms)
        shape = np.shape(np.asarray(batch, dtype=float))
        return (
            fw_end.reshape(shape),
            (bwd_end - fw_end).reshape(shape),
            (step_end - bwd_end).reshape(shape),
        )

    def scaled(self, factor: float) -> KernelModel:
        """The same kernels with every GPU span ``factor`` times longer (host spans unchanged)."""
        return replace(
            self,
            fw=replace(self.fw, per_sample_ms=self.fw.per_sample_ms * factor),
            bwd=replace(self.bwd, per_sample_ms=self.bwd.per_sample_ms * factor),
            step_gpu_ms=self.step_gpu_ms * factor,
        )


def _pipeline(
    phase: PhaseKernels, batches: FloatArray, slots: float, start_ms: FloatArray, host_start_ms: float
) -> tuple[FloatArray, float]:
    """When the phase's last kernel ends on the GPU (and is issued), and when the host has issued it all.

    The host issues group ``g`` from ``host_start + g·(K/groups)·ℓ``; the GPU may not start before
    ``start_ms`` (the previous phase's end). ``end = max(start + Σ d, max_g (issue_g + Σ_{j≥g} d_j))``.
    """
    durations = phase.durations_ms(batches, slots)
    per_group = phase.kernels / KERNEL_GROUPS
    issue = host_start_ms + np.arange(KERNEL_GROUPS) * per_group * phase.launch_ms
    suffix = np.cumsum(durations[:, ::-1], axis=1)[:, ::-1]
    gpu_end = np.maximum(start_ms + suffix[:, 0], np.max(issue[None, :] + suffix, axis=1))
    host_end = host_start_ms + phase.host_ms
    return np.maximum(gpu_end, host_end), host_end
