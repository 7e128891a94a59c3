"""Workloads for the emulated cloud, from srifty's profiles: what a model *is*, independent of any device.

The emulated cloud builds its compute truth from measurements (:mod:`srifty.cloud.compute`) and counts the
bundled models itself from their definitions (:mod:`srifty.cloud.architectures`); for a model it has no
definition of (a user's own), the only description there is is the profile the user gives, so it takes one
from that profile's op counts here: its parameters in ready order, and per phase the FLOPs per sample of
convolutions and matrix products, bytes per sample and kernel-launching ops. Counts only: no time measured on
the profile's device is handed over.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from srifty.cloud import H200_NAMES, CloudError
from srifty.cloud import workloads as bundled_workloads
from srifty.compute import Profile, load_profile
from srifty.errors import ArtifactError, ProfileError

#: ATen ops that launch no kernel (views, metadata, allocation, profiler marks).
NO_KERNEL = frozenset(
    {
        "detach",
        "view",
        "_unsafe_view",
        "t",
        "transpose",
        "expand",
        "permute",
        "reshape",
        "as_strided",
        "slice",
        "select",
        "unsqueeze",
        "squeeze",
        "split",
        "split_with_sizes",
        "alias",
        "empty",
        "empty_like",
        "empty_strided",
        "lift_fresh",
        "_record_function_enter_new",
        "_record_function_exit",
        "unbind",
        "_reshape_alias",
    }
)
MATMUL = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear"})
EMPTY_PHASE = {"conv_flops": 0.0, "matmul_flops": 0.0, "other_flops": 0.0, "bytes": 0.0, "fixed_bytes": 0.0, "ops": 0}


def op_class(op: str) -> str:
    """``conv``, ``matmul`` or ``other`` for an ATen overload name such as ``aten.convolution.default``."""
    name = op.split(".")[1] if "." in op else op
    if name.startswith(("convolution", "cudnn_convolution")):
        return "conv"
    if name in MATMUL or "scaled_dot_product" in name:
        return "matmul"
    return "other"


def _per_sample(pair: tuple[float, float], batches: tuple[int, int]) -> tuple[float, float]:
    """``(fixed, per sample)`` of a count linear in the batch through two points."""
    lo, hi = batches
    if hi == lo:
        return 0.0, pair[1] / hi
    slope = (pair[1] - pair[0]) / (hi - lo)
    return pair[0] - slope * lo, slope


def workload_from_profile(profile: Profile, source: str = "") -> dict[str, Any]:
    """The workload record of ``profile``'s model (see the module docstring).

    Raises:
        ProfileError: the profile has no op counts.
    """
    if profile.work is None:
        raise ProfileError(
            f"the profile of {profile.model} has no op counts; the emulated cloud needs them. Profile it again "
            "without --no-op-counts."
        )
    phases: dict[str, dict[str, float]] = {key: dict(EMPTY_PHASE) for key in ("fw", "bw", "step")}
    for rec in profile.work.records:
        ph = phases.setdefault(rec.phase, dict(EMPTY_PHASE))
        fixed_f, slope_f = _per_sample(rec.flops, profile.work.batches)
        fixed_b, slope_b = _per_sample(rec.bytes, profile.work.batches)
        ph[f"{op_class(rec.op)}_flops"] += max(slope_f, 0.0) + (max(fixed_f, 0.0) if rec.phase == "step" else 0.0)
        ph["bytes"] += max(slope_b, 0.0)
        ph["fixed_bytes"] += max(fixed_b, 0.0)
        if rec.op.split(".")[1] not in NO_KERNEL:
            ph["ops"] += rec.count
    for key in ("fw", "bw", "step"):
        phases.setdefault(
            key,
            {"conv_flops": 0.0, "matmul_flops": 0.0, "other_flops": 0.0, "bytes": 0.0, "fixed_bytes": 0.0, "ops": 0},
        )
    return {
        "model": profile.model,
        "kind": profile.model_kind,
        "input": profile.input_description,
        "h200_name": H200_NAMES.get(profile.model, profile.model),
        "n_params": profile.n_params,
        "param_bytes": profile.param_bytes,
        "params_ready_order": [
            {
                "name": profile.params[i].name,
                "bytes": profile.params[i].size_bytes,
                "ready_frac": round(profile.params[i].ready_frac, 6),
            }
            for i in profile.ready_order
        ],
        "phases": {
            k: {kk: (round(vv, 1) if isinstance(vv, float) else vv) for kk, vv in v.items()} for k, v in phases.items()
        },
        "source": source or f"op counts of a {profile.device.label} profile of {profile.model}",
    }


def profiles_in(dirs: Sequence[Path], precision: str = "fp32") -> dict[str, Profile]:
    """Measured profiles with op counts in ``dirs`` (folders of ``*.json``, or profile files; the first of each
    model wins; other JSON is skipped).

    Raises:
        CloudError: a path that does not exist.
    """
    found: dict[str, Profile] = {}
    for folder in dirs:
        if not Path(folder).exists():
            raise CloudError(f"profile folder '{folder}' does not exist. Check the path.")
        paths = [Path(folder)] if Path(folder).is_file() else sorted(Path(folder).glob("*.json"))
        for path in paths:
            try:
                profile = load_profile(path)
            except (ArtifactError, ProfileError, json.JSONDecodeError):
                continue  # not a profile file
            if profile.precision == precision and not profile.is_estimate and profile.work is not None:
                found.setdefault(profile.model, profile)
    return found


def extra_workloads(models: Sequence[str], given: dict[str, Profile]) -> dict[str, dict[str, Any]]:
    """Workloads of the ``models`` the cloud does not bundle, from the ``given`` profiles.

    Raises:
        CloudError: a model neither bundled nor given, naming how to make a profile of it.
    """
    out = {}
    bundled = bundled_workloads()
    for model in models:
        if model in bundled:
            continue
        if model not in given:
            raise CloudError(
                f"the emulated cloud has no workload of '{model}' and no profile of it was given; make one with "
                f"`srifty profile --model {model} --out DIR/profile.json` and pass --profiles DIR."
            )
        out[model] = workload_from_profile(given[model])
    return out
