"""Describe the machine this process runs on (reads ``/proc``; imports torch when asked to)."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
from pathlib import Path
from typing import Any

from srifty.compute.machine import MachineRecord
from srifty.compute.measure.device import cpu_fields, cpu_model_name, cpu_signature
from srifty.units import BYTES_PER_GIB


def _memory_gib() -> int:
    path = Path("/proc/meminfo")
    if path.is_file():
        match = re.search(r"^MemTotal:\s*(\d+)\s*kB", path.read_text(), flags=re.MULTILINE)
        if match:
            return round(int(match.group(1)) * 1024 / BYTES_PER_GIB)
    return 0


def _nvidia_driver() -> str | None:
    path = Path("/proc/driver/nvidia/version")
    if path.is_file():
        match = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?([0-9.]+)", path.read_text(errors="replace"))
        if match:
            return match.group(1)
    try:
        result = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    first = result.stdout.strip().splitlines()[:1]
    return first[0].strip() if result.returncode == 0 and first else None


def _torch_facts() -> dict[str, Any]:
    """torch's version, GPUs and numeric settings, or nothing where torch is not installed."""
    try:
        import torch
    except ImportError:
        return {}
    flags = {
        "float32_matmul_precision": str(torch.get_float32_matmul_precision()),
        "cuda.matmul.allow_tf32": str(torch.backends.cuda.matmul.allow_tf32),
        "cudnn.allow_tf32": str(torch.backends.cudnn.allow_tf32),
        "intra_op_threads": str(torch.get_num_threads()),
    }
    facts: dict[str, Any] = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "numeric_flags": flags,
    }
    if torch.cuda.is_available():
        facts["gpu_count"] = torch.cuda.device_count()
        facts["gpu_name"] = torch.cuda.get_device_name(0)
        facts["gpu_driver"] = _nvidia_driver()
    return facts


def current_machine(include_torch: bool = True) -> MachineRecord:
    """The record of the machine this process runs on (imports torch when ``include_torch`` and installed)."""
    info = cpu_fields()
    signature = cpu_signature(info)
    machine_id_path = Path("/etc/machine-id")
    machine_id = machine_id_path.read_text().strip() or None if machine_id_path.is_file() else None
    mhz = info.get("cpu mhz")
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return MachineRecord(
        hostname=socket.gethostname(),
        machine_id=machine_id,
        cpu_model=cpu_model_name(info),
        cpu_signature=signature,
        cpu_mhz=round(float(mhz), 1) if mhz else None,
        logical_cpus=cpus,
        memory_gib=_memory_gib(),
        kernel=platform.release(),
        python_version=platform.python_version(),
        **(_torch_facts() if include_torch else {}),
    )
