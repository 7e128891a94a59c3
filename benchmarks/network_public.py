"""Bus-bandwidth model accuracy on public nccl-tests tables of real clusters (protocols of
``benchmarks/network_accuracy.py``).

* **Alternate sizes held out.** Every other message size of every complete nccl-tests table is held out;
  one model is fitted on the rest of all tables together (the table as a categorical feature and as the
  instance type, so that each table is its own configuration) and asked about the held-out sizes. Beside
  it: log-log interpolation between the same table's training sizes.
* **Leave one fabric out.** Every table of one instance type (or one DGX system) is held out; the model
  is fitted on the other tables and asked about the held-out ones, a fabric it never saw. Beside it: the
  rated link (the network cap between VMs, the GPUs' intra-node link inside one) and the alpha-beta
  baseline fitted on the same tables.
* **Check points.** The embedded default model against public measurements it was not fitted on
  (partial sweeps and single sizes: p4d at 1 to 4 nodes, p5 and p5en, an 8× V100 node).

The functions take any model class with ``fit`` and ``predict_busbw_bytes_per_s`` (intervals where the
model has ``predict_busbw_interval``), so the same protocols measure older versions of the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from srifty.network import DEFAULT_CATEGORICAL_FEATURES, busbw_cap_bytes_per_s, load_public_probes
from srifty.plan import AlphaBetaModel

FloatArray = npt.NDArray[np.float64]
ModelFactory = Callable[..., Any]
MTU_BYTES = 9001


def nccl_tests_tables() -> pd.DataFrame:
    """The complete nccl-tests ``all_reduce_perf`` tables among the public data (11 tables)."""
    frame = load_public_probes()
    return frame[frame["tool"] == "nccl-tests"].reset_index(drop=True)


def rated_link_bytes_per_s(frame: pd.DataFrame) -> FloatArray:
    """The rated-link baseline: the network cap between VMs, the intra-node link inside one VM."""
    cap = busbw_cap_bytes_per_s(frame)
    intra = frame["intra_node_link_gbps"].to_numpy(dtype=np.float64) * 1e9 / 8
    return np.where(np.isfinite(cap), cap, intra)


def _interval(model: Any, frame: pd.DataFrame) -> tuple[FloatArray, FloatArray]:
    if not hasattr(model, "predict_busbw_interval"):
        nan = np.full(len(frame), np.nan)
        return nan, nan
    low, high = model.predict_busbw_interval(frame, 0.8)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def loglog_interpolation(train: pd.DataFrame, test: pd.DataFrame) -> FloatArray:
    """Each test row by straight-line interpolation in (log size, log busbw) between its table's training
    sizes (flat beyond them)."""
    out = np.full(len(test), np.nan)
    for table, rows in test.groupby("table_id"):
        known = train[train["table_id"] == table].sort_values("size_bytes")
        out[test.index.get_indexer(rows.index)] = np.exp(
            np.interp(
                np.log(rows["size_bytes"].to_numpy(dtype=np.float64)),
                np.log(known["size_bytes"].to_numpy(dtype=np.float64)),
                np.log(known["busbw_bytes_per_s"].to_numpy(dtype=np.float64)),
            )
        )
    return out


def predictions(model: Any, frame: pd.DataFrame, *keep: str, **extra: Any) -> pd.DataFrame:
    """Per row of ``frame``: its ``keep`` columns, table, size, truth, the model, its 80 % interval and
    ``extra`` columns."""
    low, high = _interval(model, frame)
    columns = {name: frame[name].to_numpy() for name in ("table_id", *keep, "size_bytes")}
    truth = {"truth": frame["busbw_bytes_per_s"].to_numpy(), "model": model.predict_busbw_bytes_per_s(frame)}
    return pd.DataFrame({**columns, **truth, "low": low, "high": high, **extra})


def alternate_sizes(make_model: ModelFactory, trials: int, seed: int) -> pd.DataFrame:
    """Per held-out row: table, size, truth, the model, its 80 % interval and log-log interpolation."""
    frame = nccl_tests_tables().assign(instance_type=lambda f: f["table_id"])
    held_out = (frame.groupby("table_id").cumcount() % 2 == 1).to_numpy()
    train, test = frame[~held_out], frame[held_out]
    categorical = (*DEFAULT_CATEGORICAL_FEATURES, "table_id")
    model = make_model(n_trials=trials, n_folds=3, seed=seed, categorical_features=categorical).fit(train)
    return predictions(model, test, interpolation=loglog_interpolation(train, test))


def fabric_of(frame: pd.DataFrame) -> pd.Series:
    """What leave-one-fabric-out holds out together: the instance type (all DGX A100 tables are one)."""
    return frame["instance_type"].astype(str)


def leave_one_fabric_out(make_model: ModelFactory, trials: int, seed: int) -> pd.DataFrame:
    """Per row of each held-out fabric: truth, the model (fitted on the other fabrics), its interval, the
    alpha-beta baseline fitted on the same tables, and the rated link."""
    frame = nccl_tests_tables()
    fabric = fabric_of(frame)
    parts = []
    for i, held in enumerate(sorted(fabric.unique())):
        test_mask = (fabric == held).to_numpy()
        train, test = frame[~test_mask], frame[test_mask]
        model = make_model(n_trials=trials, n_folds=3, seed=seed + i).fit(train)
        baselines = {
            "alpha_beta": AlphaBetaModel().fit(train).predict_busbw_bytes_per_s(test),
            "rated_link": rated_link_bytes_per_s(test),
        }
        parts.append(predictions(model, test, **baselines).assign(fabric=held))
    return pd.concat(parts, ignore_index=True)


def check_points(model: Any) -> pd.DataFrame:
    """The model against the public measurements marked ``check`` (never trained on)."""
    frame = load_public_probes(("check",))
    return predictions(model, frame, "instance_type", "n_nodes", "world_size")


def ape(pred: npt.ArrayLike, truth: npt.ArrayLike) -> FloatArray:
    """Absolute percentage error (fractions) per row."""
    t = np.asarray(truth, dtype=np.float64)
    return np.abs(np.asarray(pred, dtype=np.float64) - t) / t


def per_table_mape(rows: pd.DataFrame, column: str, above_mtu: bool) -> pd.Series:
    """MAPE (fraction) of ``column`` per table, on rows above (or at and below) the MTU."""
    side = rows["size_bytes"] > MTU_BYTES if above_mtu else rows["size_bytes"] <= MTU_BYTES
    part = rows[side]
    return pd.Series(ape(part[column], part["truth"]), index=part.index).groupby(part["table_id"]).mean()


def coverage(rows: pd.DataFrame) -> float:
    """Share of rows inside their 80 % interval (NaN where the model gives none)."""
    if rows["low"].isna().all():
        return float("nan")
    inside = (rows["truth"] >= rows["low"]) & (rows["truth"] <= rows["high"])
    return float(inside.mean())
