"""The compute profile: what was measured for one model on one device, and the models fitted to it.

A :class:`Profile` is a value; it is saved as a versioned JSON artefact (kind ``profile``). Measured
samples and fitted models are kept apart: ``samples`` are the raw per-iteration latencies at each probed
batch, ``latency`` and ``memory`` are fitted from them and never overwrite them. An *estimated* profile
(for a device nobody measured) says so in ``estimated_from`` and carries no samples of its own.

Schema 3 adds ``interference`` (an :class:`~srifty.compute.interference.InterferenceMeasurement`: how much
backward and gradient communication slow each other on the device, measured by the profiler); schema-2
files are migrated with none, and the simulator then keeps the paper's perfect overlap and says so.

A measured profile records the machine it ran on (``machine``, a :class:`~srifty.compute.machine.MachineRecord`,
kept as its own sub-record beside ``device``). Profiles written before that field existed load with
``machine`` set to ``None`` (an unknown machine); the key is optional, so the schema version is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.artifacts import Migration, read_json_artifact, write_json_artifact
from srifty.compute.buckets import Bucket, assign_buckets
from srifty.compute.interference import InterferenceMeasurement
from srifty.compute.latency import LatencyModel
from srifty.compute.machine import MachineRecord
from srifty.compute.memory import MemoryModel
from srifty.compute.numerics import NumericSettings
from srifty.compute.work import OpWork
from srifty.errors import ProfileError

PROFILE_KIND = "profile"
PROFILE_SCHEMA_VERSION = 3
#: Phase keys as profile files store them: ``fw`` (forward and loss), ``bw`` (backward), ``step`` (optimizer
#: step), ``iter`` (the whole iteration). Code names backward quantities ``*_bwd`` (``bw`` elsewhere is bandwidth).
PHASES: tuple[str, ...] = ("fw", "bw", "step", "iter")
#: Timed iterations whose coefficient of variation exceeds this are called noisy (:meth:`Profile.noisy_samples`).
NOISY_SPREAD = 0.10
Phase = Literal["fw", "bw", "step", "iter"]


#: 1σ relative error of a measured profile's mean iteration time at unprobed batches, from the held-out MAPE of
#: BENCHMARKS.md's "Compute latency model accuracy" (H200 curves 3.4 %, CPUs 5.6 %, at 1081475) times √(π/2).
MEASURED_ERROR_GPU = 0.043
MEASURED_ERROR_CPU = 0.070


@dataclass(frozen=True)
class PhaseSamples:
    """Raw timed iterations at one batch size (ms), and the peak memory measured there (bytes)."""

    batch: int
    fw_ms: tuple[float, ...]
    bw_ms: tuple[float, ...]
    step_ms: tuple[float, ...]
    iter_ms: tuple[float, ...]
    peak_bytes: float | None = None

    def pooled_with(self, other: PhaseSamples) -> PhaseSamples:
        """These samples and ``other``'s (another round at the same batch), with the larger memory peak."""
        if other.batch != self.batch:
            raise ValueError(f"cannot pool samples of batch {other.batch} with batch {self.batch}")
        peaks = [p for p in (self.peak_bytes, other.peak_bytes) if p is not None]
        return PhaseSamples(
            self.batch,
            self.fw_ms + other.fw_ms,
            self.bw_ms + other.bw_ms,
            self.step_ms + other.step_ms,
            self.iter_ms + other.iter_ms,
            max(peaks) if peaks else None,
        )

    def values(self, phase: str) -> NDArray[np.float64]:
        """The raw samples of ``phase``."""
        return np.asarray(getattr(self, f"{phase}_ms"), dtype=float)

    def mean_ms(self, phase: str) -> float:
        """Plain mean of ``phase``."""
        return float(np.mean(self.values(phase)))

    def robust_mean_ms(self, phase: str) -> float:
        """Mean of ``phase`` over samples within 3 scaled MADs of the median.

        A noisy neighbour on a shared machine can stretch one iteration many-fold; this keeps such outliers
        from moving the fitted curve while staying the mean of everything typical.
        """
        values = self.values(phase)
        median = float(np.median(values))
        mad = 1.4826 * float(np.median(np.abs(values - median)))
        if mad == 0.0:
            return median
        kept = values[np.abs(values - median) <= 3.0 * mad]
        return float(np.mean(kept))

    def std_ms(self, phase: str) -> float:
        """Sample standard deviation of ``phase`` (0 with a single sample)."""
        values = self.values(phase)
        return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


@dataclass(frozen=True)
class ParamInfo:
    """One parameter tensor, in model order, and when its gradient is ready (fraction of backward)."""

    name: str
    numel: int
    size_bytes: int
    dtype: str
    ready_frac: float


@dataclass(frozen=True)
class DeviceInfo:
    """Where a profile was measured (or, for an estimate, which device it stands for).

    Attributes:
        kind: ``"cpu"`` or ``"cuda"``.
        name: the CPU model or CUDA device name as the system reports it.
        gpu: the catalog GPU name (``"T4"``, ``"H200"``), or ``None`` for a CPU.
        threads: intra-op threads used (CPU).
        memory_bytes: device memory (GPU) or the memory limit used (CPU).
        peak_flops_per_s: roofline ceiling for fp32 matrix products: measured on a CPU, the datasheet
            peak on a catalog GPU; ``None`` where unknown (schema-1 profiles).
        peak_tensor16_flops_per_s: the same for bf16/fp16 matrix products, where known.
        mem_bw_bytes_per_s: memory bandwidth ceiling (read plus write bytes per second).
        peaks_source: how the ceilings were obtained, for example ``"measured: 2048x2048 fp32 matmul,
            256 MiB copy"`` or ``"datasheet"``.
    """

    kind: str
    name: str
    gpu: str | None
    threads: int
    memory_bytes: int
    torch_version: str
    cuda_version: str | None = None
    peak_flops_per_s: float | None = None
    peak_tensor16_flops_per_s: float | None = None
    mem_bw_bytes_per_s: float | None = None
    peaks_source: str | None = None

    @property
    def label(self) -> str:
        """Short name: the catalog GPU name, or ``cpu``."""
        return self.gpu if self.gpu else self.kind


@dataclass(frozen=True)
class EstimateInfo:
    """How an estimated profile was made. Everything in such a profile is a prediction, not a measurement.

    Attributes:
        method: ``"calibrated"`` (the calibrated GPU model, :mod:`srifty.compute.gpu_estimate`),
            ``"roofline"`` (scaled op by op from a measured profile) or ``"paleo"`` (analytical, from op
            counts alone).
        source_device: label of the profile it was made from (``"cpu"``, ``"V100"``).
        source_device_name: that device's full name.
        source_created_at: when the source was measured.
        reason: why that source was used (closest of several, the only one, ...).
        launch_floor_s: least time of one op on the target (roofline method), in seconds.
        assumptions: the main assumptions, in words.
        expected_error: the estimate's expected relative error of the iteration time (a fraction, from the
            calibration's leave-one-model-out errors), ``None`` where unknown (roofline, Paleo).
        numerics: which units ran which op classes on the target, and under which settings.
        calibration: which calibration priced it (when it was fitted, by which srifty).
    """

    method: str
    source_device: str
    source_device_name: str
    source_created_at: str
    reason: str
    launch_floor_s: float
    assumptions: str
    expected_error: float | None = None
    numerics: str = ""
    calibration: str = ""


@dataclass(frozen=True)
class SpreadPoint:
    """Coefficient of variation (std / mean) of each phase at one batch, carried into an estimate."""

    batch: int
    fw: float
    bw: float
    step: float
    iter: float


@dataclass(frozen=True)
class Profile:
    """A model's compute profile on one device."""

    model: str
    model_kind: str
    input_description: str
    precision: str
    optimizer: str
    n_params: int
    param_bytes: int
    device: DeviceInfo
    samples: tuple[PhaseSamples, ...]
    latency: Mapping[str, LatencyModel]
    memory: MemoryModel
    memory_points: tuple[tuple[int, float], ...]
    max_batch: int
    max_batch_limited_by: str
    params: tuple[ParamInfo, ...]
    ready_order: tuple[int, ...]
    timeline_batch: int
    bucket_cap_mb: float | None
    buckets: tuple[Bucket, ...]
    warmup_iters: int
    timed_iters: int
    timing_method: str
    created_at: str
    srifty_version: str
    estimated_from: str | None = None
    spread_scale: float = 1.0
    notes: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    work: OpWork | None = None
    estimate: EstimateInfo | None = None
    spread_points: tuple[SpreadPoint, ...] = ()
    machine: MachineRecord | None = None
    numerics: NumericSettings | None = None
    interference: InterferenceMeasurement | None = None

    def __post_init__(self) -> None:
        missing = [p for p in PHASES if p not in self.latency]
        if missing:
            raise ProfileError(f"profile of {self.model} lacks latency models for {', '.join(missing)}")

    @property
    def numeric_settings(self) -> NumericSettings:
        """The numeric settings the profile ran under (PyTorch's defaults for its precision where not recorded)."""
        return self.numerics if self.numerics is not None else NumericSettings.for_precision(self.precision)

    @property
    def expected_error(self) -> float:
        """Expected relative error (1σ) of this profile's mean iteration time at a planned batch.

        An estimate carries its calibrated error (the calibration's leave-one-model-out error; 0 where the
        method has none on record). A measurement is not exact either: its latency model is read at batches
        that were not probed, where BENCHMARKS.md ("Compute latency model accuracy") measured a held-out
        iteration MAPE of 3.4 % on the H200's curves and 5.6 % on this project's CPUs; for a normal error
        MAPE = σ·√(2/π), so σ = 4.3 % (GPU) and 7.0 % (CPU) (:data:`MEASURED_ERROR_GPU`,
        :data:`MEASURED_ERROR_CPU`).
        """
        if self.estimated_from is None and self.estimate is None:
            return MEASURED_ERROR_GPU if self.device.gpu else MEASURED_ERROR_CPU
        if self.estimate is None or self.estimate.expected_error is None:
            return 0.0
        return float(self.estimate.expected_error)

    @property
    def is_estimate(self) -> bool:
        """Whether this profile was estimated rather than measured."""
        return self.estimated_from is not None

    def predict_ms(self, phase: str, batch: ArrayLike) -> NDArray[np.float64]:
        """Mean latency of ``phase`` (``fw``, ``bw``, ``step`` or ``iter``) at ``batch``, in ms."""
        return self.latency[phase].predict_ms(batch)

    def spread(self) -> tuple[SpreadPoint, ...]:
        """Measured coefficient of variation per phase at each probed batch (an estimate's: its source's)."""
        if not self.samples:
            return self.spread_points
        return tuple(
            SpreadPoint(s.batch, *(s.std_ms(ph) / max(s.mean_ms(ph), 1e-12) for ph in PHASES)) for s in self.samples
        )

    def noisy_samples(self, limit: float = NOISY_SPREAD) -> str | None:
        """A warning when this profile's own timed iterations spread more than ``limit`` (coefficient of
        variation of the whole iteration at any probed batch; a machine busy with something else while it
        measured, or on a GPU below the knee the host's launch jitter), or ``None``."""
        if not self.samples:
            return None
        batch, spread = max(((p.batch, p.iter) for p in self.spread()), key=lambda bp: bp[1])
        if spread <= limit:
            return None
        knee = self.latency["iter"].knee_batch if "iter" in self.latency else None
        if self.device.gpu and knee is not None and batch < knee:
            cause = (
                f"below the knee (batch {knee:.0f}) the GPU waits on the host's kernel launches, so the host's "
                "timing jitter shows: a host busy with something else, or a launch-bound batch's own variation"
            )
            advice = "if the host was busy, measure again with it quiet"
        else:
            cause = "the machine was probably busy while it measured"
            advice = "measure again on a quiet machine"
        return (
            f"the timed iterations of {self.model} on {self.device.label} spread ±{100 * spread:.0f}% at batch "
            f"{batch} (coefficient of variation; more than {100 * limit:.0f}%): {cause}. The latency model's robust "
            "means resist a few outliers, but the simulator draws each iteration's spread from these samples; "
            f"{advice}."
        )

    def cv(self, phase: str, batch: ArrayLike) -> NDArray[np.float64]:
        """Coefficient of variation (std / mean) of ``phase`` at ``batch``, times ``spread_scale``.

        Interpolated linearly in log2(batch) between probed batches and held constant beyond them. A
        profile with neither samples nor spread points assumes 5%.
        """
        b = np.log2(np.maximum(np.asarray(batch, dtype=float), 1e-9))
        points = self.spread()
        if not points:
            return np.full(np.shape(b), 0.05 * self.spread_scale)
        xs = np.log2([p.batch for p in points])
        cvs = [getattr(p, phase) for p in points]
        order = np.argsort(xs)
        return np.interp(b, xs[order], np.asarray(cvs)[order]) * self.spread_scale

    def std_ms(self, phase: str, batch: ArrayLike) -> NDArray[np.float64]:
        """Standard deviation of ``phase`` at ``batch``: the measured spread scaled to the batch."""
        return self.cv(phase, batch) * self.predict_ms(phase, batch)

    def rebucket(self, bucket_cap_mb: float | None) -> tuple[Bucket, ...]:
        """DDP buckets for another ``bucket_cap_mb`` (``None``: DDP's default), from the same timeline."""
        return tuple(
            assign_buckets(
                self.ready_order,
                [p.size_bytes for p in self.params],
                [p.ready_frac for p in self.params],
                bucket_cap_mb,
                [p.dtype for p in self.params],
            )
        )

    def with_changes(self, **changes: Any) -> Profile:
        """A copy with some fields replaced."""
        return replace(self, **changes)

    def derive(
        self,
        *,
        device: DeviceInfo,
        samples: tuple[PhaseSamples, ...],
        latency: Mapping[str, LatencyModel],
        memory_points: tuple[tuple[int, float], ...],
        max_batch: int,
        max_batch_limited_by: str,
        warmup_iters: int,
        timed_iters: int,
        timing_method: str,
        created_at: str,
        srifty_version: str,
        notes: str,
        work: OpWork | None,
        extra: Mapping[str, Any] | None = None,
        estimated_from: str | None = None,
        spread_scale: float = 1.0,
        estimate: EstimateInfo | None = None,
        spread_points: tuple[SpreadPoint, ...] = (),
        interference: InterferenceMeasurement | None = None,
    ) -> Profile:
        """This model's profile on another device (estimated for it, or measured there), as a new value.

        What belongs to the model and its training set-up is kept: its names, precision, optimizer,
        parameter counts, memory model, gradient timeline and DDP buckets, and ``extra`` unless given.
        Everything that belongs to a device must be given, so nothing measured on this one is carried
        over by accident.
        """
        return replace(
            self,
            device=device,
            samples=samples,
            latency=latency,
            memory_points=memory_points,
            max_batch=max_batch,
            max_batch_limited_by=max_batch_limited_by,
            warmup_iters=warmup_iters,
            timed_iters=timed_iters,
            timing_method=timing_method,
            created_at=created_at,
            srifty_version=srifty_version,
            notes=notes,
            work=work,
            extra=dict(self.extra if extra is None else extra),
            estimated_from=estimated_from,
            spread_scale=spread_scale,
            estimate=estimate,
            spread_points=spread_points,
            interference=interference,
        )

    # ---- serialisation -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without ``kind`` and ``schema_version``)."""
        return {
            "model": {
                "name": self.model,
                "kind": self.model_kind,
                "input": self.input_description,
                "n_params": self.n_params,
                "param_bytes": self.param_bytes,
            },
            "precision": self.precision,
            "optimizer": self.optimizer,
            "device": self.device.__dict__,
            "measurement": {
                "warmup_iters": self.warmup_iters,
                "timed_iters": self.timed_iters,
                "timing_method": self.timing_method,
                "created_at": self.created_at,
                "srifty_version": self.srifty_version,
            },
            "estimated_from": self.estimated_from,
            "spread_scale": self.spread_scale,
            "samples": [s.__dict__ for s in self.samples],
            "latency": {phase: model.to_dict() for phase, model in self.latency.items()},
            "memory": {
                "model": self.memory.to_dict(),
                "points": [list(p) for p in self.memory_points],
                "max_batch": self.max_batch,
                "max_batch_limited_by": self.max_batch_limited_by,
            },
            "timeline": {
                "batch": self.timeline_batch,
                "params": [p.__dict__ for p in self.params],
                "ready_order": list(self.ready_order),
                "bucket_cap_mb": self.bucket_cap_mb,
                "buckets": [b.to_dict() for b in self.buckets],
            },
            "estimate": None if self.estimate is None else self.estimate.__dict__,
            "spread_points": [p.__dict__ for p in self.spread_points],
            "work": None if self.work is None else self.work.to_dict(),
            "machine": None if self.machine is None else self.machine.to_dict(),
            "numerics": None if self.numerics is None else self.numerics.to_dict(),
            "interference": None if self.interference is None else self.interference.to_dict(),
            "notes": self.notes,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Profile:
        """Inverse of :meth:`to_dict`.

        Raises:
            ProfileError: a field is missing or malformed.
        """
        try:
            model, measurement, memory, timeline = (
                data["model"],
                data["measurement"],
                data["memory"],
                data["timeline"],
            )
            return cls(
                model=_text(model["name"], "model.name"),
                model_kind=_text(model["kind"], "model.kind"),
                input_description=_text(model["input"], "model.input"),
                n_params=int(model["n_params"]),
                param_bytes=int(model["param_bytes"]),
                precision=_text(data["precision"], "precision"),
                optimizer=_text(data["optimizer"], "optimizer"),
                device=DeviceInfo(**data["device"]),
                samples=tuple(
                    PhaseSamples(
                        batch=int(s["batch"]),
                        fw_ms=tuple(float(v) for v in s["fw_ms"]),
                        bw_ms=tuple(float(v) for v in s["bw_ms"]),
                        step_ms=tuple(float(v) for v in s["step_ms"]),
                        iter_ms=tuple(float(v) for v in s["iter_ms"]),
                        peak_bytes=None if s.get("peak_bytes") is None else float(s["peak_bytes"]),
                    )
                    for s in data["samples"]
                ),
                latency={phase: LatencyModel.from_dict(m) for phase, m in data["latency"].items()},
                memory=MemoryModel.from_dict(memory["model"]),
                memory_points=tuple((int(b), float(p)) for b, p in memory["points"]),
                max_batch=int(memory["max_batch"]),
                max_batch_limited_by=_text(memory["max_batch_limited_by"], "memory.max_batch_limited_by"),
                params=tuple(
                    ParamInfo(
                        str(p["name"]), int(p["numel"]), int(p["size_bytes"]), str(p["dtype"]), float(p["ready_frac"])
                    )
                    for p in timeline["params"]
                ),
                ready_order=tuple(int(i) for i in timeline["ready_order"]),
                timeline_batch=int(timeline["batch"]),
                bucket_cap_mb=timeline["bucket_cap_mb"],
                buckets=tuple(Bucket.from_dict(b) for b in timeline["buckets"]),
                warmup_iters=int(measurement["warmup_iters"]),
                timed_iters=int(measurement["timed_iters"]),
                timing_method=_text(measurement["timing_method"], "measurement.timing_method"),
                created_at=_text(measurement["created_at"], "measurement.created_at"),
                srifty_version=_text(measurement["srifty_version"], "measurement.srifty_version"),
                estimated_from=_estimated_from(data.get("estimated_from")),
                spread_scale=float(data.get("spread_scale", 1.0)),
                notes=_text(data.get("notes", ""), "notes"),
                extra=_mapping(data.get("extra", {}), "extra"),
                work=None if data.get("work") is None else OpWork.from_dict(data["work"]),
                estimate=None if data.get("estimate") is None else EstimateInfo(**data["estimate"]),
                spread_points=tuple(SpreadPoint(**p) for p in data.get("spread_points", ())),
                machine=None if data.get("machine") is None else MachineRecord.from_dict(data["machine"]),
                numerics=None if data.get("numerics") is None else NumericSettings.from_dict(data["numerics"]),
                interference=(
                    None
                    if data.get("interference") is None
                    else InterferenceMeasurement.from_dict(data["interference"])
                ),
            )
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            raise ProfileError(f"malformed profile: {type(err).__name__} {err}; regenerate it") from None

    def save(self, path: str | Path) -> Path:
        """Write atomically as a versioned JSON artefact."""
        return write_json_artifact(path, PROFILE_KIND, PROFILE_SCHEMA_VERSION, self.to_dict())


def _text(value: object, field: str) -> str:
    """A text field of a profile document.

    Raises:
        ValueError: not text (loading reports it as a malformed profile, naming the field).
    """
    if isinstance(value, str):
        return value
    raise ValueError(f"{field} must be text, not {value!r}")


def _mapping(value: object, field: str) -> dict[str, Any]:
    """A mapping field of a profile document (``extra``), copied.

    Raises:
        ValueError: not a mapping with text keys.
    """
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return dict(value)
    raise ValueError(f"{field} must be a mapping with text keys, not {value!r}")


def _estimated_from(value: object) -> str | None:
    """The ``estimated_from`` field: what an estimate was made from (a device or method), ``None`` for a
    measurement.

    Raises:
        ValueError: anything else (loading reports it as a malformed profile).
    """
    if value is None or isinstance(value, str):
        return value
    raise ValueError(
        f"estimated_from must be null (a measurement) or the text naming what it was estimated from, not {value!r}"
    )


def _migrate_v1(document: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 → 2: no op work counts, no roofline ceilings, no estimate record, no spread points.

    A migrated profile loads and predicts as before; it cannot be the source of a cross-GPU estimate
    (which needs op counts) until it is measured again.
    """
    out = dict(document)
    device = dict(out.get("device", {}))
    for key in ("peak_flops_per_s", "peak_tensor16_flops_per_s", "mem_bw_bytes_per_s", "peaks_source"):
        device.setdefault(key, None)
    out["device"] = device
    out.setdefault("work", None)
    out.setdefault("estimate", None)
    out.setdefault("spread_points", [])
    return out


def _migrate_v2(document: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 → 3: no interference measurement (the simulator keeps perfect overlap for it, and says so)."""
    out = dict(document)
    out.setdefault("interference", None)
    return out


MIGRATIONS: dict[int, Migration] = {1: _migrate_v1, 2: _migrate_v2}


def load_profile(path: str | Path) -> Profile:
    """Read a profile file (older schema versions are migrated, see :data:`MIGRATIONS`).

    Raises:
        ArtifactError: missing file, wrong kind or unreadable version.
        ProfileError: malformed content.
    """
    document = read_json_artifact(path, PROFILE_KIND, PROFILE_SCHEMA_VERSION, MIGRATIONS)
    try:
        return Profile.from_dict(document)
    except ProfileError as err:
        raise ProfileError(f"{path}: {err}") from None
