"""Estimate a model's profile on a GPU with the calibrated GPU model (srifty's default estimator).

Two sources, as :func:`~srifty.compute.estimate.choose_source` picks them:

* **A measured GPU profile** (someone profiled on the one GPU they have): each phase's measured curve is
  scaled by the model's ratio between the two GPUs at the same batch (Habitat-style, with the calibrated
  efficiencies on both sides), ``t'_p(B) = t_p(B) · M_p(target, B) / M_p(source, B)``; the iteration scales
  with the sum of its phases. The source's own error cancels in the ratio; what remains is how well the
  model ranks the two GPUs.
* **A CPU profile**: the curves are the model's prediction from the op counts alone
  (:func:`srifty.compute.gpu_model.predict_ms`): the CPU's time per op says little about a GPU's.

Either way the estimate is marked (``estimated_from``, an :class:`~srifty.compute.profile.EstimateInfo`
with the method, the source, the numeric units used, every assumption and the **expected error** from the
calibration's leave-one-model-out cross-validation). Its per-iteration spread is the median spread the
H200 measured (a GPU's iterations vary far less than a shared CPU's), the systematic error is carried
separately (:attr:`Profile.expected_error`) for the simulator and planner to widen their spread by.

Pure numpy.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from srifty.catalog import Catalog, GpuSpec
from srifty.compute.estimate import _check_usable, assemble_estimate, batch_grid, curve, resolve_gpu, target_max_batch
from srifty.compute.gpu_fit import GpuCalibration, default_gpu_calibration
from srifty.compute.gpu_model import WorkFeatures, predict_ms, work_features
from srifty.compute.numerics import NumericSettings
from srifty.compute.profile import PHASES, EstimateInfo, Profile, SpreadPoint
from srifty.compute.work import WORK_PHASES, OpWork
from srifty.errors import CatalogError, ProfileError

CALIBRATED_ASSUMPTIONS = (
    "kernel time per op = count x per-kernel cost + FLOPs / (efficiency x peak of the unit that runs it) "
    "combined with bytes / (efficiency x memory bandwidth); host issue time per op as on the H200 host the "
    "calibration measured (eager PyTorch, one Python process); efficiencies fitted to real GPU measurements "
    "(H200 curves, public training throughput); largest batch from the memory model"
)


def _source_gpu(source: Profile, catalog: Catalog | None) -> GpuSpec | None:
    """The catalog GPU a measured source ran on, or ``None`` for a CPU source."""
    if source.device.kind != "cuda" or not source.device.gpu:
        return None
    try:
        return resolve_gpu(source.device.gpu, catalog)
    except CatalogError:
        raise ProfileError(
            f"the profile was measured on a GPU ({source.device.name}) that srifty's datasheet table does not "
            "list, so it cannot be scaled to another GPU; add its row to gpu_specs.csv."
        ) from None


def _spread(calibration: GpuCalibration, grid: NDArray[np.float64]) -> tuple[SpreadPoint, ...]:
    cv = calibration.gpu_cv
    return tuple(
        SpreadPoint(int(b), cv.get("fw", 0.02), cv.get("bw", 0.02), cv.get("step", 0.02), cv.get("iter", 0.02))
        for b in grid
        if b == int(b)
    )


def calibrated_profile(
    source: Profile,
    gpu: GpuSpec | str,
    *,
    catalog: Catalog | None = None,
    calibration: GpuCalibration | None = None,
    settings: NumericSettings | None = None,
    bf16_as_fp16: bool = False,
    reason: str | None = None,
) -> Profile:
    """Estimate ``source``'s profile on ``gpu`` with the calibrated GPU model (see the module docstring).

    Args:
        source: a measured profile with op counts (CPU or GPU).
        gpu: the target, a datasheet GPU name or its :class:`GpuSpec`.
        catalog: where names are looked up (default: the bundled catalog).
        calibration: the fitted parameters (default: the bundled calibration).
        settings: numeric settings to estimate under (default: the ones the source ran with).
        bf16_as_fp16: on a GPU without BF16 tensor cores, price bf16 ops as fp16 (recorded as an assumption).
        reason: why this source was chosen (recorded).

    Raises:
        CatalogError: unknown GPU name.
        ProfileError: the source is an estimate, has no op counts, or the model does not fit the GPU.
        PrecisionError: the source's arithmetic has no counterpart on the GPU (bf16 before Ampere).
    """
    spec = resolve_gpu(gpu, catalog)
    work = _check_usable(source, need_times=False)
    calibration = calibration or default_gpu_calibration()
    settings = settings or source.numeric_settings
    params = calibration.params
    max_batch, limited_by = target_max_batch(source, spec)
    on_gpu = _source_gpu(source, catalog)
    keep = set(source.latency["iter"].vertices_batch) if on_gpu is not None else set()
    grid = batch_grid([source.latency[p] for p in PHASES] if on_gpu is not None else [], max_batch)
    target = work_features(work, grid, spec, settings, bf16_as_fp16=bf16_as_fp16)
    if on_gpu is None:
        values = predict_ms(target, params)
        kind = f"from the op counts of the {source.device.label} profile (its op times are not used)"
    else:
        values = _scaled(source, work, grid, on_gpu, target, calibration, bf16_as_fp16)
        kind = f"the {on_gpu.name} measurement scaled by the model's {on_gpu.name}-to-{spec.name} ratio"
    latency = {p: curve(grid, values[p], keep) for p in PHASES}
    expected = calibration.expected_error(spec.generation, gpu_sourced=on_gpu is not None)
    if on_gpu is not None and on_gpu.name == spec.name:
        expected = 0.0
    units = ", ".join(f"{c} on {u}" for c, u in sorted(target.units.items())) or "no FLOP-carrying ops"
    assumptions = "; ".join((CALIBRATED_ASSUMPTIONS, *target.assumptions))
    if not settings.recorded:
        assumptions += "; numeric settings not recorded in the profile: PyTorch's defaults assumed"
    info = EstimateInfo(
        method="calibrated",
        source_device=source.device.label,
        source_device_name=source.device.name,
        source_created_at=source.created_at,
        reason=f"{reason or f'the only source given: {source.device.label}'}; {kind}",
        launch_floor_s=0.0,
        assumptions=assumptions,
        expected_error=expected,
        numerics=f"{units} ({settings.describe()})",
        calibration=f"gpu-calibration fitted {calibration.created_at} by srifty {calibration.srifty_version}",
    )
    estimate = assemble_estimate(source, spec, latency, max_batch, limited_by, info, 1.0, work)
    return replace(estimate, spread_points=_spread(calibration, grid), numerics=settings)


def _scaled(
    source: Profile,
    work: OpWork,
    grid: NDArray[np.float64],
    on_gpu: GpuSpec,
    target: WorkFeatures,
    calibration: GpuCalibration,
    bf16_as_fp16: bool,
) -> dict[str, NDArray[np.float64]]:
    """GPU → GPU: the source's measured phases times the model's target/source ratio; iteration = their sum
    scaled like the source's own iteration curve."""
    measured = {p: source.predict_ms(p, grid) for p in PHASES}
    on_source = predict_ms(
        work_features(work, grid, on_gpu, source.numeric_settings, bf16_as_fp16=bf16_as_fp16), calibration.params
    )
    on_target = predict_ms(target, calibration.params)
    out = {p: measured[p] * on_target[p] / np.maximum(on_source[p], 1e-12) for p in WORK_PHASES}
    phases_src = sum(measured[p] for p in WORK_PHASES)
    phases_tgt = sum(out[p] for p in WORK_PHASES)
    out["iter"] = measured["iter"] * np.divide(phases_tgt, phases_src, out=np.ones_like(grid), where=phases_src > 0)
    return out
