"""The learned bus-bandwidth model (the paper's allreduce model), smooth in message size, with intervals.

Srifty predicts bus bandwidth rather than allreduce time, because concurrent transfers share links and
the simulator needs a rate to share. Following the paper:

* one model for messages ``≤ MTU`` and one for ``> MTU`` (MTU defaults to EC2's 9001 bytes), since one
  model over both regimes predicted nonsense for small buffers;
* XGBoost with robust objectives (pseudo-Huber among them) and hyperparameters tuned with Optuna by MAPE,
  with cross-validation grouped by allocation (:mod:`srifty.network.tuning`);
* sample weights decayed by age, so retraining after a network upgrade favours new probes (here the age
  counts from the newest probe of the same instance type, so new probes of one type do not erase what
  is known of others).

What each side of the MTU computes, in the label's units (``log(busbw / link)``, see below):

1. **A booster over features that carry to any machine** (size, ranks, nodes, GPUs per node, concurrency,
   link rating, backend; monotone: never faster with more ranks, nodes or concurrent transfers), asked
   only at the message sizes it was trained on and interpolated log-log in between
   (:mod:`srifty.network.sizegrid`): a tree alone steps between probed sizes.
2. **A residual curve per probed configuration** (instance type, backend, inside one VM or between VMs;
   :mod:`srifty.network.curves`): the weighted median of the booster's residuals at each probed size,
   interpolated the same way. A configuration that was probed is answered from its own measurements;
   one never probed from what the booster learned across all the others.
3. **Intervals** (:mod:`srifty.network.intervals`): quantiles of held-out residuals, kept apart for probed
   configurations on new allocations and for configurations never probed (wide).

Why this form (measured; ``benchmarks/network_accuracy.py``, BENCHMARKS.md "Bus-bandwidth model
accuracy"): on the 11 public nccl-tests tables with alternate sizes held out, the tree alone (the previous
model, table as a categorical feature) reaches a median per-table MAPE of 21 % above the MTU and 13 %
below, log-log interpolation between the same training sizes 4.6 % and 4.2 %; knot interpolation brings
the booster to the interpolation's level and the residual curves add what a table-blind booster cannot
know. Residual curves keyed by the full configuration (world size and concurrency included) would break
the monotonicity in world size at the edge of the probed range; keyed by instance type they leave world
size and concurrency to the monotone booster.

The label (``target="link_fraction"``, chosen by ``"auto"`` whenever every training row has a link
rating) is the log of how fast a transfer ran against a latency–bandwidth reference: ``log(t_ref / t)``
with ``t_ref = α + 2·size / link`` and ``t = 2·size / busbw`` (the ring's ``(n−1)/n`` left out, so that
the reference does not grow with the world size and the booster's monotone constraints carry over to
bus bandwidth). ``link`` is the network cap between VMs (the rated link, times the hierarchical
allowance for several GPUs per VM, see :func:`~srifty.network.features.busbw_cap_bytes_per_s`) or the
GPUs' intra-node link (NVLink or PCIe, per direction) for ranks all inside one VM; ``α`` is one latency
for the whole training set (the median of ``2·size / busbw`` over its messages up to 1 KiB). Large
messages so learn the fraction of the link they reach, which transfers to links of other speeds; small
ones learn their latency relative to ``α``, which does not grow with the link (a fraction of the link
alone would predict a 3,200 Gbps fabric's 1 MiB transfers 8 times faster than a 400 Gbps one's).
Without ratings the label is ``log(busbw)``. Predictions are positive (an exponential) and never above
the network cap; inside one VM they are not capped (NVLink SHARP exceeds the per-direction link).
"""

from __future__ import annotations

import glob
import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from srifty.artifacts import atomic_write_bytes, read_json_artifact, write_json_artifact
from srifty.errors import ArtifactError
from srifty.network.curves import ResidualCurves, configuration_keys
from srifty.network.dataset import exclusive_lock, validate_frame
from srifty.network.errors import NetModelError, NetModelOptionError
from srifty.network.features import (
    DEFAULT_CATEGORICAL_FEATURES,
    DEFAULT_NUMERIC_FEATURES,
    FeatureEncoder,
    build_encoder,
    busbw_cap_bytes_per_s,
    is_intra_node,
    link_scale_bytes_per_s,
)
from srifty.network.intervals import ResidualQuantiles
from srifty.network.sizegrid import knot_sizes, smooth_predict
from srifty.network.tuning import (
    DEFAULT_PARAMS,
    Fold,
    cross_validate,
    decay_weights,
    grouped_folds,
    mape,
    tune_params,
)
from srifty.vocab import DEFAULT_MTU_BYTES, Table, allreduce_time_s, as_table, is_small_message, ring_passes

if TYPE_CHECKING:
    import pandas as pd

Target = Literal["auto", "link_fraction", "busbw"]
TARGETS: tuple[Target, ...] = ("auto", "link_fraction", "busbw")
SIDES = ("small", "large")
MODEL_KIND = "bandwidth-model"
MODEL_SCHEMA_VERSION = 2
#: Fewer rows than this on one side of the MTU cannot train that side's model.
MIN_ROWS_PER_SIDE = 8
SECONDS_PER_DAY = 86400.0
FloatArray = npt.NDArray[np.float64]
Matrix = npt.NDArray[np.float32]


def _stem(path: str | Path) -> tuple[Path, str]:
    target = Path(path)
    stem = target.name
    for suffix in (".meta.json", ".json"):
        if stem.endswith(suffix):
            return target, stem[: -len(suffix)]
    return target, stem


def model_paths(path: str | Path, digests: dict[str, str] | None = None) -> dict[str, Path]:
    """Files of a model named ``path``: ``net.json`` → ``net.meta.json`` and, beside it, one booster per
    side named after its content, ``net.small.<sha256[:12]>.xgb.json`` (``net.small.xgb.json`` without
    ``digests``: the names models had before srifty wrote them content-addressed). ``path`` may also be the
    ``.meta.json`` file itself. The sidecar names its boosters, so readers take the names from it."""
    target, stem = _stem(path)
    paths = {"meta": target.with_name(f"{stem}.meta.json")}
    for side in SIDES:
        tag = f".{digests[side][:12]}" if digests else ""
        paths[side] = target.with_name(f"{stem}.{side}{tag}.xgb.json")
    return paths


def _knots(values: object, meta: Path, field: str) -> FloatArray:
    """Message sizes of a saved smoothing grid: finite and positive, or a clear error naming the field."""
    numbers = isinstance(values, list) and all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in values
    )
    if not numbers:
        raise ArtifactError(
            f"'{meta}': {field} must be a list of positive message sizes in bytes, not {values!r:.80}; "
            "fit the model again or restore the file."
        )
    return np.asarray(values, dtype=np.float64)


def _load_booster(raw: bytes) -> Any:
    """A saved booster for predictions: read with numpy (:mod:`srifty.network.trees`, no XGBoost import), or
    with XGBoost where it uses something that reader does not evaluate."""
    from srifty.network.trees import JsonBooster, UnsupportedBoosterError

    try:
        return JsonBooster(raw)
    except UnsupportedBoosterError:
        import xgboost as xgb

        booster = xgb.Booster()
        try:
            booster.load_model(bytearray(raw))
        except xgb.core.XGBoostError as err:
            raise ValueError(str(err)) from None
        booster.set_param({"nthread": 1})
        return booster


def _remove_unnamed_boosters(paths: dict[str, Path]) -> None:
    """Delete this model's boosters that its (new) sidecar does not name: earlier saves' files."""
    _, stem = _stem(paths["meta"])
    keep = {paths[side].name for side in SIDES}
    for side in SIDES:
        for old in paths["meta"].parent.glob(f"{glob.escape(stem)}.{side}.*xgb.json"):
            if old.name not in keep and re.fullmatch(
                rf"{re.escape(stem)}\.{side}(\.[0-9a-f]{{12}})?\.xgb\.json", old.name
            ):
                old.unlink(missing_ok=True)


def configuration_sources(frame: pd.DataFrame, keys: npt.NDArray[np.str_]) -> dict[str, dict[str, Any]]:
    """Per configuration key: rows, allocations and where they were measured (public tables by id, the
    emulated testbed, an emulated cloud, or probes), for explanations."""
    rows_in = as_table(frame)
    table, emulated, cloud = (rows_in.text_or(name, "") for name in ("table_id", "emulated", "cloud"))
    kind = np.where(emulated == "True", np.where(cloud == "testbed", "emulated testbed", "emulated cloud"), "probes")
    label = np.where(table != "", np.char.add("public ", table), kind)
    allocation = rows_in.text_or("allocation_id", "")
    out: dict[str, dict[str, Any]] = {}
    for key in np.unique(keys):
        rows = keys == key
        out[str(key)] = {
            "rows": int(rows.sum()),
            "allocations": int(np.unique(allocation[rows]).size),
            "sources": sorted(set(label[rows].tolist())),
        }
    return out


def training_set_hash(frame: pd.DataFrame, columns: list[str]) -> str:
    """``sha256:<hex>`` over the given columns of every row, in order (stable across runs)."""
    import pandas as pd

    hashed = pd.util.hash_pandas_object(frame[columns], index=False).to_numpy()
    return "sha256:" + hashlib.sha256(hashed.tobytes()).hexdigest()


@dataclass(frozen=True)
class _SideFit:
    """What one side of the MTU learned: the booster, its knot sizes (all training sizes, and each probed
    configuration's own: its keys are the probed configurations) and the residual curves."""

    booster: Any
    knots_bytes: FloatArray
    key_knots_bytes: Mapping[str, FloatArray]
    curves: ResidualCurves

    def probed(self, keys: npt.NDArray[np.str_]) -> npt.NDArray[np.bool_]:
        """Whether each row's configuration was in the training set on this side of the MTU."""
        return np.isin(keys, list(self.key_knots_bytes))

    def knot_sets(self, keys: npt.NDArray[np.str_]) -> tuple[list[FloatArray], npt.NDArray[np.int64]]:
        """Knot sets and each row's set: its configuration's own sizes where probed, else all sizes."""
        sets = [self.knots_bytes]
        row_set = np.zeros(len(keys), dtype=np.int64)
        for key in np.unique(keys):
            own = self.key_knots_bytes.get(str(key))
            if own is not None:
                row_set[keys == key] = len(sets)
                sets.append(own)
        return sets, row_set


def _key_knots(keys: npt.NDArray[np.str_], sizes: FloatArray) -> dict[str, FloatArray]:
    return {str(key): knot_sizes(sizes[keys == key]) for key in np.unique(keys)}


@dataclass(frozen=True)
class _SideData:
    """One side's training rows as arrays."""

    x: Matrix
    y: FloatArray
    weights: FloatArray
    keys: npt.NDArray[np.str_]
    sizes: FloatArray
    truth: FloatArray
    scale: FloatArray
    cap: FloatArray


class BandwidthModel:
    """Bus bandwidth of an allreduce, learned from probes: ``fit(frame)``, then
    ``predict_busbw_bytes_per_s(frame)`` and ``predict_busbw_interval(frame)``. Constructor arguments are
    stored untouched; fitted attributes end in ``_``.

    Args:
        mtu_bytes: messages up to this size go to the small-message model, larger ones to the other.
        features: numeric feature columns; those absent or constant in the training set are dropped.
        categorical_features: categorical columns (backend and location, by default), dropped likewise.
        target: ``"link_fraction"`` learns ``log(busbw / link)`` and needs a link rating on every training
            row; ``"busbw"`` learns ``log(busbw)``; ``"auto"`` takes ``link_fraction`` where every training
            row has a rating, else ``busbw`` (see ``target_``).
        half_life_s: age at which a probe weighs half as much as the newest of its instance type; ``None``
            for no decay.
        n_trials: Optuna trials per side; 0 fits :data:`~srifty.network.tuning.DEFAULT_PARAMS`.
        n_folds: folds of the allocation-grouped cross-validation (tuning and intervals).
        seed: seeds the fold assignment, the tuner and XGBoost.
        n_jobs: XGBoost threads while fitting (``None``: all cores). Prediction uses one thread.
        timeout_s: wall-clock limit of each side's tuning, or ``None``.
        smooth_sizes: interpolate the booster log-log between its training sizes (``False``: the tree's
            steps, as the paper's model).
        residual_curves: correct probed configurations by their own residual curves.
        latency_baseline: measure the label against the latency–bandwidth reference ``α + bytes/link``
            rather than the link alone (``link_fraction`` only).
    """

    def __init__(
        self,
        *,
        mtu_bytes: int = DEFAULT_MTU_BYTES,
        features: tuple[str, ...] = DEFAULT_NUMERIC_FEATURES,
        categorical_features: tuple[str, ...] = DEFAULT_CATEGORICAL_FEATURES,
        target: Target = "auto",
        half_life_s: float | None = 30 * SECONDS_PER_DAY,
        n_trials: int = 40,
        n_folds: int = 5,
        seed: int = 0,
        n_jobs: int | None = None,
        timeout_s: float | None = None,
        smooth_sizes: bool = True,
        residual_curves: bool = True,
        latency_baseline: bool = True,
    ) -> None:
        self.mtu_bytes = mtu_bytes
        self.features = features
        self.categorical_features = categorical_features
        self.target = target
        self.half_life_s = half_life_s
        self.n_trials = n_trials
        self.n_folds = n_folds
        self.seed = seed
        self.n_jobs = n_jobs
        self.timeout_s = timeout_s
        self.smooth_sizes = smooth_sizes
        self.residual_curves = residual_curves
        self.latency_baseline = latency_baseline

    # ----------------------------------------------------------------------------------------- fit
    def _check_params(self) -> None:
        if self.target not in TARGETS:
            raise NetModelOptionError("target", f"must be one of {', '.join(TARGETS)}, got '{self.target}'.")
        if self.mtu_bytes < 1:
            raise NetModelOptionError("mtu_bytes", f"must be a positive number of bytes, got {self.mtu_bytes}.")
        if self.n_trials < 0:
            raise NetModelOptionError("n_trials", f"must be ≥ 0 (0: default hyperparameters), got {self.n_trials}.")
        if self.n_folds < 2:
            raise NetModelOptionError("n_folds", f"must be ≥ 2, got {self.n_folds}.")
        if self.half_life_s is not None and not (math.isfinite(self.half_life_s) and self.half_life_s > 0):
            raise NetModelOptionError(
                "half_life_s",
                f"(the half-life of probe weights) must be a positive number of seconds, or None for no decay; got "
                f"{self.half_life_s}.",
            )
        if self.n_jobs is not None and self.n_jobs < 1:
            raise NetModelOptionError("n_jobs", f"must be at least 1 thread, got {self.n_jobs}.")

    def _scale_bytes_per_s(self, frame: Table | pd.DataFrame) -> FloatArray:
        """What the log-label is relative to: the link (link_fraction) or 1 byte/s (busbw)."""
        if self.target_ == "busbw":
            return np.ones(len(frame))
        table = as_table(frame)
        scale = link_scale_bytes_per_s(table)
        scale = np.where(np.isfinite(scale), scale, self.scale_fill_bytes_per_s_)
        if self.latency_baseline and self.latency_s_ > 0:
            # 2·size, not the ring's 2·size·(n−1)/n: a reference that grew with the world size would let
            # predicted bandwidth rise with it, against the monotone constraints.
            moved = 2.0 * table.numeric("size_bytes")
            scale = scale / (1.0 + self.latency_s_ * scale / moved)
        return scale

    def _xgb_params(self, params: Mapping[str, Any], label: FloatArray, n_jobs: int | None) -> dict[str, Any]:
        out = {
            "objective": params["objective"],
            "max_depth": int(params["max_depth"]),
            "eta": float(params["learning_rate"]),
            "min_child_weight": float(params["min_child_weight"]),
            "subsample": float(params["subsample"]),
            "colsample_bytree": float(params["colsample_bytree"]),
            "lambda": float(params["reg_lambda"]),
            "tree_method": "hist",
            # xgboost's automatic base score can leave pseudo-Huber stuck; start at the median label.
            "base_score": float(np.median(label)),
            "monotone_constraints": self.encoder_.monotone_constraints(),
            "seed": self.seed,
            "max_cat_to_onehot": 1,
        }
        if n_jobs is not None:
            out["nthread"] = n_jobs
        if params["objective"] == "reg:pseudohubererror":
            out["huber_slope"] = float(params["huber_slope"])
        return out

    def _train(self, params: Mapping[str, Any], x: Matrix, y: FloatArray, w: FloatArray) -> Any:
        import xgboost as xgb

        enc = self.encoder_
        data = xgb.DMatrix(
            x, label=y, weight=w, feature_names=enc.names, feature_types=enc.types, enable_categorical=True
        )
        booster = xgb.train(self._xgb_params(params, y, self.n_jobs), data, num_boost_round=int(params["n_estimators"]))
        booster.set_param({"nthread": 1})
        return booster

    def _booster_label(self, side: str, fit: _SideFit, x: Matrix, keys: npt.NDArray[np.str_]) -> FloatArray:
        """The booster's label at each row, interpolated between knot sizes when smoothing."""
        if not len(x):
            return np.zeros(0)
        if not self.smooth_sizes or not len(fit.knots_bytes):
            return np.asarray(fit.booster.inplace_predict(x), dtype=np.float64)
        column = self.encoder_.numeric.index("size_bytes")
        sets, row_set = fit.knot_sets(keys)
        return smooth_predict(fit.booster.inplace_predict, x, column, sets, row_set, flat_above=side == "large")

    def _fit_pipeline(self, side: str, params: Mapping[str, Any], data: _SideData, rows: Any) -> _SideFit:
        booster = self._train(params, data.x[rows], data.y[rows], data.weights[rows])
        keys, sizes = data.keys[rows], data.sizes[rows]
        knots = knot_sizes(sizes) if self.smooth_sizes else np.zeros(0)
        fit = _SideFit(booster, knots, _key_knots(keys, sizes), ResidualCurves())
        if not self.residual_curves:
            return fit
        residual = data.y[rows] - self._booster_label(side, fit, data.x[rows], keys)
        return replace(fit, curves=ResidualCurves.fit(keys, sizes, residual, data.weights[rows]))

    def _pipeline_label(
        self, side: str, fit: _SideFit, x: Matrix, keys: npt.NDArray[np.str_], sizes: FloatArray
    ) -> FloatArray:
        return self._booster_label(side, fit, x, keys) + fit.curves.residual(keys, sizes)

    @staticmethod
    def _busbw(label: FloatArray, scale: FloatArray, cap: FloatArray) -> FloatArray:
        return np.clip(np.exp(label) * scale, 0.0, cap)

    def fit(self, frame: pd.DataFrame, provenance: Mapping[str, Any] | None = None) -> BandwidthModel:
        """Fit both sides of the MTU on probe rows; returns ``self``.

        Args:
            frame: probe rows with ``size_bytes``, ``world_size``, ``busbw_bytes_per_s``, and optionally
                the feature columns, ``instance_type``, ``allocation_id`` (needed to tune) and
                ``timestamp_s`` (for decay).
            provenance: free-form record of where the rows came from, kept in the metadata.

        Raises:
            NetModelError: missing or invalid columns, too few rows on a side of the MTU, or tuning
                asked for with fewer than two allocations.
        """
        self._check_params()
        validate_frame(frame, need_label=True)
        data = frame.reset_index(drop=True)
        sizes = np.unique(data["size_bytes"].to_numpy())
        if sizes.size < 2:
            raise NetModelError(
                f"the probes hold one message size ({int(sizes[0])} B); the model learns how bandwidth "
                "changes with size and interpolates between sizes, so probe a sweep (srifty probe's default "
                "runs 4 B to 512 MiB)."
            )
        scale = link_scale_bytes_per_s(data)
        all_rated = bool(np.isfinite(scale).all())
        if self.target == "link_fraction" and not all_rated:
            raise NetModelError(
                "target 'link_fraction' needs rated_network_gbps on every training row (and a known GPU "
                "for rows inside one multi-GPU VM); pass the rating when probing (--rated-network-gbps "
                "or a catalog --instance-type), or fit with target 'busbw' or 'auto' (--target auto)."
            )
        self.target_: Target = (
            "link_fraction" if self.target == "link_fraction" or (self.target == "auto" and all_rated) else "busbw"
        )
        self.scale_fill_bytes_per_s_ = float(np.median(scale)) if all_rated else float("nan")
        sizes = data["size_bytes"].to_numpy(dtype=np.float64)
        tiny = sizes <= min(1024, self.mtu_bytes)
        times = 2.0 * sizes / data["busbw_bytes_per_s"].to_numpy(dtype=np.float64)
        self.latency_s_ = float(np.median(times[tiny])) if tiny.any() else 0.0
        has_time = "timestamp_s" in data.columns
        stamps = data["timestamp_s"].to_numpy(dtype=np.float64) if has_time else np.zeros(len(data))
        self.reference_time_s_ = float(stamps.max()) if has_time else None
        by_type = data["instance_type"].astype(str).to_numpy() if "instance_type" in data.columns else None
        weights = decay_weights(stamps, self.half_life_s if has_time else None, groups=by_type)
        self.encoder_, self.dropped_features_ = build_encoder(data, self.features, self.categorical_features)
        self.intra_node_rows_ = int((is_intra_node(data) & np.isfinite(scale)).sum())
        self.configurations_ = configuration_sources(data, configuration_keys(data, self.encoder_))
        small = is_small_message(data["size_bytes"].to_numpy(), self.mtu_bytes)
        self.sides_: dict[str, _SideFit] = {}
        self.quantiles_: dict[str, ResidualQuantiles] = {}
        self.params_: dict[str, dict[str, Any]] = {}
        self.metrics_: dict[str, dict[str, Any]] = {}
        rng = np.random.default_rng(self.seed)
        for offset, (side, mask) in enumerate((("small", small), ("large", ~small))):
            self._fit_side(side, data.loc[mask].reset_index(drop=True), weights[mask], rng, offset)
        label_columns = [c for c in (*self.encoder_.names, "busbw_bytes_per_s") if c in data.columns]
        self.training_hash_ = training_set_hash(data, sorted(set(label_columns) - {"n_nodes", "link_gbps"}))
        self.n_rows_ = len(data)
        self.provenance_ = dict(provenance or {})
        return self

    def _side_data(self, part: pd.DataFrame, weights: FloatArray) -> _SideData:
        truth = part["busbw_bytes_per_s"].to_numpy(dtype=np.float64)
        scale = self._scale_bytes_per_s(part)
        return _SideData(
            x=self.encoder_.matrix(part),
            y=np.log(truth / scale),
            weights=weights,
            keys=configuration_keys(part, self.encoder_),
            sizes=part["size_bytes"].to_numpy(dtype=np.float64),
            truth=truth,
            scale=scale,
            cap=busbw_cap_bytes_per_s(part),
        )

    def _fit_side(
        self, side: str, part: pd.DataFrame, weights: FloatArray, rng: np.random.Generator, offset: int
    ) -> None:
        where = "≤" if side == "small" else ">"
        if len(part) < MIN_ROWS_PER_SIDE:
            raise NetModelError(
                f"only {len(part)} probe rows have messages {where} the MTU ({self.mtu_bytes} B); the "
                f"{side}-message model needs at least {MIN_ROWS_PER_SIDE}. Probe sizes on both sides of "
                "the MTU (the default sweep, 4 B to 512 MiB, does)."
            )
        distinct = np.unique(part["size_bytes"].to_numpy())
        if distinct.size < 2:
            raise NetModelError(
                f"the probes hold one message size {where} the MTU ({self.mtu_bytes} B), {int(distinct[0])} B; "
                "the model interpolates between sizes, so it needs at least two on each side. Probe a sweep "
                "(srifty probe's default runs 4 B to 512 MiB)."
            )
        data = self._side_data(part, weights)

        def score_fold(params: Mapping[str, Any], train: Any, test: Any) -> float:
            fit = self._fit_pipeline(side, params, data, train)
            label = self._pipeline_label(side, fit, data.x[test], data.keys[test], data.sizes[test])
            return mape(data.truth[test], self._busbw(label, data.scale[test], data.cap[test]), data.weights[test])

        groups = part["allocation_id"].astype(str).to_numpy() if "allocation_id" in part.columns else None
        if self.n_trials > 0 and groups is None:
            raise NetModelError(
                "tuning needs an allocation_id column to group cross-validation by allocation; "
                "add it, or fit without tuning (n_trials=0, --trials 0)."
            )
        n_allocations = int(np.unique(groups).size) if groups is not None else 0
        folds: list[Fold] = []
        if groups is not None and (n_allocations >= 2 or self.n_trials > 0):
            folds = grouped_folds(groups, self.n_folds, rng)  # raises for one allocation
        cv_mape: float | None = None
        trials = 0
        params = dict(DEFAULT_PARAMS)
        if self.n_trials > 0:
            params, cv_mape, trials = tune_params(folds, score_fold, self.n_trials, self.seed + offset, self.timeout_s)
        elif folds:
            cv_mape = cross_validate(params, folds, score_fold)
        fit = self._fit_pipeline(side, params, data, np.arange(len(part)))
        train_label = self._pipeline_label(side, fit, data.x, data.keys, data.sizes)
        self.sides_[side] = fit
        self.params_[side] = params
        self.quantiles_[side] = self._held_out_quantiles(side, params, data, part, folds, rng)
        self.metrics_[side] = {
            "n_rows": len(part),
            "n_allocations": n_allocations,
            "n_configurations": len(set(data.keys.tolist())),
            "cv_mape": cv_mape,
            "train_mape": mape(data.truth, self._busbw(train_label, data.scale, data.cap), weights),
            "trials": trials,
        }

    def _held_out_quantiles(
        self, side: str, params: Mapping[str, Any], data: _SideData, part: pd.DataFrame, folds: list[Fold],
        rng: np.random.Generator,
    ) -> ResidualQuantiles:  # fmt: skip
        """Residual quantiles from the allocation folds and from folds that hold out whole instance types."""
        all_folds = list(folds)
        if "instance_type" in part.columns and part["instance_type"].nunique() >= 2:
            all_folds += grouped_folds(part["instance_type"].astype(str).to_numpy(), self.n_folds, rng)
        residuals, weights, classes = [], [], []
        for train, test in all_folds:
            fit = self._fit_pipeline(side, params, data, train)
            label = self._pipeline_label(side, fit, data.x[test], data.keys[test], data.sizes[test])
            residuals.append(data.y[test] - label)
            weights.append(data.weights[test])
            classes.append(np.where(fit.probed(data.keys[test]), "probed", "unprobed"))
        if not all_folds:
            return ResidualQuantiles.fit(np.zeros(0), np.zeros(0), np.zeros(0, dtype=str))
        return ResidualQuantiles.fit(np.concatenate(residuals), np.concatenate(weights), np.concatenate(classes))

    # ------------------------------------------------------------------------------------- predict
    def _check_fitted(self) -> None:
        if not hasattr(self, "sides_"):
            raise NetModelError("this BandwidthModel is not fitted; call fit() or BandwidthModel.load().")

    @property
    def predicts_intra_node(self) -> bool:
        """Whether the training set had ranks inside one multi-GPU VM with a known intra-node link, so
        that the model itself answers for such configurations (the simulator asks it rather than a
        datasheet)."""
        return getattr(self, "intra_node_rows_", 0) > 0 and getattr(self, "target_", "") == "link_fraction"

    def _labels(self, data: Table) -> tuple[FloatArray, npt.NDArray[np.str_], npt.NDArray[np.str_]]:
        """``(label, configuration key, familiarity class)`` of every row."""
        x = self.encoder_.matrix(data)
        keys = configuration_keys(data, self.encoder_)
        sizes = data.numeric("size_bytes")
        label = np.empty(len(data))
        classes = np.empty(len(data), dtype=object)
        small = is_small_message(sizes, self.mtu_bytes)
        for side, mask in (("small", small), ("large", ~small)):
            if mask.any():
                fit = self.sides_[side]
                label[mask] = self._pipeline_label(side, fit, x[mask], keys[mask], sizes[mask])
                classes[mask] = np.where(fit.probed(keys[mask]), "probed", "unprobed")
        if self.smooth_sizes:
            self._bridge_the_mtu(label, x, keys, sizes)
        return label, keys, classes.astype(str)

    def _bridge_the_mtu(self, label: FloatArray, x: Matrix, keys: npt.NDArray[np.str_], sizes: FloatArray) -> None:
        """Between the largest probed size at or below the MTU and the smallest above it, interpolate
        log-log between the two sides' answers there (in place): bus bandwidth does not jump at the MTU,
        and neither side has seen the sizes in between."""
        below, above = self.sides_["small"], self.sides_["large"]
        sets, row_set = below.knot_sets(keys)
        last_below = np.array([sets[i][-1] for i in row_set])
        sets, row_set = above.knot_sets(keys)
        first_above = np.array([sets[i][0] for i in row_set])
        gap = (sizes > last_below) & (sizes < first_above)
        if not gap.any():
            return
        column = self.encoder_.numeric.index("size_bytes")
        edges = []
        for side, fit, edge in (("small", below, last_below[gap]), ("large", above, first_above[gap])):
            at_edge = x[gap].copy()
            at_edge[:, column] = edge
            edges.append(self._pipeline_label(side, fit, at_edge, keys[gap], edge))
        t = np.log(sizes[gap] / last_below[gap]) / np.log(first_above[gap] / last_below[gap])
        label[gap] = edges[0] + t * (edges[1] - edges[0])

    def predict_busbw_bytes_per_s(self, frame: Any) -> FloatArray:
        """Predicted bus bandwidth (bytes/s) of one transfer, for each row.

        ``frame`` needs ``size_bytes`` and ``world_size``; other feature columns are optional (see
        :mod:`srifty.network.features` for how missing ones are filled). A column mapping of arrays
        works as well as a DataFrame. The result is never negative and never above the network cap.
        """
        self._check_fitted()
        data = as_table(frame, NetModelError)
        validate_frame(data, need_label=False)
        label, _, _ = self._labels(data)
        return self._busbw(label, self._scale_bytes_per_s(data), busbw_cap_bytes_per_s(data))

    def probed(self, frame: Any) -> npt.NDArray[np.bool_]:
        """Whether each row's configuration was in the training set on its side of the MTU (what
        :meth:`familiarity` says, without asking the boosters)."""
        self._check_fitted()
        data = as_table(frame, NetModelError)
        validate_frame(data, need_label=False)
        keys = configuration_keys(data, self.encoder_)
        small = is_small_message(data.numeric("size_bytes"), self.mtu_bytes)
        out = np.zeros(len(data), dtype=bool)
        for side, mask in (("small", small), ("large", ~small)):
            if mask.any():
                out[mask] = self.sides_[side].probed(keys[mask])
        return out

    def familiarity(self, frame: Any) -> npt.NDArray[np.str_]:
        """``"probed"`` where the row's configuration (instance type, backend, inside or between VMs) was
        in the training set on its side of the MTU, else ``"unprobed"``."""
        self._check_fitted()
        data = as_table(frame, NetModelError)
        validate_frame(data, need_label=False)
        return self._labels(data)[2]

    def residual_quantiles(self, frame: Any, levels: npt.ArrayLike) -> FloatArray:
        """Quantiles of ``log(measured / predicted)`` busbw at ``levels`` for each row: ``(rows, levels)``,
        from held-out residuals of its side of the MTU and its familiarity (see
        :mod:`srifty.network.intervals`). Cheap: no booster is asked."""
        self._check_fitted()
        data = as_table(frame, NetModelError)
        validate_frame(data, need_label=False)
        keys = configuration_keys(data, self.encoder_)
        small = is_small_message(data.numeric("size_bytes"), self.mtu_bytes)
        out = np.zeros((len(data), np.atleast_1d(np.asarray(levels)).size))
        for side, mask in (("small", small), ("large", ~small)):
            if mask.any():
                classes = np.where(self.sides_[side].probed(keys[mask]), "probed", "unprobed")
                out[mask] = self.quantiles_[side].at(classes, levels)
        return out

    def predict_busbw_interval(self, frame: Any, coverage: float = 0.8) -> tuple[FloatArray, FloatArray]:
        """``(low, high)`` bus bandwidth (bytes/s) of a central interval that held-out rows of the same
        kind fell into with probability ``coverage`` (0.8: the 10th and 90th percentiles).

        Raises:
            NetModelError: a coverage outside (0, 1).
        """
        if not 0.0 < coverage < 1.0:
            raise NetModelError(f"coverage must be between 0 and 1 (exclusive), got {coverage}.")
        self._check_fitted()
        data = as_table(frame, NetModelError)
        validate_frame(data, need_label=False)
        label, _, _ = self._labels(data)
        q = self.residual_quantiles(data, [(1.0 - coverage) / 2.0, (1.0 + coverage) / 2.0])
        scale, cap = self._scale_bytes_per_s(data), busbw_cap_bytes_per_s(data)
        return self._busbw(label + q[:, 0], scale, cap), self._busbw(label + q[:, 1], scale, cap)

    def explain(self, frame: Any) -> list[str]:
        """One line per row saying where its answer comes from and how far off such answers have been."""
        self._check_fitted()
        data = as_table(frame, NetModelError)
        validate_frame(data, need_label=False)
        _, keys, classes = self._labels(data)
        q = np.exp(self.residual_quantiles(data, [0.1, 0.5, 0.9]))
        lines = []
        for row, (key, kind, (low, mid, high)) in enumerate(zip(keys, classes, q, strict=True)):
            spread = f"80 % of held-out cases within {100 * (low / mid - 1):+.0f} % / {100 * (high / mid - 1):+.0f} %"
            record = self.configurations_.get(str(key))
            if kind == "probed" and record is not None:
                sources = ", ".join(record["sources"][:4]) + (", …" if len(record["sources"]) > 4 else "")
                lines.append(
                    f"probed: {record['rows']} rows, {record['allocations']} allocation(s) ({sources}); {spread}"
                )
            else:
                lines.append(f"not probed: answered from the other configurations' measurements; {spread}")
            asked = (data.text("collective")[row] if "collective" in data else None) or "allreduce"
            if asked != "allreduce" and "collective" not in self.encoder_.categorical:
                lines[-1] += (
                    f" ({asked} answered as an allreduce's bus bandwidth: this model learned no other collective)"
                )
        return lines

    def predict_time_s(self, frame: Any) -> FloatArray:
        """Predicted seconds of each row's collective (its ``collective`` column; allreduce without one), from
        :meth:`predict_busbw_bytes_per_s`."""
        data = as_table(frame, NetModelError)
        busbw = self.predict_busbw_bytes_per_s(data)
        collectives = data.text("collective") if "collective" in data else [None] * len(data)
        passes = np.array([ring_passes(name or "allreduce") for name in collectives], dtype=np.float64)
        return passes / 2.0 * allreduce_time_s(data.numeric("size_bytes"), data.numeric("world_size"), busbw)

    # ---------------------------------------------------------------------------------- save / load
    def metadata(self) -> dict[str, Any]:
        """The JSON-ready record written beside the XGBoost files."""
        self._check_fitted()
        import xgboost as xgb

        from srifty import __version__

        return {
            "mtu_bytes": self.mtu_bytes,
            "target": self.target_,
            "requested_target": self.target,
            "features": self.encoder_.to_json(),
            "requested_features": list(self.features),
            "requested_categorical_features": list(self.categorical_features),
            "dropped_features": list(self.dropped_features_),
            "scale_fill_bytes_per_s": None if np.isnan(self.scale_fill_bytes_per_s_) else self.scale_fill_bytes_per_s_,
            "intra_node_rows": self.intra_node_rows_,
            "configurations": self.configurations_,
            "latency_baseline": self.latency_baseline,
            "latency_s": self.latency_s_,
            "half_life_s": self.half_life_s,
            "reference_time_s": self.reference_time_s_,
            "n_trials": self.n_trials,
            "n_folds": self.n_folds,
            "seed": self.seed,
            "smooth_sizes": self.smooth_sizes,
            "residual_curves": self.residual_curves,
            "training_set_hash": self.training_hash_,
            "n_rows": self.n_rows_,
            "params": self.params_,
            "metrics": self.metrics_,
            "sides": {
                side: {
                    "knots_bytes": [float(k) for k in self.sides_[side].knots_bytes],
                    "configuration_knots_bytes": {
                        key: [float(k) for k in knots] for key, knots in self.sides_[side].key_knots_bytes.items()
                    },
                    "curves": self.sides_[side].curves.to_json(),
                    "residual_quantiles": self.quantiles_[side].to_json(),
                }
                for side in SIDES
            },
            "provenance": {
                **self.provenance_,
                "srifty_version": __version__,
                "xgboost_version": xgb.__version__,
                "saved_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            },
        }

    def save(self, path: str | Path) -> dict[str, Path]:
        """Write the two XGBoost JSON models and the ``.meta.json`` sidecar (see :func:`model_paths`);
        returns the paths written. Never pickles.

        Old or new, never a mix: the boosters are written first under names that carry their content's
        digest, so they never overwrite the boosters an existing sidecar names; the sidecar is then
        replaced atomically; only after that are boosters no sidecar names removed. A crash at any point
        leaves the previous model loadable, or the new one. Saves to one path are serialised by a lock
        file beside the sidecar.
        """
        self._check_fitted()
        raws = {side: bytes(self.sides_[side].booster.save_raw("json")) for side in SIDES}
        digests = {side: hashlib.sha256(raw).hexdigest() for side, raw in raws.items()}
        paths = model_paths(path, digests)
        with exclusive_lock(paths["meta"].with_name(paths["meta"].name + ".lock")):
            files = {}
            for side in SIDES:
                atomic_write_bytes(paths[side], raws[side])
                files[side] = {"file": paths[side].name, "sha256": digests[side]}
            write_json_artifact(paths["meta"], MODEL_KIND, MODEL_SCHEMA_VERSION, {**self.metadata(), "files": files})
            _remove_unnamed_boosters(paths)
        return paths

    @classmethod
    def load(cls, path: str | Path) -> BandwidthModel:
        """Load a model written by :meth:`save` (pass the same path, or its ``.meta.json``).

        Raises:
            ArtifactError: a file is missing, of another kind or an older schema (refit it), or does not
                match the sidecar's checksum.
        """
        paths = model_paths(path)
        doc = read_json_artifact(paths["meta"], MODEL_KIND, MODEL_SCHEMA_VERSION)
        try:
            return cls._from_document(doc, paths["meta"])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as err:
            raise ArtifactError(
                f"'{paths['meta']}' (or a model file it names) is malformed ({type(err).__name__}: {err}); "
                "fit the model again with `srifty fit-net`."
            ) from None

    @classmethod
    def _from_document(cls, doc: dict[str, Any], meta: Path) -> BandwidthModel:
        model = cls(
            mtu_bytes=int(doc["mtu_bytes"]),
            features=tuple(doc["requested_features"]),
            categorical_features=tuple(doc["requested_categorical_features"]),
            target=doc["requested_target"],
            half_life_s=doc["half_life_s"],
            n_trials=int(doc["n_trials"]),
            n_folds=int(doc["n_folds"]),
            seed=int(doc["seed"]),
            smooth_sizes=bool(doc["smooth_sizes"]),
            residual_curves=bool(doc["residual_curves"]),
            latency_baseline=bool(doc["latency_baseline"]),
        )
        model.latency_s_ = float(doc["latency_s"])
        model.target_ = doc["target"]
        model.encoder_ = FeatureEncoder.from_json(doc["features"])
        model.dropped_features_ = list(doc["dropped_features"])
        fill = doc["scale_fill_bytes_per_s"]
        model.scale_fill_bytes_per_s_ = float("nan") if fill is None else float(fill)
        model.intra_node_rows_ = int(doc["intra_node_rows"])
        model.configurations_ = dict(doc["configurations"])
        model.reference_time_s_ = doc["reference_time_s"]
        model.training_hash_ = doc["training_set_hash"]
        model.n_rows_ = int(doc["n_rows"])
        model.params_ = doc["params"]
        model.metrics_ = doc["metrics"]
        model.provenance_ = doc["provenance"]
        model.sides_ = {}
        model.quantiles_ = {}
        for side in SIDES:
            name = doc["files"][side]["file"]
            if not isinstance(name, str) or Path(name).name != name:
                raise ArtifactError(f"'{meta}' names {side} model file {name!r}, not a file beside it; fit it again.")
            file = meta.with_name(name)
            if not file.is_file():
                raise ArtifactError(f"model file '{file}' named by '{meta}' is missing; re-save the model.")
            raw = file.read_bytes()
            if hashlib.sha256(raw).hexdigest() != doc["files"][side]["sha256"]:
                raise ArtifactError(
                    f"'{file}' does not match the checksum in '{meta}': the files come from "
                    "different saves. Re-save the model."
                )
            booster = _load_booster(raw)
            if booster.num_features() != len(model.encoder_.names):
                raise ArtifactError(
                    f"'{file}' reads {booster.num_features()} features but '{meta}' lists "
                    f"{len(model.encoder_.names)}; the files do not belong together. Fit the model again."
                )
            record = doc["sides"][side]
            knots = _knots(record["knots_bytes"], meta, f"sides.{side}.knots_bytes")
            own = {
                k: _knots(v, meta, f"sides.{side}.configuration_knots_bytes.{k}")
                for k, v in record["configuration_knots_bytes"].items()
            }
            model.sides_[side] = _SideFit(booster, knots, own, ResidualCurves.from_json(record["curves"]))
            model.quantiles_[side] = ResidualQuantiles.from_json(record["residual_quantiles"])
        return model

    def __repr__(self) -> str:
        state = f"fitted on {self.n_rows_} rows" if hasattr(self, "sides_") else "not fitted"
        target = getattr(self, "target_", self.target)
        return f"BandwidthModel(mtu_bytes={self.mtu_bytes}, target='{target}', {state})"
