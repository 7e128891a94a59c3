"""Carrying a model's kernels from the measured H200 to another GPU, and building them from op counts where
no GPU measured the model (the emulated cloud's own physics; EMULATED).

**Per-sample time.** On the H200 a phase's per-sample time ``T`` splits into a convolution part (FLOPs at the
TF32 tensor rate: PyTorch's cuDNN default), a matrix-product part (FLOPs at the FP32 rate: PyTorch's default
keeps matmuls out of TF32) and a memory part (the rest). On GPU ``g``::

    T_g = F_conv / R_conv,g + F_mm / R_mm,g + M · (1 / BW_g + 1 / (SMs_g · s))
    M   = (T_H200 − F_conv / R_conv,H200 − F_mm / R_mm,H200) / (1 / BW_H200 + 1 / (SMs_H200 · s))

with ``R_conv = η_tf32 · TF32 peak`` where the GPU has TF32 and ``η_fp32 · FP32 peak`` where it has not, and
``R_mm = η_fp32 · FP32 peak``. Memory-bound kernels pay for DRAM bandwidth and for what their SMs can load
and store (``s`` bytes/s per SM): small element-wise kernels on a large GPU are limited by the second, so
the memory part does not simply scale with DRAM bandwidth. ``η`` and ``s`` are fitted on public throughput
(:mod:`srifty.cloud.compute_fit`). The memory part keeps at least :data:`MIN_MEMORY_SHARE` of ``T``.

**Slots, host and step.** The GPU's SMs set its slots; its host class scales the per-kernel launch time and
the step's host span; the step's GPU span scales as the memory part does.

**Unmeasured models** get the H200 kernels from their op counts: kernel launches = kernel-launching ops ×
the measured models' median kernels per op; per-sample time from FLOPs at the same rates plus counted bytes ×
the measured models' median effective traffic per counted byte; block spread and launch time the measured
models' medians; the step from parameter bytes and tensors. Less certain, and labelled so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from srifty.cloud.hardware import REFERENCE_GPU, GpuHardware, gpu_hardware
from srifty.cloud.kernels import KernelModel, PhaseKernels

MIN_MEMORY_SHARE = 0.05
PHASES = ("fw", "bwd")
#: The workload file's phase keys (its records keep the profile files' ``bw``).
WORK_KEY = {"fw": "fw", "bwd": "bw"}


@dataclass(frozen=True)
class CrossGpu:
    """The calibrated constants that carry kernels between GPUs.

    Attributes:
        tf32_efficiency: achieved share of the TF32 tensor peak by convolutions (counted as direct ones).
        conv_fp32_efficiency: the same for convolutions on GPUs without TF32 (it may exceed 1: cuDNN's
            Winograd and FFT algorithms do fewer multiplications than a direct convolution is counted with).
        matmul_efficiency: achieved share of the FP32 peak by matrix products.
        sm_bytes_per_s: what one SM of a memory-bound kernel loads and stores per second.
        host_factor: per host class, launch time relative to the H200's machine.
        sustained_clock: per GPU name, its sustained clock over the datasheet's boost clock under training
            load (power-capped parts: the 70 W T4); 1 where absent.
    """

    tf32_efficiency: float
    conv_fp32_efficiency: float
    matmul_efficiency: float
    sm_bytes_per_s: float
    host_factor: Mapping[str, float]
    sustained_clock: Mapping[str, float]

    def clock(self, hw: GpuHardware) -> float:
        """Sustained over boost clock of ``hw``."""
        return float(self.sustained_clock.get(hw.name, 1.0))

    def conv_rate(self, hw: GpuHardware) -> float:
        """Achieved convolution FLOP/s."""
        if hw.has_tf32:
            return self.tf32_efficiency * hw.tf32_flops_per_s * self.clock(hw)
        return self.conv_fp32_efficiency * hw.fp32_flops_per_s * self.clock(hw)

    def matmul_rate(self, hw: GpuHardware) -> float:
        """Achieved matrix-product FLOP/s (fp32: PyTorch keeps matmuls out of TF32 by default)."""
        return self.matmul_efficiency * hw.fp32_flops_per_s * self.clock(hw)

    def memory_s_per_byte(self, hw: GpuHardware) -> float:
        """Seconds per byte of a memory-bound kernel: DRAM and the SMs' load/store, one after the other."""
        return 1.0 / hw.mem_bytes_per_s + 1.0 / (hw.sms * self.sm_bytes_per_s * self.clock(hw))

    def host(self, hw: GpuHardware) -> float:
        """Launch-time factor of the machines ``hw`` is rented in."""
        return float(self.host_factor.get(hw.host, 1.0)) / float(self.host_factor.get("new", 1.0))


@dataclass(frozen=True)
class PhaseWork:
    """Counted work of one phase per sample: FLOPs of convolutions and matrix products, bytes moved, ops."""

    conv_flops: float
    matmul_flops: float
    bytes: float
    ops: int


def phase_work(workload: Mapping[str, Any], phase: str) -> PhaseWork:
    """One phase's work from a workload record (backward convolution FLOPs capped at twice forward's)."""
    rec = workload["phases"][WORK_KEY[phase]]
    conv = float(rec["conv_flops"])
    if phase == "bwd":
        # torch's flop counter prices a grouped (depthwise) convolution's backward as a dense one; a backward
        # is a data-gradient and a weight-gradient convolution, each of forward's size.
        conv = min(conv, 2.0 * float(workload["phases"]["fw"]["conv_flops"]))
    return PhaseWork(conv, float(rec["matmul_flops"]), float(rec["bytes"]), int(rec["ops"]))


def compute_ms(work: PhaseWork, hw: GpuHardware, cross: CrossGpu) -> tuple[float, float]:
    """``(convolution ms, matrix-product ms)`` per sample on ``hw``."""
    return 1e3 * work.conv_flops / cross.conv_rate(hw), 1e3 * work.matmul_flops / cross.matmul_rate(hw)


def memory_ms_on_reference(per_sample_ms: float, work: PhaseWork, cross: CrossGpu) -> float:
    """The memory part of a measured H200 per-sample time."""
    conv, mm = compute_ms(work, gpu_hardware(REFERENCE_GPU), cross)
    return max(per_sample_ms - conv - mm, MIN_MEMORY_SHARE * per_sample_ms)


def carry(reference: KernelModel, works: Mapping[str, PhaseWork], target: GpuHardware, cross: CrossGpu) -> KernelModel:
    """``reference`` (kernels on the H200) carried to ``target`` (see the module docstring)."""
    ref = gpu_hardware(REFERENCE_GPU)
    host = cross.host(target) / cross.host(ref)
    bandwidth = cross.memory_s_per_byte(target) / cross.memory_s_per_byte(ref)
    phases = {}
    for name in PHASES:
        phase: PhaseKernels = getattr(reference, name)
        work = works[name]
        conv_ref, mm_ref = compute_ms(work, ref, cross)
        scale = min(1.0, (1.0 - MIN_MEMORY_SHARE) * phase.per_sample_ms / max(conv_ref + mm_ref, 1e-12))
        memory = phase.per_sample_ms - scale * (conv_ref + mm_ref)
        conv, mm = compute_ms(work, target, cross)
        phases[name] = replace(
            phase,
            per_sample_ms=scale * (conv + mm) + memory * bandwidth,
            launch_ms=phase.launch_ms * host,
        )
    return KernelModel(
        fw=phases["fw"],
        bwd=phases["bwd"],
        step_host_ms=reference.step_host_ms * host,
        step_gpu_ms=reference.step_gpu_ms * bandwidth,
        slots=target.slots,
    )


@dataclass(frozen=True)
class CountDefaults:
    """What an unmeasured model borrows from the measured ones (medians over them).

    Attributes:
        kernels_per_op: per phase, kernel launches per counted kernel-launching op.
        traffic_per_byte: per phase, effective memory traffic per counted byte (at :meth:`CrossGpu.memory_s_per_byte`).
        blocks_median, blocks_sigma, launch_ms: per phase, the kernels' block spread and launch time.
        step_gpu_ms_per_gb: the step's GPU span per GB of parameters on the H200.
        step_host_ms: the step's host span, ``a + b · tensors``.
    """

    kernels_per_op: Mapping[str, float]
    traffic_per_byte: Mapping[str, float]
    blocks_median: Mapping[str, float]
    blocks_sigma: float
    launch_ms: Mapping[str, float]
    step_gpu_ms_per_gb: float
    step_host_ms: tuple[float, float]


def from_counts(workload: Mapping[str, Any], defaults: CountDefaults, cross: CrossGpu) -> KernelModel:
    """An unmeasured model's kernels on the H200, from its op counts and the measured models' medians."""
    ref = gpu_hardware(REFERENCE_GPU)
    phases = {}
    for name in PHASES:
        work = phase_work(workload, name)
        conv, mm = compute_ms(work, ref, cross)
        memory = 1e3 * work.bytes * defaults.traffic_per_byte[name] * cross.memory_s_per_byte(ref)
        phases[name] = PhaseKernels(
            kernels=max(1.0, work.ops * defaults.kernels_per_op[name]),
            blocks_median=defaults.blocks_median[name],
            blocks_sigma=defaults.blocks_sigma,
            per_sample_ms=max(conv + mm + memory, 1e-6),
            launch_ms=defaults.launch_ms[name],
        )
    a, b = defaults.step_host_ms
    tensors = len(workload["params_ready_order"])
    return KernelModel(
        fw=phases["fw"],
        bwd=phases["bwd"],
        step_host_ms=a + b * tensors,
        step_gpu_ms=defaults.step_gpu_ms_per_gb * float(workload["param_bytes"]) / 1e9,
        slots=ref.slots,
    )
