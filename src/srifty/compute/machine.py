"""Which machine a measurement was made on, so that measurements from different machines are not mixed.

The record is a pure value; :func:`srifty.compute.measure.machine.current_machine` describes the machine
this process runs on.

A measured profile carries a :class:`MachineRecord`: the host (name, machine id), the CPU (model, family,
model and stepping, clock, cores this process may use), memory, the GPU (name, count, driver), and the
software and numeric settings timing depends on (torch and CUDA versions, TF32 flags, float32 matmul
precision, intra-op threads). Two records are *the same machine* when their hardware identity matches
(:meth:`MachineRecord.identity`); the software fields are compared separately, since upgrading torch on
one machine also changes timings.

Limits, said plainly: cloned VMs of one hardware class that share a host name and an image's machine id
cannot be told apart from inside; they count as one machine. Profiles written before srifty recorded
machines (no ``machine`` record) are of an unknown machine: they load, and checks that need the record
say so instead of guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

#: Fields that say whether two records describe the same hardware.
IDENTITY_FIELDS = (
    "hostname",
    "machine_id",
    "cpu_model",
    "cpu_signature",
    "logical_cpus",
    "memory_gib",
    "gpu_name",
    "gpu_count",
    "gpu_driver",
)
#: Software and numeric settings that change timings on the same hardware.
SOFTWARE_FIELDS = ("torch_version", "cuda_version", "numeric_flags")


@dataclass(frozen=True)
class MachineRecord:
    """The machine and settings a measurement ran under.

    Attributes:
        hostname: the host name.
        machine_id: ``/etc/machine-id`` where it exists (may be shared by VMs cloned from one image).
        cpu_model: the CPU model as ``/proc/cpuinfo`` names it.
        cpu_signature: ``family F model M stepping S`` (x86) or the platform's machine string.
        cpu_mhz: the CPU clock ``/proc/cpuinfo`` reports, in MHz (informational: it drifts).
        logical_cpus: CPU cores this process may run on.
        memory_gib: total memory, in GiB (rounded).
        kernel: the kernel release.
        python_version: the Python version.
        torch_version: the torch version, or ``None`` where torch is not installed.
        cuda_version: the CUDA version torch was built with.
        gpu_name: the first visible GPU's name, or ``None``.
        gpu_count: visible GPUs.
        gpu_driver: the NVIDIA driver version, where readable.
        numeric_flags: the numeric settings timing depends on, as strings (TF32 flags, float32 matmul
            precision, intra-op threads).
    """

    hostname: str
    machine_id: str | None
    cpu_model: str
    cpu_signature: str
    cpu_mhz: float | None
    logical_cpus: int
    memory_gib: int
    kernel: str
    python_version: str
    torch_version: str | None = None
    cuda_version: str | None = None
    gpu_name: str | None = None
    gpu_count: int = 0
    gpu_driver: str | None = None
    numeric_flags: Mapping[str, str] = field(default_factory=dict)

    def identity(self) -> dict[str, Any]:
        """The hardware identity: equal identities are the same machine."""
        return {name: getattr(self, name) for name in IDENTITY_FIELDS}

    def same_machine(self, other: MachineRecord) -> bool:
        """Whether ``other`` describes the same hardware (software may differ)."""
        return self.identity() == other.identity()

    def differences(
        self, other: MachineRecord, fields: tuple[str, ...] = IDENTITY_FIELDS + SOFTWARE_FIELDS
    ) -> list[str]:
        """``"name: 'mine' vs 'theirs'"`` for each of ``fields`` that differs."""
        out = []
        for name in fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, Mapping):
                mine, theirs = dict(mine), dict(theirs)
            if mine != theirs:
                out.append(f"{name}: {_shown(mine)} vs {_shown(theirs)}")
        return out

    def describe(self) -> str:
        """One line: host, CPU, GPU and torch."""
        gpu = f", {self.gpu_count}x {self.gpu_name} (driver {self.gpu_driver or '?'})" if self.gpu_name else ""
        torch = f", torch {self.torch_version}" if self.torch_version else ""
        return f"{self.hostname}: {self.cpu_model} ({self.cpu_signature}), {self.logical_cpus} cores{gpu}{torch}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        doc = asdict(self)
        doc["numeric_flags"] = dict(self.numeric_flags)
        return doc

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MachineRecord:
        """Inverse of :meth:`to_dict`; unknown keys are ignored (a newer srifty may record more).

        Raises:
            ValueError: a required field is missing or of the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"the machine record must be a mapping, got {type(data).__name__}")
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        try:
            record = cls(**known)
        except TypeError as err:
            raise ValueError(f"the machine record is incomplete ({err})") from None
        if not isinstance(record.numeric_flags, Mapping):
            raise ValueError("the machine record's numeric_flags must be a mapping")
        return record


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
