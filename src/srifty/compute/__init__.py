"""Compute stage, the models: a model's latency and memory against batch size, its gradient timeline and
DDP buckets (:class:`Profile`), fitted from measurements, and its profile estimated on GPUs nobody measured
(the calibrated GPU model, :func:`calibrated_profile`; the older roofline scaling op by op,
:func:`estimate_profile`).

Everything here is pure (numpy, no torch). Measuring a real model with torch is
:mod:`srifty.compute.measure`; the Paleo baseline's analytical model lives with the other baselines, in
:mod:`srifty.plan.methods.paleo`.
"""

from __future__ import annotations

from srifty.compute.buckets import Bucket, assign_buckets
from srifty.compute.calibrated import calibrated_profile
from srifty.compute.calibration import Calibration, default_calibration, load_calibration
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
from srifty.compute.numerics import NumericSettings, PrecisionError
from srifty.compute.profile import DeviceInfo, EstimateInfo, ParamInfo, PhaseSamples, Profile, load_profile
from srifty.compute.roofline import DevicePeaks, gpu_peaks, roofline_ratio, roofline_time_s
from srifty.compute.work import OpRecord, OpWork

__all__ = [
    "Bucket",
    "Calibration",
    "DeviceInfo",
    "DevicePeaks",
    "EstimateInfo",
    "LatencyModel",
    "MemoryModel",
    "NumericSettings",
    "OpRecord",
    "OpWork",
    "ParamInfo",
    "PhaseSamples",
    "PrecisionError",
    "Profile",
    "SourceChoice",
    "assign_buckets",
    "calibrated_profile",
    "choose_source",
    "default_calibration",
    "estimate_from",
    "estimate_profile",
    "fit_latency_curve",
    "fit_linear",
    "fit_memory_model",
    "fit_piecewise_linear",
    "gpu_peaks",
    "load_calibration",
    "load_profile",
    "measure_command",
    "parse_model_name",
    "pick_source",
    "resolve_gpu",
    "roofline_ratio",
    "roofline_time_s",
    "source_peaks",
]
