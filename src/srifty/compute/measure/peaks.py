"""Measure a device's roofline ceilings: matrix-product FLOP/s and copy bandwidth (median rates).

A CPU has no datasheet row in the catalog, so its ceilings are measured while profiling: a square matrix
product (``2·n³`` FLOPs) and a copy of a large buffer (``2·size`` bytes: one read, one write), each
repeated for about ``seconds``. The *median* rate is kept, not the best: the estimator divides op times
measured on this machine by these ceilings, and a median is the same statistic as the per-op times (the
median of instrumented iterations), so a machine slowed by neighbours slows both alike instead of making
the ops look inefficient. The result is an achieved rate on this machine with this torch build
(oneDNN/MKL), not a datasheet peak. Needs torch.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

MATMUL_N = 2048
COPY_BYTES = 256 << 20


@dataclass(frozen=True)
class MeasuredPeaks:
    """Measured ceilings (median rates) and how they were measured."""

    flops_per_s: float
    tensor16_flops_per_s: float | None
    mem_bw_bytes_per_s: float
    description: str


def _median_rate(work: float, run: Callable[[], object], sync: Callable[[], None], seconds: float) -> float:
    """Median ``work / duration`` over repeated ``run()`` calls lasting about ``seconds`` in all (at least 5)."""
    run()  # warm-up: allocation, library initialisation
    sync()
    rates: list[float] = []
    started = time.perf_counter()
    while len(rates) < 5 or time.perf_counter() - started < seconds:
        t0 = time.perf_counter()
        run()
        sync()
        rates.append(work / max(time.perf_counter() - t0, 1e-9))
    return float(statistics.median(rates))


def measure_peaks(
    device: str = "cpu", half: bool = False, seconds: float = 1.0, half_dtype: torch.dtype | None = None
) -> MeasuredPeaks:
    """Median fp32 (and, with ``half``, 16-bit) matmul FLOP/s and copy bandwidth on ``device``.

    Args:
        device: ``"cpu"`` or a CUDA device.
        half: also measure a 16-bit matrix product (for bf16/fp16 profiles).
        seconds: about how long each measurement runs.
        half_dtype: the 16-bit dtype (default bf16).
    """
    dev = torch.device(device)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def matmul_rate(dtype: torch.dtype) -> float:
        a = torch.randn(MATMUL_N, MATMUL_N, device=dev).to(dtype)
        b = torch.randn(MATMUL_N, MATMUL_N, device=dev).to(dtype)
        out = torch.empty(MATMUL_N, MATMUL_N, device=dev, dtype=dtype)
        return _median_rate(2.0 * MATMUL_N**3, lambda: torch.mm(a, b, out=out), sync, seconds)

    with torch.no_grad():
        fp32 = matmul_rate(torch.float32)
        half_type = half_dtype or torch.bfloat16
        bf16 = matmul_rate(half_type) if half else None
        src = torch.ones(COPY_BYTES // 4, device=dev)
        dst = torch.empty_like(src)
        bandwidth = _median_rate(2.0 * COPY_BYTES, lambda: dst.copy_(src), sync, seconds)
    parts = [f"median rate over ~{seconds:g} s each of {MATMUL_N}x{MATMUL_N} fp32 matmuls"]
    if half:
        parts.append(f"{str(half_dtype or torch.bfloat16).replace('torch.', '')} matmuls")
    parts.append(f"{COPY_BYTES >> 20} MiB copies (read + write) with {torch.get_num_threads()} threads")
    return MeasuredPeaks(fp32, bf16, bandwidth, "measured: " + ", ".join(parts))
