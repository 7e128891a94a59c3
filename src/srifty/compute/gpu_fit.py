"""Fit the GPU model's parameters to real GPU measurements, and measure its error leaving one model out.

The fit (:func:`fit_params`) is a maximum a-posteriori estimate by ``scipy.optimize.least_squares``
(robust ``soft_l1`` loss, parameters in log space, bounded: efficiencies at most 1; several seeded starts,
the lowest cost kept): residuals are
``ln(predicted / measured)`` of every H200 curve point (forward, backward and step, each batch) and of
every public row (the iteration its throughput implies), each divided by :data:`DATA_SIGMA`; and one
residual per parameter, ``ln(θ / prior median) / prior spread`` (:data:`~srifty.compute.gpu_model.PRIORS`),
which holds a parameter near a physically plausible value where no data speak to it. Public rows of one
(workload, GPU, arithmetic) weigh as much together as one row, so a GPU measured on six machines does not
outvote one measured on one.

Leave-one-model-out (:func:`cross_validate`): for every model group, the parameters are fitted on every
*other* group and the group's own measurements are predicted. Every error figure srifty reports about
this model comes from those held-out predictions, never from the fit itself.

:class:`Calibration` is the versioned artefact (kind ``gpu-calibration``): the parameters fitted on
everything, the held-out errors, and where the data came from. The bundled one is
``data/calibration/gpu-calibration.json``; ``srifty profile calibrate`` refits it.

Pure numpy and scipy.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from srifty import __version__
from srifty.artifacts import read_json_artifact, write_json_artifact
from srifty.catalog import Catalog, GpuSpec, load_catalog
from srifty.compute.gpu_measurements import (
    H200_GPU,
    H200_SETTINGS,
    WORKLOADS,
    CurvePoint,
    PublicRow,
    bundled_curves,
    bundled_public_rows,
    op_count_profile,
    settings_for,
    workload,
)
from srifty.compute.gpu_model import (
    LOWER_BOUNDS,
    PRIORS,
    SCALE_BOUNDS,
    SCALE_PRIOR_SD,
    UPPER_BOUNDS,
    GpuModelParams,
    WorkFeatures,
    predict_ms,
    scale_names,
    work_features,
)
from srifty.compute.work import OpWork
from srifty.errors import ProfileError

CALIBRATION_KIND = "gpu-calibration"
CALIBRATION_SCHEMA_VERSION = 1
BUNDLED_FILE = "gpu-calibration.json"
REFERENCE_GENERATION = "hopper"  # the H200's: its scales are 1 by definition
DATA_SIGMA = 0.2  # typical ln-error of one measurement against the model (its intrinsic scatter)
STEP_WEIGHT = 0.5  # the step is a small share of an iteration; it should not steer the fit
FIT_PHASES = ("fw", "bw", "step")
MIN_ROWS_PER_GENERATION = 10  # fewer held-out rows than this: a generation's estimates expect the pooled error
# The fit starts from the priors' medians and from FIT_STARTS - 1 seeded draws around them (the least-squares
# surface has local minima); the lowest cost wins.
FIT_STARTS = 2
FIT_SEED = 0
# Published benchmark scripts (NGC containers: DALI, channels-last, fused kernels) against eager PyTorch.
IMPLEMENTATION_PRIOR = (1.0, 0.5)


@dataclass
class Case:
    """One workload measured on one GPU: its features, the measured latencies and how they are weighed.

    Attributes:
        workload: the workload key; ``group`` its model group.
        gpu: the datasheet name; ``kind`` ``"h200"`` (curves: fw, bw, step per batch) or ``"public"``
            (iteration times of public rows).
        features: the GPU model's features at the measured batches.
        measured_ms: measured latency per phase (``iter`` only for public rows), arrays over batches.
        weight: multiplies the case's residuals.
        rows: the public rows behind a public case, in batch order.
    """

    workload: str
    group: str
    gpu: str
    kind: str
    features: WorkFeatures
    measured_ms: dict[str, NDArray[np.float64]]
    weight: float = 1.0
    rows: tuple[PublicRow, ...] = ()


@dataclass(frozen=True)
class GpuCalibrationData:
    """The H200 curves and public rows a calibration is fitted on."""

    curves: tuple[CurvePoint, ...]
    public: tuple[PublicRow, ...]
    sources: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def bundled(cls) -> GpuCalibrationData:
        """The copies bundled with srifty (see ``data/calibration/README.md``)."""
        return cls(
            bundled_curves(),
            bundled_public_rows(),
            {
                "h200": "bundled h200_fp32_curves.csv (from shared reference/h200/h200_fp32.jsonl)",
                "h200_srifty": "bundled h200_srifty_curves.csv (srifty's own H200 profiles of 7 models, issue 27)",
                "public": "bundled public_training_rows.csv (from shared reference/gpu_perf/throughput.csv)",
            },
        )


def _spec(catalog: Catalog, name: str) -> GpuSpec:
    spec = catalog.gpu_specs.get(name)
    if spec is None:
        raise ProfileError(f"the calibration data names GPU '{name}', which the datasheet table lacks")
    return spec


def build_cases(dataset: GpuCalibrationData, catalog: Catalog | None = None, *, shapes: bool = True) -> list[Case]:
    """Every case of ``dataset`` with its features (op counts priced on its GPU); ``shapes=False`` drops the
    matrix products' shapes (every product at the typical tile efficiency, as before issue 27)."""
    catalog = catalog or load_catalog()
    h200 = _spec(catalog, H200_GPU)
    cases: list[Case] = []
    by_model: dict[str, list[CurvePoint]] = defaultdict(list)
    for point in dataset.curves:
        by_model[point.model].append(point)
    for w in WORKLOADS:
        points = sorted(by_model.get(w.h200_name, []), key=lambda p: p.batch) if w.h200_name else []
        if not points:
            continue
        work = _work(w.fp32_profile, shapes)
        batches = np.array([p.batch for p in points], dtype=float)
        measured = {ph: np.array([p.ms[ph] for p in points]) for ph in ("fw", "bw", "step", "iter")}
        feats = work_features(work, batches, h200, H200_SETTINGS)
        cases.append(Case(w.key, w.group, H200_GPU, "h200", feats, measured))
    grouped: dict[tuple[str, str, str], list[PublicRow]] = defaultdict(list)
    for row in dataset.public:
        grouped[(row.workload, row.gpu, row.arithmetic)].append(row)
    for (key, gpu, arithmetic), rows in sorted(grouped.items()):
        w = workload(key)
        source = w.bf16_profile if arithmetic == "amp" else w.fp32_profile
        if not source:
            continue
        rows = sorted(rows, key=lambda r: r.batch)
        batches = np.array([r.batch for r in rows], dtype=float)
        feats = work_features(
            _work(source, shapes),
            batches,
            _spec(catalog, gpu),
            settings_for(arithmetic),
            bf16_as_fp16=arithmetic == "amp",
        )
        measured = {"iter": np.array([r.iter_ms for r in rows])}
        cases.append(Case(key, w.group, gpu, "public", feats, measured, 1.0 / np.sqrt(len(rows)), tuple(rows)))
    return cases


def _work(reference: str, shapes: bool = True) -> OpWork:
    profile = op_count_profile(reference)
    if profile.work is None:
        raise ProfileError(f"the op-count source {reference} has no op counts")
    if shapes:
        return profile.work
    return replace(profile.work, records=tuple(replace(r, gemms=()) for r in profile.work.records))


# ---- the fit -----------------------------------------------------------------------------------------


def implementation_name(arithmetic: str) -> str:
    """The parameter for how much faster published benchmark scripts run than an eager PyTorch script."""
    return f"impl_speedup.{arithmetic}"


def parameter_names(cases: Iterable[Case]) -> list[str]:
    """The model's parameters, the scales of every generation the cases measure (but the reference), and
    the published scripts' speed-up per arithmetic (public rows only)."""
    cases = list(cases)
    generations = sorted({c.features.generation for c in cases} - {REFERENCE_GENERATION})
    arithmetics = sorted({c.rows[0].arithmetic for c in cases if c.kind == "public"})
    return (
        list(PRIORS)
        + [name for g in generations for name in scale_names(g)]
        + [implementation_name(a) for a in arithmetics]
    )


def _prior(name: str) -> tuple[float, float]:
    if name.startswith("impl_speedup."):
        return IMPLEMENTATION_PRIOR
    return PRIORS.get(name, (1.0, SCALE_PRIOR_SD))


def _bounds(names: Sequence[str]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    lo, hi = [], []
    for name in names:
        if "@" in name or name.startswith("impl_speedup."):
            low, high = SCALE_BOUNDS
        elif name.startswith("eta."):
            low, high = 1e-4, 1.0
        elif name.startswith("mu."):
            low, high = 1e-4, 1.5
        else:
            low, high = LOWER_BOUNDS.get(name, 1e-9), UPPER_BOUNDS.get(name, 1e-2)
        lo.append(np.log(low))
        hi.append(np.log(high))
    return np.array(lo), np.array(hi)


def _residuals(x: NDArray[np.float64], names: Sequence[str], cases: Sequence[Case]) -> NDArray[np.float64]:
    params = GpuModelParams(dict(zip(names, np.exp(x), strict=True)))
    parts: list[NDArray[np.float64]] = []
    for case in cases:
        predicted = predict_case_ms(case, params)
        phases = FIT_PHASES if case.kind == "h200" else ("iter",)
        for phase in phases:
            ratio = np.maximum(predicted[phase], 1e-9) / case.measured_ms[phase]
            weight = case.weight * (STEP_WEIGHT if phase == "step" else 1.0)
            parts.append(weight * np.log(ratio) / DATA_SIGMA)
    medians = np.log([_prior(n)[0] for n in names])
    spreads = np.array([_prior(n)[1] for n in names])
    parts.append((x - medians) / spreads)
    return np.concatenate(parts)


def predict_case_ms(case: Case, params: GpuModelParams) -> dict[str, NDArray[np.float64]]:
    """The model's prediction for a case: a public row's also divided by its script's speed-up."""
    predicted = predict_ms(case.features, params)
    if case.kind == "public":
        speedup = float(params.values.get(implementation_name(case.rows[0].arithmetic), 1.0))
        predicted = {ph: v / speedup for ph, v in predicted.items()}
    return predicted


def fit_params(cases: Sequence[Case]) -> GpuModelParams:
    """MAP fit of the GPU model to ``cases`` (see the module docstring).

    Raises:
        ProfileError: no cases.
    """
    from scipy.optimize import least_squares

    if not cases:
        raise ProfileError("nothing to calibrate on: no cases")
    names = parameter_names(cases)
    lo, hi = _bounds(names)
    prior = np.log([_prior(n)[0] for n in names])
    spreads = np.array([_prior(n)[1] for n in names])
    rng = np.random.default_rng(FIT_SEED)
    best = None
    for attempt in range(FIT_STARTS):
        start = prior if attempt == 0 else prior + rng.normal(0.0, 0.5, len(names)) * spreads
        start = np.clip(start, lo + 1e-9, hi - 1e-9)
        result = least_squares(
            _residuals, start, args=(names, cases), bounds=(lo, hi), loss="soft_l1", f_scale=1.0, x_scale=1.0
        )
        if best is None or result.cost < best.cost:
            best = result
    assert best is not None
    return GpuModelParams(dict(zip(names, np.exp(best.x), strict=True)))


# ---- leave one model out --------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeldOut:
    """A case predicted by parameters fitted without its model group."""

    case: Case
    predicted_ms: dict[str, NDArray[np.float64]]

    def errors(self, phase: str) -> NDArray[np.float64]:
        """Signed relative errors ``predicted / measured − 1`` of ``phase`` at each batch."""
        return self.predicted_ms[phase] / self.case.measured_ms[phase] - 1.0


def lomo_fits(
    cases: Sequence[Case], fit: Callable[[Sequence[Case]], GpuModelParams] = fit_params
) -> dict[str, GpuModelParams]:
    """Parameters fitted without each model group, by group."""
    groups = sorted({c.group for c in cases})
    return {g: fit([c for c in cases if c.group != g]) for g in groups}


def cross_validate(cases: Sequence[Case], fits: Mapping[str, GpuModelParams] | None = None) -> list[HeldOut]:
    """Every case predicted by the fit that left its group out."""
    fits = fits if fits is not None else lomo_fits(cases)
    return [HeldOut(c, predict_case_ms(c, fits[c.group])) for c in cases]


def mape(errors: Iterable[float]) -> float:
    """Mean absolute relative error, in percent (``nan`` with no errors)."""
    values = np.abs(np.fromiter(errors, dtype=float))
    return float(100.0 * values.mean()) if values.size else float("nan")


@dataclass(frozen=True)
class ErrorSummary:
    """Held-out errors (MAPE, %) of the CPU-sourced estimate.

    Attributes:
        h200: per phase (``fw``, ``bw``, ``step``, ``iter``), over every batch of every H200 curve.
        h200_by_model: iteration MAPE per H200 model.
        public: iteration MAPE over all public rows.
        public_by_gpu: per datasheet GPU; ``public_by_generation`` per generation.
        cpu_sourced_by_generation: what an estimate of a GPU of that generation should expect (public rows
            of the generation, with the H200 curves for Hopper; only generations with at least
            :data:`MIN_ROWS_PER_GENERATION` rows), else ``cpu_sourced``.
        cpu_sourced: pooled over every held-out prediction (H200 iterations and public rows).
    """

    h200: dict[str, float]
    h200_by_model: dict[str, float]
    public: float
    public_by_gpu: dict[str, float]
    public_by_generation: dict[str, float]
    cpu_sourced_by_generation: dict[str, float]
    cpu_sourced: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


def summarize(held_out: Sequence[HeldOut]) -> ErrorSummary:
    """MAPE figures of held-out predictions."""
    curves = [h for h in held_out if h.case.kind == "h200"]
    public = [h for h in held_out if h.case.kind == "public"]
    h200 = {ph: mape(e for h in curves for e in h.errors(ph)) for ph in ("fw", "bw", "step", "iter")}
    by_model = {h.case.workload: mape(h.errors("iter")) for h in curves}
    by_gpu: dict[str, list[float]] = defaultdict(list)
    by_gen: dict[str, list[float]] = defaultdict(list)
    for h in public:
        for row, err in zip(h.case.rows, h.errors("iter"), strict=True):
            by_gpu[row.gpu].append(float(err))
            by_gen[h.case.features.generation].append(float(err))
    pooled = [float(e) for h in curves for e in h.errors("iter")] + [e for v in by_gpu.values() for e in v]
    expected = {g: mape(v) for g, v in by_gen.items() if len(v) >= MIN_ROWS_PER_GENERATION}
    hopper = by_gen.get(REFERENCE_GENERATION, []) + [float(e) for h in curves for e in h.errors("iter")]
    expected[REFERENCE_GENERATION] = mape(hopper)
    return ErrorSummary(
        h200=h200,
        h200_by_model=by_model,
        public=mape(e for v in by_gpu.values() for e in v),
        public_by_gpu={g: mape(v) for g, v in sorted(by_gpu.items())},
        public_by_generation={g: mape(v) for g, v in sorted(by_gen.items())},
        cpu_sourced_by_generation=dict(sorted(expected.items())),
        cpu_sourced=mape(pooled),
    )


# ---- GPU -> GPU ------------------------------------------------------------------------------------------


def gpu_to_gpu_ms(
    source_measured_ms: Mapping[str, NDArray[np.float64]],
    source_features: WorkFeatures,
    target_features: WorkFeatures,
    params: GpuModelParams,
) -> dict[str, NDArray[np.float64]]:
    """Habitat-style scaling of a measured GPU curve: per phase, ``measured × model(target) / model(source)``
    at the same batches; the iteration is the sum of its phases."""
    on_source = predict_ms(source_features, params)
    on_target = predict_ms(target_features, params)
    out = {ph: source_measured_ms[ph] * on_target[ph] / np.maximum(on_source[ph], 1e-12) for ph in FIT_PHASES}
    out["iter"] = out["fw"] + out["bw"] + out["step"]
    return out


def interpolate_curve(batches: NDArray[np.float64], values: NDArray[np.float64], at: NDArray[np.float64]) -> NDArray:
    """A measured curve at other batches: linear between points, the last segment's line beyond."""
    out = np.interp(at, batches, values)
    slope = (values[-1] - values[-2]) / (batches[-1] - batches[-2])
    return np.where(at > batches[-1], values[-1] + slope * (at - batches[-1]), out)


@dataclass(frozen=True)
class GpuSourcedRow:
    """A public row predicted from the H200's measured curve of the same workload."""

    row: PublicRow
    predicted_iter_ms: float

    @property
    def error(self) -> float:
        """Signed relative error of the predicted iteration."""
        return self.predicted_iter_ms / self.row.iter_ms - 1.0


def gpu_sourced(
    cases: Sequence[Case], fits: Mapping[str, GpuModelParams], catalog: Catalog | None = None
) -> list[GpuSourcedRow]:
    """Every public row of a workload that the H200 also measured, predicted from the H200's curve with the
    parameters fitted without that workload's group (fp32/TF32 rows; AMP rows from the same fp32
    measurement with the model's fp16 what-if, see :func:`gpu_to_gpu_ms`).

    The estimate scales the *measured script* (eager PyTorch on the H200) to another GPU; like every public
    row's prediction it is divided by the published scripts' fitted speed-up over eager PyTorch
    (``impl_speedup.*``, fitted without the workload's group)."""
    catalog = catalog or load_catalog()
    h200 = _spec(catalog, H200_GPU)
    curves = {c.workload: c for c in cases if c.kind == "h200"}
    out: list[GpuSourcedRow] = []
    for case in (c for c in cases if c.kind == "public" and c.workload in curves):
        source = curves[case.workload]
        at = case.features.batches
        measured = {ph: interpolate_curve(source.features.batches, source.measured_ms[ph], at) for ph in FIT_PHASES}
        w = workload(case.workload)
        shapes = any(f.gemm_record for f in case.features.phases.values())
        src_feats = work_features(_work(w.fp32_profile, shapes), at, h200, H200_SETTINGS)
        predicted = gpu_to_gpu_ms(measured, src_feats, case.features, fits[case.group])
        speedup = float(fits[case.group].values.get(implementation_name(case.rows[0].arithmetic), 1.0))
        predicted = {ph: v / speedup for ph, v in predicted.items()}
        out += [GpuSourcedRow(r, float(p)) for r, p in zip(case.rows, predicted["iter"], strict=True)]
    return out


# ---- the artefact -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuCalibration:
    """Fitted GPU-model parameters, their held-out errors and provenance (kind ``gpu-calibration``).

    Attributes:
        params: fitted on every case.
        errors: held-out (leave-one-model-out) errors of CPU-sourced estimates.
        gpu_sourced_mape: held-out MAPE of GPU-sourced estimates (public rows from H200 curves), by
            arithmetic (``fp32``, ``amp``) and ``all``.
        sources: where the data came from.
        counts: how many curve points, public rows and workloads were used.
        gpu_cv: median coefficient of variation of one iteration's phases over the H200 curves (the
            per-iteration spread an estimated GPU profile carries).
        created_at, srifty_version: when and by what it was fitted.
    """

    params: GpuModelParams
    errors: ErrorSummary
    gpu_sourced_mape: Mapping[str, float]
    sources: Mapping[str, str]
    counts: Mapping[str, int]
    created_at: str
    srifty_version: str
    gpu_cv: Mapping[str, float] = field(default_factory=dict)

    def expected_error(self, generation: str, gpu_sourced: bool) -> float:
        """Expected relative error (a fraction) of an estimate for a GPU of ``generation``."""
        if gpu_sourced:  # an estimate keeps its source's arithmetic: the like-for-like (fp32/TF32) rows' error
            return float(self.gpu_sourced_mape.get("fp32", self.gpu_sourced_mape.get("all", float("nan")))) / 100.0
        value = self.errors.cpu_sourced_by_generation.get(generation, self.errors.cpu_sourced)
        return float(value if np.isfinite(value) else self.errors.cpu_sourced) / 100.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without ``kind``/``schema_version``)."""
        return {
            "params": {k: float(v) for k, v in sorted(self.params.values.items())},
            "errors": self.errors.to_dict(),
            "gpu_sourced_mape": dict(self.gpu_sourced_mape),
            "sources": dict(self.sources),
            "counts": dict(self.counts),
            "created_at": self.created_at,
            "srifty_version": self.srifty_version,
            "gpu_cv": dict(self.gpu_cv),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GpuCalibration:
        """Inverse of :meth:`to_dict`.

        Raises:
            ProfileError: a field is missing or malformed.
        """
        try:
            return cls(
                params=GpuModelParams({k: float(v) for k, v in data["params"].items()}),
                errors=ErrorSummary(**data["errors"]),
                gpu_sourced_mape={k: float(v) for k, v in data["gpu_sourced_mape"].items()},
                sources=dict(data["sources"]),
                counts={k: int(v) for k, v in data["counts"].items()},
                created_at=str(data["created_at"]),
                srifty_version=str(data["srifty_version"]),
                gpu_cv={k: float(v) for k, v in data.get("gpu_cv", {}).items()},
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ProfileError(f"malformed GPU calibration: {type(err).__name__} {err}; refit it") from None

    def save(self, path: str | Path) -> Path:
        """Write atomically as a versioned JSON artefact."""
        return write_json_artifact(path, CALIBRATION_KIND, CALIBRATION_SCHEMA_VERSION, self.to_dict())


def load_gpu_calibration(path: str | Path) -> GpuCalibration:
    """Read a calibration file.

    Raises:
        ArtifactError: missing file, wrong kind or version.
        ProfileError: malformed content.
    """
    return GpuCalibration.from_dict(read_json_artifact(path, CALIBRATION_KIND, CALIBRATION_SCHEMA_VERSION, {}))


@cache
def default_gpu_calibration() -> GpuCalibration:
    """The calibration bundled with srifty."""
    path = Path(str(resources.files("srifty.compute").joinpath("data", "calibration", BUNDLED_FILE)))
    return load_gpu_calibration(path)


def calibrate_gpu_model(dataset: GpuCalibrationData | None = None, catalog: Catalog | None = None) -> GpuCalibration:
    """Fit on everything, cross-validate leaving each model out, and return the artefact."""
    dataset = dataset or GpuCalibrationData.bundled()
    cases = build_cases(dataset, catalog)
    fits = lomo_fits(cases)
    held_out = cross_validate(cases, fits)
    sourced = gpu_sourced(cases, fits, catalog)
    by_arithmetic: dict[str, list[float]] = defaultdict(list)
    for r in sourced:
        by_arithmetic[r.row.arithmetic].append(r.error)
        by_arithmetic["all"].append(r.error)
    return GpuCalibration(
        params=fit_params(cases),
        errors=summarize(held_out),
        gpu_sourced_mape={k: mape(v) for k, v in sorted(by_arithmetic.items())},
        sources=dict(dataset.sources),
        counts={
            "h200_points": len(dataset.curves),
            "public_rows": len(dataset.public),
            "cases": len(cases),
            "groups": len({c.group for c in cases}),
        },
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        srifty_version=__version__,
        gpu_cv={ph: float(np.median([p.cv[ph] for p in dataset.curves])) for ph in ("fw", "bw", "step", "iter")},
    )
