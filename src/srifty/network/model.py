"""The learned bus-bandwidth model (the paper's allreduce model): two XGBoost regressors split at the MTU.

Srifty predicts bus bandwidth rather than allreduce time, because concurrent transfers share links and
the simulator needs a rate to share. Following the paper:

* one model for messages ``≤ MTU`` and one for ``> MTU`` (MTU defaults to EC2's 9001 bytes), since one
  model over both regimes predicted nonsense for small buffers;
* robust objectives (pseudo-Huber among them) and hyperparameters tuned with Optuna by MAPE, with
  cross-validation grouped by allocation (:mod:`srifty.network.tuning`);
* sample weights decayed by age, so retraining after a network upgrade favours new probes.

Beyond the paper, the label is learned as ``log(busbw / rated link)`` (``link_fraction``) whenever every
training row has a rating (``target="auto"``, the default; otherwise ``log(busbw)``): a fraction of the
rated link transfers to link speeds the probes never covered (the embedded testbed data has 10–50 Gbps;
the catalog goes to 3200), where a tree on raw bandwidth would stay flat. The fraction is of the
*network* rating, also for a single multi-GPU VM, whose traffic never touches the network: such
predictions scale with a rating that does not bound them (see the data README).
Predictions are positive by construction (an exponential) and capped at the rated link
(:func:`~srifty.network.features.busbw_cap_bytes_per_s`). Monotone constraints keep bandwidth from
rising with world size, nodes or concurrent transfers, so extrapolation beyond the largest measured world
size is flat and bounded.

Prediction cost is one pass over the frame's columns plus two ``inplace_predict`` calls on a float32
matrix; about 2–4 ms for 200 rows on one core of this project's machines (see BENCHMARKS.md).
"""

from __future__ import annotations

import glob
import hashlib
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from srifty.artifacts import atomic_write_bytes, read_json_artifact, write_json_artifact
from srifty.errors import ArtifactError
from srifty.network.dataset import as_frame, exclusive_lock, validate_frame
from srifty.network.errors import NetModelError
from srifty.network.features import (
    DEFAULT_CATEGORICAL_FEATURES,
    DEFAULT_NUMERIC_FEATURES,
    FeatureEncoder,
    build_encoder,
    busbw_cap_bytes_per_s,
)
from srifty.network.tuning import (
    DEFAULT_PARAMS,
    cross_validate,
    decay_weights,
    grouped_folds,
    mape,
    tune_params,
)
from srifty.units import gbps_to_bytes_per_s
from srifty.vocab.busbw import DEFAULT_MTU_BYTES, allreduce_time_s, is_small_message

Target = Literal["auto", "link_fraction", "busbw"]
TARGETS: tuple[Target, ...] = ("auto", "link_fraction", "busbw")
SIDES = ("small", "large")
MODEL_KIND = "bandwidth-model"
MODEL_SCHEMA_VERSION = 1
#: Fewer rows than this on one side of the MTU cannot train that side's model.
MIN_ROWS_PER_SIDE = 8
SECONDS_PER_DAY = 86400.0
FloatArray = npt.NDArray[np.float64]


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


def training_set_hash(frame: pd.DataFrame, columns: list[str]) -> str:
    """``sha256:<hex>`` over the given columns of every row, in order (stable across runs)."""
    hashed = pd.util.hash_pandas_object(frame[columns], index=False).to_numpy()
    return "sha256:" + hashlib.sha256(hashed.tobytes()).hexdigest()


class BandwidthModel:
    """Bus bandwidth of an allreduce, learned from probes: ``fit(frame)``, then
    ``predict_busbw_bytes_per_s(frame)``. Constructor arguments are stored untouched; fitted attributes
    end in ``_``.

    Args:
        mtu_bytes: messages up to this size go to the small-message model, larger ones to the other.
        features: numeric feature columns; those absent or constant in the training set are dropped.
        categorical_features: categorical columns (location, by default), dropped likewise.
        target: ``"link_fraction"`` learns ``log(busbw / rated link)`` and needs ``rated_network_gbps``
            on every training row; ``"busbw"`` learns ``log(busbw)``; ``"auto"`` takes
            ``link_fraction`` where every training row has a rating, else ``busbw`` (see ``target_``).
        half_life_s: age at which a probe weighs half as much as the newest; ``None`` for no decay.
        n_trials: Optuna trials per side; 0 fits :data:`~srifty.network.tuning.DEFAULT_PARAMS`.
        n_folds: folds of the allocation-grouped cross-validation.
        seed: seeds the fold assignment, the tuner and XGBoost.
        n_jobs: XGBoost threads while fitting (``None``: all cores). Prediction uses one thread.
        timeout_s: wall-clock limit of each side's tuning, or ``None``.
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

    # ----------------------------------------------------------------------------------------- fit
    def _check_params(self) -> None:
        if self.target not in TARGETS:
            raise NetModelError(f"target must be one of {', '.join(TARGETS)}, got '{self.target}'.")
        if self.mtu_bytes < 1:
            raise NetModelError(f"mtu_bytes (--mtu-bytes) must be a positive number of bytes, got {self.mtu_bytes}.")
        if self.n_trials < 0 or self.n_folds < 2:
            raise NetModelError(
                f"n_trials (--trials) must be ≥ 0 and n_folds (--folds) ≥ 2, got {self.n_trials} and {self.n_folds}."
            )
        if self.half_life_s is not None and not (math.isfinite(self.half_life_s) and self.half_life_s > 0):
            raise NetModelError(
                "the half-life of probe weights (--half-life-days) must be a positive number of days, or 0 for no "
                f"decay; got {self.half_life_s / SECONDS_PER_DAY:g} days."
            )
        if self.n_jobs is not None and self.n_jobs < 1:
            raise NetModelError(f"n_jobs (--jobs) must be at least 1 thread, got {self.n_jobs}.")

    def _label(self, frame: pd.DataFrame) -> FloatArray:
        busbw = frame["busbw_bytes_per_s"].to_numpy(dtype=np.float64)
        return np.log(busbw / self._scale_bytes_per_s(frame))

    def _scale_bytes_per_s(self, frame: pd.DataFrame) -> FloatArray:
        """What the log-label is relative to: the rated link (link_fraction) or 1 byte/s (busbw)."""
        if self.target_ == "busbw":
            return np.ones(len(frame))
        if "rated_network_gbps" not in frame.columns:
            rated = np.full(len(frame), np.nan)
        else:
            rated = pd.to_numeric(frame["rated_network_gbps"], errors="coerce").to_numpy(dtype=np.float64)
        fill = getattr(self, "rating_fill_gbps_", np.nan)
        rated = np.where(np.isfinite(rated) & (rated > 0), rated, fill)
        return gbps_to_bytes_per_s(1.0) * rated

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

    def _train(self, params: Mapping[str, Any], x: npt.NDArray[np.float32], y: FloatArray, w: FloatArray) -> Any:
        import xgboost as xgb

        enc = self.encoder_
        data = xgb.DMatrix(
            x, label=y, weight=w, feature_names=enc.names, feature_types=enc.types, enable_categorical=True
        )
        booster = xgb.train(self._xgb_params(params, y, self.n_jobs), data, num_boost_round=int(params["n_estimators"]))
        booster.set_param({"nthread": 1})
        return booster

    def _busbw_from(self, raw: npt.NDArray[np.float32], frame: pd.DataFrame) -> FloatArray:
        busbw = np.exp(raw.astype(np.float64)) * self._scale_bytes_per_s(frame)
        return np.clip(busbw, 0.0, busbw_cap_bytes_per_s(frame))

    def fit(self, frame: pd.DataFrame, provenance: Mapping[str, Any] | None = None) -> BandwidthModel:
        """Fit both models on probe rows; returns ``self``.

        Args:
            frame: probe rows with ``size_bytes``, ``world_size``, ``busbw_bytes_per_s``, and optionally
                the feature columns, ``allocation_id`` (needed to tune) and ``timestamp_s`` (for decay).
            provenance: free-form record of where the rows came from, kept in the metadata.

        Raises:
            NetModelError: missing or invalid columns, too few rows on a side of the MTU, or tuning
                asked for with fewer than two allocations.
        """
        self._check_params()
        validate_frame(frame, need_label=True)
        data = frame.reset_index(drop=True)
        column = data["rated_network_gbps"] if "rated_network_gbps" in data.columns else pd.Series([])
        rated = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
        all_rated = rated.size == len(data) and bool((np.isfinite(rated) & (rated > 0)).all())
        if self.target == "link_fraction" and not all_rated:
            raise NetModelError(
                "target 'link_fraction' needs rated_network_gbps on every training row; pass the "
                "rating when probing (--rated-network-gbps or a catalog --instance-type), or fit "
                "with target 'busbw' or 'auto' (--target auto)."
            )
        self.target_: Target = (
            "link_fraction" if self.target == "link_fraction" or (self.target == "auto" and all_rated) else "busbw"
        )
        if self.target_ == "link_fraction":
            self.rating_fill_gbps_ = float(np.median(rated))
        has_time = "timestamp_s" in data.columns
        stamps = data["timestamp_s"].to_numpy(dtype=np.float64) if has_time else np.zeros(len(data))
        self.reference_time_s_ = float(stamps.max()) if has_time else None
        weights = decay_weights(stamps, self.half_life_s if has_time else None)
        self.encoder_, self.dropped_features_ = build_encoder(data, self.features, self.categorical_features)
        small = is_small_message(data["size_bytes"].to_numpy(), self.mtu_bytes)
        self.boosters_: dict[str, Any] = {}
        self.params_: dict[str, dict[str, Any]] = {}
        self.metrics_: dict[str, dict[str, Any]] = {}
        rng = np.random.default_rng(self.seed)
        for offset, (side, mask) in enumerate((("small", small), ("large", ~small))):
            self._fit_side(side, data.loc[mask].reset_index(drop=True), weights[mask], rng, offset)
        label_columns = [c for c in (*self.encoder_.names, "busbw_bytes_per_s") if c in data.columns]
        self.training_hash_ = training_set_hash(data, sorted(set(label_columns) - {"n_nodes"}))
        self.n_rows_ = len(data)
        self.provenance_ = dict(provenance or {})
        return self

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
        x = self.encoder_.matrix(part)
        y = self._label(part)
        truth = part["busbw_bytes_per_s"].to_numpy(dtype=np.float64)

        def score_fold(params: Mapping[str, Any], train: Any, test: Any) -> float:
            booster = self._train(params, x[train], y[train], weights[train])
            pred = self._busbw_from(booster.inplace_predict(x[test]), part.iloc[test])
            return mape(truth[test], pred, weights[test])

        groups = part["allocation_id"].astype(str).to_numpy() if "allocation_id" in part.columns else None
        n_allocations = int(np.unique(groups).size) if groups is not None else 0
        cv_mape: float | None = None
        trials = 0
        params = dict(DEFAULT_PARAMS)
        if self.n_trials > 0:
            if groups is None:
                raise NetModelError(
                    "tuning needs an allocation_id column to group cross-validation by allocation; "
                    "add it, or fit without tuning (n_trials=0, --trials 0)."
                )
            folds = grouped_folds(groups, self.n_folds, rng)
            params, cv_mape, trials = tune_params(folds, score_fold, self.n_trials, self.seed + offset, self.timeout_s)
        elif groups is not None and n_allocations >= 2:
            cv_mape = cross_validate(params, grouped_folds(groups, self.n_folds, rng), score_fold)
        booster = self._train(params, x, y, weights)
        train_pred = self._busbw_from(booster.inplace_predict(x), part)
        self.boosters_[side] = booster
        self.params_[side] = params
        self.metrics_[side] = {
            "n_rows": len(part),
            "n_allocations": n_allocations,
            "cv_mape": cv_mape,
            "train_mape": mape(truth, train_pred, weights),
            "trials": trials,
        }

    # ------------------------------------------------------------------------------------- predict
    def _check_fitted(self) -> None:
        if not hasattr(self, "boosters_"):
            raise NetModelError("this BandwidthModel is not fitted; call fit() or BandwidthModel.load().")

    def predict_busbw_bytes_per_s(self, frame: pd.DataFrame | Mapping[str, Any]) -> FloatArray:
        """Predicted bus bandwidth (bytes/s) of one transfer, for each row.

        ``frame`` needs ``size_bytes`` and ``world_size``; other feature columns are optional (see
        :mod:`srifty.network.features` for how missing ones are filled). A column mapping of arrays
        works as well as a DataFrame. The result is never negative and never above the rated link.
        """
        self._check_fitted()
        data = as_frame(frame)
        validate_frame(data, need_label=False)
        x = self.encoder_.matrix(data)
        raw = np.empty(len(data), dtype=np.float32)
        small = is_small_message(data["size_bytes"].to_numpy(), self.mtu_bytes)
        for side, mask in (("small", small), ("large", ~small)):
            if mask.any():
                raw[mask] = self.boosters_[side].inplace_predict(x[mask])
        return self._busbw_from(raw, data)

    def predict_time_s(self, frame: pd.DataFrame | Mapping[str, Any]) -> FloatArray:
        """Predicted seconds of each row's allreduce, from :meth:`predict_busbw_bytes_per_s`."""
        data = as_frame(frame)
        busbw = self.predict_busbw_bytes_per_s(data)
        return allreduce_time_s(data["size_bytes"].to_numpy(), data["world_size"].to_numpy(), busbw)

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
            "rating_fill_gbps": getattr(self, "rating_fill_gbps_", None),
            "half_life_s": self.half_life_s,
            "reference_time_s": self.reference_time_s_,
            "n_trials": self.n_trials,
            "n_folds": self.n_folds,
            "seed": self.seed,
            "training_set_hash": self.training_hash_,
            "n_rows": self.n_rows_,
            "params": self.params_,
            "metrics": self.metrics_,
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
        raws = {side: bytes(self.boosters_[side].save_raw("json")) for side in SIDES}
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
            ArtifactError: a file is missing, of another kind, or does not match the sidecar's checksum.
        """
        import xgboost as xgb

        paths = model_paths(path)
        doc = read_json_artifact(paths["meta"], MODEL_KIND, MODEL_SCHEMA_VERSION)
        try:
            return cls._from_document(doc, paths["meta"])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, xgb.core.XGBoostError) as err:
            raise ArtifactError(
                f"'{paths['meta']}' (or a model file it names) is malformed ({type(err).__name__}: {err}); "
                "fit the model again with `srifty fit-net`."
            ) from None

    @classmethod
    def _from_document(cls, doc: dict[str, Any], meta: Path) -> BandwidthModel:
        import xgboost as xgb

        model = cls(
            mtu_bytes=int(doc["mtu_bytes"]),
            features=tuple(doc["requested_features"]),
            categorical_features=tuple(doc["requested_categorical_features"]),
            target=doc["requested_target"],
            half_life_s=doc["half_life_s"],
            n_trials=int(doc["n_trials"]),
            n_folds=int(doc["n_folds"]),
            seed=int(doc["seed"]),
        )
        model.target_ = doc["target"]
        model.encoder_ = FeatureEncoder.from_json(doc["features"])
        model.dropped_features_ = list(doc["dropped_features"])
        if doc["rating_fill_gbps"] is not None:
            model.rating_fill_gbps_ = float(doc["rating_fill_gbps"])
        model.reference_time_s_ = doc["reference_time_s"]
        model.training_hash_ = doc["training_set_hash"]
        model.n_rows_ = int(doc["n_rows"])
        model.params_ = doc["params"]
        model.metrics_ = doc["metrics"]
        model.provenance_ = doc["provenance"]
        model.boosters_ = {}
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
            booster = xgb.Booster()
            booster.load_model(bytearray(raw))
            booster.set_param({"nthread": 1})
            if booster.num_features() != len(model.encoder_.names):
                raise ArtifactError(
                    f"'{file}' reads {booster.num_features()} features but '{meta}' lists "
                    f"{len(model.encoder_.names)}; the files do not belong together. Fit the model again."
                )
            model.boosters_[side] = booster
        return model

    def __repr__(self) -> str:
        state = f"fitted on {self.n_rows_} rows" if hasattr(self, "boosters_") else "not fitted"
        target = getattr(self, "target_", self.target)
        return f"BandwidthModel(mtu_bytes={self.mtu_bytes}, target='{target}', {state})"
