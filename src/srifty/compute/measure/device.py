"""Describe the device a profile is measured on, and map CUDA device names to catalog GPU names."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from srifty.units import BYTES_PER_GIB

# Catalog GPU names, most specific first, with the patterns CUDA device names use for them.
_GPU_PATTERNS: tuple[tuple[str, str], ...] = (
    ("A100-80GB", r"A100.*80\s*GB"),
    ("A100", r"A100"),
    ("V100-32GB", r"V100.*32\s*GB"),
    ("V100", r"V100"),
    ("H200", r"H200"),
    ("H100", r"H100"),
    ("B300", r"B300"),
    ("B200", r"B200"),
    ("L40S", r"L40S"),
    ("L4", r"\bL4\b"),
    ("A10G", r"A10G"),
    ("A10", r"\bA10\b"),
    ("T4g", r"T4G"),
    ("T4", r"\bT4\b"),
    ("P100", r"P100"),
    ("P4", r"\bP4\b"),
    ("M60", r"M60"),
    ("K80", r"K80"),
)


def catalog_gpu_name(device_name: str) -> str | None:
    """The catalog GPU name for a CUDA device name (``"Tesla V100-SXM2-16GB"`` → ``"V100"``), if known."""
    for name, pattern in _GPU_PATTERNS:
        if re.search(pattern, device_name, flags=re.IGNORECASE):
            return name
    return None


CPUINFO = Path("/proc/cpuinfo")


def cpu_fields(path: Path = CPUINFO) -> dict[str, str]:
    """The first processor's fields in ``/proc/cpuinfo`` (keys in lower case); empty where there is no such file."""
    fields: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            if not line.strip():
                break  # the first processor is enough
            key, _, value = line.partition(":")
            fields.setdefault(key.strip().lower(), value.strip())
    return fields


def cpu_signature(fields: dict[str, str] | None = None) -> str:
    """``"family F model M stepping S"`` from ``/proc/cpuinfo``: what tells CPU generations apart where the
    model name does not (a cloud VM's ``"AMD EPYC"`` is a Zen 1 or a Zen 5); the platform's machine otherwise."""
    info = cpu_fields() if fields is None else fields
    if "cpu family" in info and "model" in info:
        return f"family {info['cpu family']} model {info['model']} stepping {info.get('stepping', '?')}"
    return platform.machine()


def cpu_vector_isa(fields: dict[str, str] | None = None) -> str | None:
    """The widest x86 vector instruction set the CPU offers (``"AVX-512"``, ``"AVX2"`` or ``"AVX"``), which
    decides which kernels oneDNN and MKL run (a convolution can take three times as long without AVX-512);
    ``None`` where the flags name none of them."""
    flags = set((cpu_fields() if fields is None else fields).get("flags", "").split())
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX")):
        if flag in flags:
            return name
    return None


def cpu_model_name(fields: dict[str, str] | None = None) -> str:
    """The CPU model as ``/proc/cpuinfo`` names it (``fields``: :func:`cpu_fields`, read here when not given),
    or the platform's processor string."""
    name = (cpu_fields() if fields is None else fields).get("model name")
    return name or platform.processor() or platform.machine()


def available_memory_bytes() -> int:
    """Memory available to new allocations (``MemAvailable``), or total RAM where that is unknown."""
    meminfo = Path("/proc/meminfo")
    if meminfo.is_file():
        fields = dict(line.split(":", 1) for line in meminfo.read_text().splitlines() if ":" in line)
        for key in ("MemAvailable", "MemTotal"):
            if key in fields:
                return int(fields[key].strip().split()[0]) * 1024
    pages = os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    return int(pages * os.sysconf("SC_PAGE_SIZE")) if pages else 8 * BYTES_PER_GIB
