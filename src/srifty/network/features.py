"""Feature matrices for the bandwidth model, and the physical cap on bus bandwidth.

Numeric features are read as float; a column missing from a prediction frame, or a missing value in
it, is filled with the value recorded at fit time (one transfer and one GPU per node where those are
missing, else the training set's median), so a caller that knows less than the training set still gets
an answer. Categorical features (location, by default) are
coded against the categories seen at fit time; unseen values become missing, which XGBoost routes down
each split's learned default branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from srifty.units import gbps_to_bytes_per_s

#: Numeric features of the paper's dataset that carry physics: message size, ranks, nodes, GPUs per
#: node, concurrent transfers and the provider's rated link.
DEFAULT_NUMERIC_FEATURES = (
    "size_bytes",
    "world_size",
    "n_nodes",
    "gpus_per_node",
    "n_concurrent",
    "rated_network_gbps",
)
#: The paper's location features; dropped at fit time where the training set has a single value.
DEFAULT_CATEGORICAL_FEATURES = ("cloud", "region", "zone")

#: Fill values with a physical meaning for a prediction frame that lacks the column: one transfer at a
#: time, one GPU per node. Other numeric features fall back to the training set's median.
NATURAL_FILL: Mapping[str, float] = {"n_concurrent": 1.0, "gpus_per_node": 1.0}

#: XGBoost monotone constraints: more ranks, more nodes or more concurrent transfers never raise the
#: bandwidth one transfer gets. This also makes extrapolation past the largest measured world size
#: flat, never rising.
MONOTONE_SIGNS: Mapping[str, int] = {"world_size": -1, "n_nodes": -1, "n_concurrent": -1}


def n_nodes_of(frame: pd.DataFrame) -> npt.NDArray[np.float64]:
    """``n_nodes`` from the frame, or ``ceil(world_size / gpus_per_node)`` (1 GPU per node if unknown)."""
    if "n_nodes" in frame.columns:
        values = pd.to_numeric(frame["n_nodes"], errors="coerce").to_numpy(dtype=np.float64)
        if np.isfinite(values).all():
            return values
    world = frame["world_size"].to_numpy(dtype=np.float64)
    gpus = _column(frame, "gpus_per_node", 1.0)
    return np.ceil(world / np.where(np.isfinite(gpus) & (gpus >= 1), gpus, 1.0))


def _column(frame: pd.DataFrame, name: str, fill: float) -> npt.NDArray[np.float64]:
    if name not in frame.columns:
        return np.full(len(frame), fill, dtype=np.float64)
    values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64)
    return np.where(np.isfinite(values), values, fill)


def busbw_cap_bytes_per_s(frame: pd.DataFrame) -> npt.NDArray[np.float64]:
    """The highest bus bandwidth (bytes/s) each row's links allow; ``inf`` where it is not known.

    With one GPU per node every rank's ring traffic crosses its VM's network link, so ``busbw`` is at
    most the rated link. With ``g > 1`` GPUs per node, traffic between GPUs of one VM uses its
    intra-node link (NVLink or PCIe), which the network rating does not describe:

    * a single node (``world_size ≤ g``) has no network cap here (``inf``);
    * across ``N ≥ 2`` nodes a hierarchical allreduce moves only ``2·(N−1)/N`` bytes per byte over each
      node's link, against the ``2·(n−1)/n`` that ``busbw`` is normalised by, so the cap is the rated
      link times ``((n−1)/n) / ((N−1)/N)`` (exactly the rated link when ``g = 1``).

    Rows without ``rated_network_gbps`` (missing or NaN) are not capped.
    """
    if "rated_network_gbps" not in frame.columns:
        return np.full(len(frame), np.inf)
    rated = pd.to_numeric(frame["rated_network_gbps"], errors="coerce").to_numpy(dtype=np.float64)
    n = frame["world_size"].to_numpy(dtype=np.float64)
    nodes = n_nodes_of(frame)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(nodes >= 2, ((n - 1.0) / n) / ((nodes - 1.0) / nodes), np.inf)
        cap = gbps_to_bytes_per_s(1.0) * rated * factor
    return np.where(np.isfinite(rated) & (rated > 0), cap, np.inf)


@dataclass(frozen=True)
class FeatureEncoder:
    """How a frame becomes the float32 matrix an XGBoost booster reads.

    Attributes:
        numeric: numeric feature names, in matrix order.
        categorical: categorical feature names, after the numeric ones.
        categories: for each categorical feature, the values seen at fit time (its codes are indices).
        fill: for each numeric feature, the value used where a prediction frame lacks it.
    """

    numeric: tuple[str, ...]
    categorical: tuple[str, ...] = ()
    categories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fill: Mapping[str, float] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        """All feature names in matrix order."""
        return [*self.numeric, *self.categorical]

    @property
    def types(self) -> list[str]:
        """XGBoost feature types (``q`` numeric, ``c`` categorical) in matrix order."""
        return ["q"] * len(self.numeric) + ["c"] * len(self.categorical)

    def monotone_constraints(self) -> str:
        """The XGBoost ``monotone_constraints`` string for these features."""
        return "(" + ",".join(str(MONOTONE_SIGNS.get(n, 0)) for n in self.names) + ")"

    def matrix(self, frame: pd.DataFrame) -> npt.NDArray[np.float32]:
        """The ``(rows, features)`` float32 matrix of ``frame``; missing columns take their fill value."""
        out = np.empty((len(frame), len(self.names)), dtype=np.float32)
        for j, name in enumerate(self.numeric):
            if name == "n_nodes":
                out[:, j] = n_nodes_of(frame)
            else:
                out[:, j] = _column(frame, name, self.fill.get(name, np.nan))
        for k, name in enumerate(self.categorical):
            j = len(self.numeric) + k
            if name not in frame.columns:
                out[:, j] = np.nan
                continue
            codes = pd.Categorical(frame[name].astype("string"), categories=self.categories[name]).codes
            out[:, j] = np.where(codes >= 0, codes, np.nan)
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record of this encoder."""
        return {
            "numeric": list(self.numeric),
            "categorical": list(self.categorical),
            "categories": {k: list(v) for k, v in self.categories.items()},
            "fill": dict(self.fill),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> FeatureEncoder:
        """The encoder recorded by :meth:`to_json`."""
        return cls(
            numeric=tuple(doc["numeric"]),
            categorical=tuple(doc["categorical"]),
            categories={k: tuple(v) for k, v in doc["categories"].items()},
            fill={k: float(v) for k, v in doc["fill"].items()},
        )


def build_encoder(
    frame: pd.DataFrame, numeric: Sequence[str], categorical: Sequence[str]
) -> tuple[FeatureEncoder, list[str]]:
    """The encoder for a training frame, and the features dropped because they carry no information.

    A feature is dropped when its column is absent or holds a single value over the whole training set
    (except ``size_bytes`` and ``world_size``, which are always kept). Fill values are the median of
    each numeric column, except the natural defaults in :data:`NATURAL_FILL`.
    """
    kept_numeric, kept_categorical, dropped = [], [], []
    fill: dict[str, float] = {}
    categories: dict[str, tuple[str, ...]] = {}
    for name in numeric:
        always = name in ("size_bytes", "world_size")
        if name == "n_nodes" and "world_size" in frame.columns:
            values = n_nodes_of(frame)
        elif name in frame.columns:
            values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64)
        else:
            dropped.append(name)
            continue
        finite = values[np.isfinite(values)]
        if not always and (finite.size == 0 or np.unique(finite).size < 2):
            dropped.append(name)
            continue
        kept_numeric.append(name)
        fill[name] = NATURAL_FILL.get(name, float(np.median(finite)) if finite.size else float("nan"))
    for name in categorical:
        if name not in frame.columns:
            dropped.append(name)
            continue
        distinct = tuple(sorted(set(frame[name].dropna().astype("string"))))
        if len(distinct) < 2:
            dropped.append(name)
            continue
        kept_categorical.append(name)
        categories[name] = distinct
    encoder = FeatureEncoder(tuple(kept_numeric), tuple(kept_categorical), categories, fill)
    return encoder, dropped
