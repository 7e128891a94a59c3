"""The GPUs the emulated cloud knows, as its compute physics needs them (``data/gpu_hardware.csv``).

Datasheet figures: SMs, FP32 and dense TF32 tensor throughput (0 where the GPU has no TF32: before Ampere),
memory bandwidth and size, and the host class of the machines such a GPU is rented in (``old``: hosts of
2019 or before, as on p3, g4dn, g5 and p4d; ``new``: 2021 on, as on the measured H200's machine). The host
class scales the per-kernel launch time (fitted on public small-batch rows, see
:mod:`srifty.cloud.compute_fit`). Aliases name the same silicon in the public throughput rows.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources

from srifty.cloud.errors import CloudError
from srifty.cloud.kernels import BLOCKS_PER_SM

REFERENCE_GPU = "H200"


@dataclass(frozen=True)
class GpuHardware:
    """One GPU's figures (units in the names) and the class of host it is rented with."""

    name: str
    sms: int
    fp32_flops_per_s: float
    tf32_flops_per_s: float
    mem_bytes_per_s: float
    memory_bytes: int
    host: str

    @property
    def slots(self) -> float:
        """Thread blocks it holds at once."""
        return float(self.sms * BLOCKS_PER_SM)

    @property
    def has_tf32(self) -> bool:
        """Whether cuDNN runs fp32 convolutions on TF32 tensor cores here (PyTorch's default since 1.7)."""
        return self.tf32_flops_per_s > 0


@cache
def _table() -> dict[str, GpuHardware]:
    text = resources.files("srifty.cloud").joinpath("data", "gpu_hardware.csv").read_text(encoding="utf-8")
    out: dict[str, GpuHardware] = {}
    for r in csv.DictReader(text.splitlines()):
        hw = GpuHardware(
            name=r["gpu"],
            sms=int(r["sms"]),
            fp32_flops_per_s=float(r["fp32_tflops"]) * 1e12,
            tf32_flops_per_s=float(r["tf32_dense_tflops"]) * 1e12,
            mem_bytes_per_s=float(r["mem_bw_gbs"]) * 1e9,
            memory_bytes=int(float(r["memory_gib"]) * 2**30),
            host=r["host"],
        )
        for name in [r["gpu"], *filter(None, r["aliases"].split(";"))]:
            out[name] = hw
    return out


def gpu_hardware(name: str) -> GpuHardware:
    """The figures of the GPU ``name`` (a catalog name such as ``T4``, or a public row's label).

    Raises:
        CloudError: a GPU the emulated cloud has no figures for.
    """
    found = _table().get(name)
    if found is None:
        raise CloudError(
            f"the emulated cloud has no hardware figures for GPU '{name}'; known: {', '.join(sorted(_table()))}."
        )
    return found
