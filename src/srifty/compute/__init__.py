"""Compute stage: profile a real PyTorch model and model its latency and memory against batch size; estimate
its profile on GPUs nobody measured (roofline scaling op by op, :func:`estimate_profile`). The Paleo
baseline's analytical model lives with the other baselines, in :mod:`srifty.plan.methods.paleo`.

The data types, fitting and estimating functions here are pure numpy; measuring (:func:`profile_model`)
needs torch and imports it only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srifty.compute.buckets import Bucket, assign_buckets
from srifty.compute.estimate import (
    SourceChoice,
    choose_source,
    estimate_from,
    estimate_profile,
    measure_command,
    pick_source,
    resolve_gpu,
    source_peaks,
)
from srifty.compute.latency import LatencyModel, fit_latency_curve, fit_linear, fit_piecewise_linear
from srifty.compute.memory import MemoryModel, fit_memory_model
from srifty.compute.names import parse_model_name
from srifty.compute.profile import DeviceInfo, EstimateInfo, ParamInfo, PhaseSamples, Profile, load_profile
from srifty.compute.roofline import DevicePeaks, gpu_peaks, roofline_ratio, roofline_time_s
from srifty.compute.work import OpRecord, OpWork

if TYPE_CHECKING:
    from srifty.compute.profiler import ProfileOptions, ProgressFn


def profile_model(name: str, options: ProfileOptions | None = None, progress: ProgressFn | None = None) -> Profile:
    """Profile model ``name`` (see :func:`srifty.compute.profiler.profile_model`). Imports torch."""
    from srifty.compute import profiler

    return profiler.profile_model(name, options or profiler.ProfileOptions(), progress)


def profile_options(**kwargs: Any) -> ProfileOptions:
    """Build :class:`srifty.compute.profiler.ProfileOptions` (imports torch)."""
    from srifty.compute.profiler import ProfileOptions

    return ProfileOptions(**kwargs)


__all__ = [
    "Bucket",
    "DeviceInfo",
    "DevicePeaks",
    "EstimateInfo",
    "LatencyModel",
    "MemoryModel",
    "OpRecord",
    "OpWork",
    "ParamInfo",
    "PhaseSamples",
    "Profile",
    "SourceChoice",
    "assign_buckets",
    "choose_source",
    "estimate_from",
    "estimate_profile",
    "fit_latency_curve",
    "fit_linear",
    "fit_memory_model",
    "fit_piecewise_linear",
    "gpu_peaks",
    "load_profile",
    "measure_command",
    "parse_model_name",
    "pick_source",
    "profile_model",
    "profile_options",
    "resolve_gpu",
    "roofline_ratio",
    "roofline_time_s",
    "source_peaks",
]
