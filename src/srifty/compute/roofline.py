"""Roofline ceilings of a device and the roofline time of an op.

An op that performs ``F`` FLOPs and moves ``M`` bytes cannot finish faster than
``max(F / peak_flops_per_s, M / mem_bw_bytes_per_s)`` (Williams et al., "Roofline", CACM 2009). The
cross-device estimator scales each op's measured time by the ratio of this bound on the target and on the
source, so only the *ratio* of ceilings matters, not how close an op gets to them.

Assumptions, stated once:

* A GPU's ceilings are its datasheet peaks (``GpuSpec``): dense FP32 for fp32 ops, dense FP16/BF16 tensor
  throughput for 16-bit ops that carry FLOPs (matrix products, convolutions, attention), memory bandwidth
  for everything. TF32 is not modelled: an fp32 profile is estimated at the FP32 peak even on GPUs whose
  libraries use TF32 tensor cores for convolutions by default (Ampere and later).
* A CPU has no datasheet row here, so the profiler measures its ceilings when profiling: the median rate of
  a large fp32 matrix product (and bf16 for a bf16 profile) and of a large copy. Measured ceilings are
  achieved rates, datasheet ceilings are peaks: a CPU-to-GPU ratio therefore assumes the GPU reaches its
  datasheet peak as well as the CPU reaches its measured one, which favours the GPU.
* Ops with no FLOPs and no bytes (views, metadata) have no roofline time; their measured time is host
  overhead and is kept as measured.

Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.catalog import GpuSpec
from srifty.compute.work import HALF_DTYPES
from srifty.errors import ProfileError


@dataclass(frozen=True)
class DevicePeaks:
    """The roofline ceilings of one device.

    Attributes:
        label: ``"T4"``, ``"cpu"`` and so on.
        flops_per_s: dense fp32 matrix-product ceiling.
        tensor16_flops_per_s: dense 16-bit (bf16/fp16) matrix-product ceiling, ``None`` where unknown.
        mem_bw_bytes_per_s: memory bandwidth ceiling (bytes read plus bytes written, per second).
        source: ``"datasheet"`` or ``"measured"``.
    """

    label: str
    flops_per_s: float
    tensor16_flops_per_s: float | None
    mem_bw_bytes_per_s: float
    source: str

    def __post_init__(self) -> None:
        if not (self.flops_per_s > 0 and self.mem_bw_bytes_per_s > 0):
            raise ProfileError(f"device {self.label} needs positive FLOP/s and bandwidth ceilings")

    def flops_ceiling(self, dtype: str) -> float:
        """FLOP/s ceiling for FLOP-carrying ops of ``dtype``: the 16-bit peak for bf16/fp16 where known."""
        if dtype in HALF_DTYPES and self.tensor16_flops_per_s:
            return self.tensor16_flops_per_s
        return self.flops_per_s

    def log_distance(self, other: DevicePeaks) -> float:
        """``|ln(F_a/F_b)| + |ln(BW_a/BW_b)|``: how far apart two devices' rooflines are (0 when equal)."""
        return abs(float(np.log(self.flops_per_s / other.flops_per_s))) + abs(
            float(np.log(self.mem_bw_bytes_per_s / other.mem_bw_bytes_per_s))
        )


def gpu_peaks(spec: GpuSpec) -> DevicePeaks:
    """Datasheet ceilings of a catalog GPU."""
    return DevicePeaks(
        label=spec.name,
        flops_per_s=spec.fp32_flops_per_s,
        tensor16_flops_per_s=spec.tensor16_flops_per_s,
        mem_bw_bytes_per_s=spec.mem_bw_bytes_per_s,
        source="datasheet",
    )


def roofline_time_s(
    flops: ArrayLike, bytes_moved: ArrayLike, dtypes: Sequence[str], peaks: DevicePeaks
) -> NDArray[np.float64]:
    """``max(F / P(dtype), M / BW)`` per op, in seconds; rows of ``flops``/``bytes_moved`` follow ``dtypes``."""
    f = np.asarray(flops, dtype=float)
    m = np.asarray(bytes_moved, dtype=float)
    ceilings = np.asarray([peaks.flops_ceiling(d) for d in dtypes], dtype=float)
    if f.ndim == 2:
        ceilings = ceilings[:, None]
    return np.maximum(f / ceilings, m / peaks.mem_bw_bytes_per_s)


def roofline_ratio(
    flops: ArrayLike, bytes_moved: ArrayLike, dtypes: Sequence[str], source: DevicePeaks, target: DevicePeaks
) -> NDArray[np.float64]:
    """Per op, roofline time on ``target`` over roofline time on ``source``; 1 for ops with no work.

    A pure matrix product (FLOP-bound on both) gives ``P_source / P_target``; a pure copy gives
    ``BW_source / BW_target``.
    """
    t_src = roofline_time_s(flops, bytes_moved, dtypes, source)
    t_tgt = roofline_time_s(flops, bytes_moved, dtypes, target)
    safe = np.where(t_src > 0, t_src, 1.0)
    return np.where(t_src > 0, t_tgt / safe, 1.0)
