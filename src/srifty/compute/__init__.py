"""Compute stage: profile a real PyTorch model and model its latency and memory against batch size.

The data types and fitting functions here are pure numpy; measuring (:func:`profile_model`) needs torch
and imports it only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from srifty.compute.buckets import Bucket, assign_buckets
from srifty.compute.latency import LatencyModel, fit_latency_curve, fit_linear, fit_piecewise_linear
from srifty.compute.memory import MemoryModel, fit_memory_model
from srifty.compute.names import parse_model_name
from srifty.compute.profile import DeviceInfo, ParamInfo, PhaseSamples, Profile, load_profile

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
    "LatencyModel",
    "MemoryModel",
    "ParamInfo",
    "PhaseSamples",
    "Profile",
    "assign_buckets",
    "fit_latency_curve",
    "fit_linear",
    "fit_memory_model",
    "fit_piecewise_linear",
    "load_profile",
    "parse_model_name",
    "profile_model",
    "profile_options",
]
