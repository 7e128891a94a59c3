"""The emulated cloud's compute truth: how fast a model really trains on a GPU type (EMULATED).

No GPU was available to this project, so for most GPU types the truth is an *estimate*: srifty's
cross-GPU estimate (:func:`srifty.compute.estimate_profile`) of a measured source profile (the CPU
profiles bundled with srifty, or any given), calibrated to public GPU training throughput where the
model has some (:mod:`srifty.cloud.reference`), times a hidden per-GPU-type factor drawn once per seed
(:class:`~srifty.cloud.params.HiddenDraw`). The factor stands for the estimate's own error, so a planner
that learned the estimate without measuring would still be wrong by it. Where a profile *measured on
that GPU* is among the sources, the truth is that profile's fitted curves instead, with no factor, and
per-iteration variation is resampled from its raw samples (their ratios to the mean at each batch).

Every VM multiplies its latencies by its allocation's spatial factor and, per iteration, by a temporal
factor: ``N(1, σ)`` clipped, or a resampled ratio (see :mod:`srifty.cloud.params`). Phases (forward,
backward, step) of one VM and iteration share the factor: interference slows the whole iteration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.catalog import Catalog, GpuSpec
from srifty.cloud.params import CloudParams, HiddenDraw
from srifty.cloud.reference import calibrate
from srifty.compute import LatencyModel, Profile, choose_source, estimate_profile
from srifty.errors import ProfileError

COMPUTE_PHASES = ("fw", "bw", "step")


@dataclass(frozen=True)
class ComputeTruth:
    """True mean latency of one model's phases on one GPU type, and its per-iteration variation.

    Attributes:
        model: the model's name.
        gpu: the catalog GPU name.
        curves: ``fw``, ``bw``, ``step`` mean latency (ms) against local batch, before ``factor``.
        factor: hidden multiplier on every curve, times the public-reference calibration (1 for a measured
            GPU profile).
        max_batch: largest local batch that fits the GPU's memory.
        origin: where the curves came from, in words.
        residuals: resampled per-iteration factors (from a measured GPU profile), or empty for ``N(1, σ)``.
        temporal_sigma: σ of the parametric per-iteration factor.
        clip: parametric factors are clipped to ``1 ± clip``.
    """

    model: str
    gpu: str
    curves: Mapping[str, LatencyModel]
    factor: float
    max_batch: int
    origin: str
    residuals: tuple[float, ...] = ()
    temporal_sigma: float = 0.015
    clip: float = 0.045

    def mean_ms(self, phase: str, batch: ArrayLike) -> NDArray[np.float64]:
        """True mean latency (ms) of ``phase`` at ``batch`` on a VM whose spatial factor is 1."""
        return self.factor * self.curves[phase].predict_ms(batch)

    def temporal_factors(self, rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.float64]:
        """Per-iteration factors of the given shape (resampled where measured, else clipped normal)."""
        if self.residuals:
            return rng.choice(np.asarray(self.residuals), size=shape)
        draws = rng.normal(1.0, self.temporal_sigma, size=shape)
        return np.clip(draws, 1.0 - self.clip, 1.0 + self.clip)


def measured_on(sources: Sequence[Profile], gpu: str) -> Profile | None:
    """A profile measured on ``gpu`` itself with raw samples, if any (the first one)."""
    for p in sources:
        if p.device.gpu == gpu and not p.is_estimate and p.samples:
            return p
    return None


def residual_ratios(profile: Profile) -> tuple[float, ...]:
    """Each timed iteration's latency over its batch's robust mean, for every probed batch."""
    out: list[float] = []
    for s in profile.samples:
        mean = s.robust_mean_ms("iter")
        if mean > 0:
            out.extend(float(v) / mean for v in s.iter_ms)
    return tuple(out)


def build_compute_truth(
    sources: Sequence[Profile],
    spec: GpuSpec,
    hidden: HiddenDraw,
    params: CloudParams,
    catalog: Catalog | None = None,
) -> ComputeTruth:
    """The truth for ``sources``' model on the GPU ``spec`` (see the module docstring).

    Raises:
        ProfileError: no sources, or none usable to estimate this GPU (no op counts).
    """
    if not sources:
        raise ProfileError(f"the emulated cloud has no source profile to build the truth for {spec.name} from")
    model = sources[0].model
    own = measured_on(sources, spec.name)
    if own is not None:
        limit = own.max_batch if own.max_batch_limited_by == "gpu_memory" else own.memory.max_batch(spec.memory_bytes)
        return ComputeTruth(
            model=model,
            gpu=spec.name,
            curves={p: own.latency[p] for p in COMPUTE_PHASES},
            factor=1.0,
            max_batch=max(int(limit), 1),
            origin=f"measured on {own.device.name}: fitted curves, per-iteration ratios resampled",
            residuals=residual_ratios(own),
            temporal_sigma=params.compute_temporal_sigma,
            clip=params.compute_clip,
        )
    choice = choose_source(sources, spec, catalog)
    estimate = estimate_profile(choice.profile, spec, catalog=catalog, reason=choice.reason)
    calibration = calibrate(sources, catalog)
    factor = hidden.compute_factor(spec.name) * calibration.factor
    return ComputeTruth(
        model=model,
        gpu=spec.name,
        curves={p: estimate.latency[p] for p in COMPUTE_PHASES},
        factor=factor,
        max_batch=estimate.max_batch,
        origin=(
            f"EMULATED: srifty's roofline estimate from the {choice.profile.device.label} profile "
            f"({choice.profile.device.name}), {calibration.note}, times a hidden factor"
        ),
        residuals=(),
        temporal_sigma=params.compute_temporal_sigma,
        clip=params.compute_clip,
    )
