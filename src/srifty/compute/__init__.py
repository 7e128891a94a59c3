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
from srifty.compute.bundled import bundled_profile_paths, bundled_profiles_for, profile_filename
from srifty.compute.estimate import (
    SourceChoice,
    assemble_estimate,
    batch_grid,
    choose_source,
    curve,
    estimate_from,
    estimate_profile,
    measure_command,
    pick_source,
    resolve_gpu,
    source_peaks,
    target_max_batch,
)
from srifty.compute.gpu_estimate import calibrated_profile
from srifty.compute.gpu_fit import (
    GpuCalibration,
    GpuCalibrationData,
    calibrate_gpu_model,
    default_gpu_calibration,
    load_gpu_calibration,
)
from srifty.compute.gpu_measurements import (
    H200_GPU,
    bundled_srifty_curves,
    curves_from_profiles,
    op_count_profile,
    read_h200_jsonl,
    read_public_csv,
    workload,
)
from srifty.compute.hf_configs import find_hf_config, missing_hf_config
from srifty.compute.interference import InterferenceRepetition, OverlapFactors
from srifty.compute.latency import LatencyModel, fit_latency_curve, fit_linear, fit_piecewise_linear
from srifty.compute.memory import MemoryModel, find_max_batch, fit_memory_model
from srifty.compute.names import HF_MODELS, parse_model_name
from srifty.compute.numerics import NumericSettings, PrecisionError
from srifty.compute.probing import param_buckets, probe_latency
from srifty.compute.profile import PHASES, DeviceInfo, EstimateInfo, ParamInfo, PhaseSamples, Profile, load_profile
from srifty.compute.provenance import check_one_machine, mixing_warnings, require_this_machine
from srifty.compute.roofline import DevicePeaks, gpu_peaks, roofline_ratio, roofline_time_s
from srifty.compute.sharding import (
    HALF_BYTES,
    HALF_PRECISIONS,
    MemoryInputs,
    Strategy,
    Unit,
    gpu_options,
    max_batch_for,
    memory_inputs,
    min_shard_size,
    peak_memory,
    sharding_units,
    unit_key,
    usable_bytes,
)
from srifty.compute.work import GROUPED_CONV_FIX, OpRecord, OpWork

__all__ = [
    "GROUPED_CONV_FIX",
    "H200_GPU",
    "HALF_BYTES",
    "HALF_PRECISIONS",
    "HF_MODELS",
    "PHASES",
    "Bucket",
    "Calibration",
    "DeviceInfo",
    "DevicePeaks",
    "EstimateInfo",
    "GpuCalibration",
    "GpuCalibrationData",
    "InterferenceRepetition",
    "LatencyModel",
    "MemoryInputs",
    "MemoryModel",
    "NumericSettings",
    "OpRecord",
    "OpWork",
    "OverlapFactors",
    "ParamInfo",
    "PhaseSamples",
    "PrecisionError",
    "Profile",
    "SourceChoice",
    "Strategy",
    "Unit",
    "assemble_estimate",
    "assign_buckets",
    "batch_grid",
    "bundled_profile_paths",
    "bundled_profiles_for",
    "bundled_srifty_curves",
    "calibrate_gpu_model",
    "calibrated_profile",
    "check_one_machine",
    "choose_source",
    "curve",
    "curves_from_profiles",
    "default_calibration",
    "default_gpu_calibration",
    "estimate_from",
    "estimate_profile",
    "find_hf_config",
    "find_max_batch",
    "fit_latency_curve",
    "fit_linear",
    "fit_memory_model",
    "fit_piecewise_linear",
    "gpu_options",
    "gpu_peaks",
    "load_calibration",
    "load_gpu_calibration",
    "load_profile",
    "max_batch_for",
    "measure_command",
    "memory_inputs",
    "min_shard_size",
    "missing_hf_config",
    "mixing_warnings",
    "op_count_profile",
    "param_buckets",
    "parse_model_name",
    "peak_memory",
    "pick_source",
    "probe_latency",
    "profile_filename",
    "read_h200_jsonl",
    "read_public_csv",
    "require_this_machine",
    "resolve_gpu",
    "roofline_ratio",
    "roofline_time_s",
    "sharding_units",
    "source_peaks",
    "target_max_batch",
    "unit_key",
    "usable_bytes",
    "workload",
]
