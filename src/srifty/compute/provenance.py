"""Guards against mixing measurements from different machines.

Two mistakes these catch, each named by file:

* **Mixing.** The profiles of one job stand for its instance types. Measured GPU profiles naturally come
  from different machines (one per GPU type), but they should share torch's version and, on GPUs, its
  numeric settings (TF32, matmul precision), or their differences are partly software: that is warned
  about. CPU profiles that stand for different types of one job (the testbed's CPU-quota "types") are only
  comparable when measured on one machine: mixing machines there is refused.
* **A foreign measurement used as a local one.** A benchmark that predicts what runs on *this* machine
  from a CPU profile must use a profile measured here; one from elsewhere (or of an unknown machine) is
  refused, and the benchmark re-measures.
"""

from __future__ import annotations

from collections.abc import Mapping

from srifty.compute.machine import IDENTITY_FIELDS, MachineRecord
from srifty.compute.profile import Profile
from srifty.errors import ProfileError

#: Numeric settings compared between GPU profiles of one job (threads are the CPU's business).
GPU_NUMERIC_FLAGS = ("float32_matmul_precision", "cuda.matmul.allow_tf32", "cudnn.allow_tf32")


def _measured(profiles: Mapping[str, Profile]) -> dict[str, tuple[Profile, MachineRecord]]:
    return {name: (p, p.machine) for name, p in profiles.items() if not p.is_estimate and p.machine is not None}


def mixing_warnings(profiles: Mapping[str, Profile]) -> list[str]:
    """Warnings about measured profiles of one job whose software or GPU numeric settings differ.

    Args:
        profiles: the job's profiles, keyed by a name the user recognises (a file, or the GPU it stands for).
    """
    measured = _measured(profiles)
    warnings = []
    versions = {name: m.torch_version for name, (_, m) in measured.items()}
    if len(set(versions.values())) > 1:
        listed = ", ".join(f"{name}: torch {v}" for name, v in sorted(versions.items()))
        warnings.append(
            f"the profiles of this job were measured with different torch versions ({listed}); timings differ "
            "between versions too. Re-measure them with one version for a like-for-like plan."
        )
    gpu = {
        name: tuple(m.numeric_flags.get(f) for f in GPU_NUMERIC_FLAGS)
        for name, (p, m) in measured.items()
        if p.device.kind == "cuda"
    }
    if len(set(gpu.values())) > 1:
        listed = "; ".join(
            f"{name}: " + ", ".join(f"{f}={v}" for f, v in zip(GPU_NUMERIC_FLAGS, flags, strict=True))
            for name, flags in sorted(gpu.items())
        )
        warnings.append(
            f"the GPU profiles of this job ran under different numeric settings ({listed}); part of their "
            "difference is the numeric mode, not the GPU. Re-measure them under the same settings."
        )
    return warnings


def check_one_machine(profiles: Mapping[str, Profile]) -> None:
    """Refuse measured CPU profiles of one job that come from different machines.

    Raises:
        ProfileError: naming two profiles and how their machines differ.
    """
    cpu = {name: m for name, (p, m) in _measured(profiles).items() if p.device.kind == "cpu"}
    names = sorted(cpu)
    for other in names[1:]:
        if not cpu[names[0]].same_machine(cpu[other]):
            diff = "; ".join(cpu[names[0]].differences(cpu[other]))
            raise ProfileError(
                f"CPU profiles {names[0]} and {other} were measured on different machines ({diff}). The CPU "
                "profiles of one job stand for types on one machine; measure them all on the same machine."
            )


def require_this_machine(profile: Profile, origin: str, here: MachineRecord) -> None:
    """Refuse a profile measured on another machine, with another torch, or on an unknown machine, where a
    measurement on this machine is needed.

    Args:
        origin: where the profile came from (a file), for the message.
        here: this machine's record (:func:`srifty.compute.measure.machine.current_machine`).

    Raises:
        ProfileError: naming ``origin``, how the machines differ, and the fix (measure it here).
    """
    if profile.is_estimate:
        raise ProfileError(f"{origin} is an estimate, not a measurement; measure the model on this machine.")
    if profile.machine is None:
        raise ProfileError(
            f"{origin} does not record the machine it was measured on (written before srifty recorded it), so it "
            "cannot stand for a measurement on this machine; measure it again here with `srifty profile`."
        )
    local = here
    fields = (*IDENTITY_FIELDS, "torch_version")
    diff = "; ".join(profile.machine.differences(local, fields=fields))
    if diff:
        raise ProfileError(
            f"{origin} was measured on another machine ({profile.machine.describe()}; here: {local.describe()}; "
            f"{diff}); measure it again here with `srifty profile`."
        )
