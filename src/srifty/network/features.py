"""Feature matrices for the bandwidth model, the links a transfer crosses, and the cap on bus bandwidth.

Numeric features are read as float; a column missing from a prediction frame, or a missing value in
it, is filled with the value recorded at fit time (one transfer and one GPU per node where those are
missing, else the training set's median), so a caller that knows less than the training set still gets
an answer. Categorical features (backend and location, by default) are coded against the categories seen
at fit time; a missing value takes the category the row's instance type was probed with (the planner does
not say "nccl" or "gloo": it asks about the instance type as it was measured), else the training set's
most common one; values never seen become missing, which XGBoost routes down each split's default branch.

Two columns are derived rather than read (see :func:`link_gbps`): ``n_nodes`` (from the world size where
absent) and ``link_gbps``, the rating of the link that bounds a transfer: the provider's network rating
between VMs, or, for ranks that all sit in one multi-GPU VM, the GPUs' intra-node link per direction
(NVLink or PCIe, from the catalog's GPU datasheets by the row's ``gpu`` name, or the row's own
``intra_node_link_gbps``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from srifty.units import gbps_to_bytes_per_s
from srifty.vocab import Table, as_table

if TYPE_CHECKING:
    import pandas as pd

#: What the feature functions read: a pandas DataFrame, a :class:`~srifty.network.table.Table`, or a mapping of
#: column names to arrays.
Frame = Any

#: Numeric features that carry physics: message size, ranks, nodes, GPUs per node, concurrent transfers
#: and the rating of the link the transfer crosses (derived, see :func:`link_gbps`).
DEFAULT_NUMERIC_FEATURES = (
    "size_bytes",
    "world_size",
    "n_nodes",
    "gpus_per_node",
    "n_concurrent",
    "link_gbps",
)
#: The collective's backend (nccl, gloo), the paper's location features, and which collective it is
#: (allreduce, all-gather, reduce-scatter); each is dropped at fit time where the training set has a single
#: value, so a model fitted on allreduces alone is the paper's.
DEFAULT_CATEGORICAL_FEATURES = ("backend", "cloud", "region", "zone", "collective")
#: Columns computed from others rather than read (``n_nodes`` is read where present).
DERIVED_FEATURES = ("n_nodes", "link_gbps")

#: Fill values with a physical meaning for a prediction frame that lacks the column: one transfer at a
#: time, one GPU per node. Other numeric features fall back to the training set's median.
NATURAL_FILL: Mapping[str, float] = {"n_concurrent": 1.0, "gpus_per_node": 1.0}

#: XGBoost monotone constraints: more ranks, more nodes or more concurrent transfers never raise the
#: bandwidth one transfer gets. This also makes extrapolation past the largest measured world size
#: flat, never rising.
MONOTONE_SIGNS: Mapping[str, int] = {"world_size": -1, "n_nodes": -1, "n_concurrent": -1}

FloatArray = npt.NDArray[np.float64]


def n_nodes_of(frame: Frame) -> FloatArray:
    """``n_nodes`` from the frame, or ``ceil(world_size / gpus_per_node)`` (1 GPU per node if unknown)."""
    table = as_table(frame)
    if "n_nodes" in table:
        values = table.numeric("n_nodes")
        if np.isfinite(values).all():
            return values
    world = table.numeric("world_size")
    gpus = _column(table, "gpus_per_node", 1.0)
    return np.ceil(world / np.where(np.isfinite(gpus) & (gpus >= 1), gpus, 1.0))


def _column(table: Table, name: str, fill: float) -> FloatArray:
    if name not in table:
        return np.full(len(table), fill, dtype=np.float64)
    values = table.numeric(name)
    return np.where(np.isfinite(values), values, fill)


@cache
def _datasheet_links_gbps() -> dict[str, float]:
    """Intra-node link per GPU and direction (Gbps) of every catalog GPU, by upper-case name. The
    datasheets give NVLink as the total of both directions per GPU, PCIe per direction."""
    from srifty.catalog import load_gpu_specs
    from srifty.units import bytes_per_s_to_gbps

    links = {}
    for name, spec in load_gpu_specs().items():
        per_direction = spec.link_bytes_per_s_per_gpu / (2.0 if spec.intra_node_link.startswith("nvlink") else 1.0)
        links[name.upper()] = bytes_per_s_to_gbps(per_direction)
    return links


_VENDOR = re.compile(r"^(NVIDIA|TESLA|GEFORCE|QUADRO)\s+", re.IGNORECASE)


def intra_node_link_gbps_of_gpu(gpu: str) -> float:
    """The intra-node link (Gbps, per GPU and direction) of a GPU named as the catalog names it
    (``"A100"``) or as torch reports it (``"NVIDIA A100-SXM4-40GB"``); NaN when unknown."""
    links = _datasheet_links_gbps()
    name = gpu.strip().upper()
    while (stripped := _VENDOR.sub("", name)) != name:
        name = stripped
    if name in links:
        return links[name]
    base = re.split(r"[\s-]", name, maxsplit=1)[0]
    return links.get(base, float("nan"))


def intra_node_link_gbps(frame: Frame) -> FloatArray:
    """Per row: ``intra_node_link_gbps`` where the frame has it, else the datasheet link of its ``gpu``."""
    table = as_table(frame)
    given = _column(table, "intra_node_link_gbps", np.nan)
    if "gpu" not in table or np.isfinite(given).all():
        return given
    names = [name or "" for name in table.text("gpu")]
    by_name = {name: intra_node_link_gbps_of_gpu(name) for name in set(names)}
    looked_up = np.array([by_name[name] for name in names], dtype=np.float64)
    return np.where(np.isfinite(given), given, looked_up)


def is_intra_node(frame: Frame) -> npt.NDArray[np.bool_]:
    """Rows whose ranks all sit in one VM with several GPUs: their traffic never touches the network."""
    table = as_table(frame)
    gpus = _column(table, "gpus_per_node", 1.0)
    return (n_nodes_of(table) <= 1) & (gpus > 1)


def link_gbps(frame: Frame) -> FloatArray:
    """The rating (Gbps) of the link that bounds each row's transfer: the intra-node link for one
    multi-GPU VM, the provider's network rating otherwise; NaN where not known."""
    table = as_table(frame)
    rated = _column(table, "rated_network_gbps", np.nan)
    rated = np.where(rated > 0, rated, np.nan)
    intra = is_intra_node(table)
    if not intra.any():
        return rated
    return np.where(intra, intra_node_link_gbps(table), rated)


def hierarchy_factor(frame: Frame) -> FloatArray:
    """How far ``busbw`` may exceed each VM's network link: ``((n−1)/n) / ((N−1)/N)`` over ``N ≥ 2`` VMs
    of several GPUs each (1 with one GPU per VM), since a hierarchical allreduce moves only
    ``2·(N−1)/N`` bytes per byte over each VM's link against the ``2·(n−1)/n`` busbw is normalised by.
    ``inf`` for one VM."""
    table = as_table(frame)
    n = table.numeric("world_size")
    nodes = n_nodes_of(table)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nodes >= 2, ((n - 1.0) / n) / ((nodes - 1.0) / nodes), np.inf)


def busbw_cap_bytes_per_s(frame: Frame) -> FloatArray:
    """The highest bus bandwidth (bytes/s) each row's *network* allows; ``inf`` where it is not known.

    With one GPU per node every rank's ring traffic crosses its VM's network link, so ``busbw`` is at
    most the rated link. With ``g > 1`` GPUs per node, traffic between GPUs of one VM uses its
    intra-node link (NVLink or PCIe), which the network rating does not describe:

    * a single node (``world_size ≤ g``) has no network cap here (``inf``);
    * across ``N ≥ 2`` nodes the cap is the rated link times :func:`hierarchy_factor` (exactly the rated
      link when ``g = 1``).

    Rows without ``rated_network_gbps`` (missing or NaN) are not capped.
    """
    table = as_table(frame)
    rated = _column(table, "rated_network_gbps", np.nan)
    cap = gbps_to_bytes_per_s(1.0) * rated * hierarchy_factor(table)
    return np.where(np.isfinite(rated) & (rated > 0), cap, np.inf)


def link_scale_bytes_per_s(frame: Frame) -> FloatArray:
    """What the model's label is a fraction of: the network cap (:func:`busbw_cap_bytes_per_s`) between
    VMs, the intra-node link (per direction) within one multi-GPU VM; NaN where not known."""
    table = as_table(frame)
    cap = busbw_cap_bytes_per_s(table)
    inside = is_intra_node(table)
    intra = gbps_to_bytes_per_s(1.0) * intra_node_link_gbps(table) if inside.any() else cap
    scale = np.where(inside, intra, cap)
    return np.where(np.isfinite(scale) & (scale > 0), scale, np.nan)


def derived_column(frame: Frame, name: str) -> FloatArray | None:
    """The values of a derived feature (:data:`DERIVED_FEATURES`), or ``None`` for a plain column."""
    if name == "n_nodes":
        return n_nodes_of(frame)
    if name == "link_gbps":
        return link_gbps(frame)
    return None


@dataclass(frozen=True)
class FeatureEncoder:
    """How a frame becomes the float32 matrix an XGBoost booster reads.

    Attributes:
        numeric: numeric feature names, in matrix order.
        categorical: categorical feature names, after the numeric ones.
        categories: for each categorical feature, the values seen at fit time (its codes are indices).
        fill: for each numeric feature, the value used where a prediction frame lacks it.
        category_fill: for each categorical feature, the value used where a prediction frame lacks it:
            ``{"*": most common value, instance type: the value that type was probed with}``.
    """

    numeric: tuple[str, ...]
    categorical: tuple[str, ...] = ()
    categories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fill: Mapping[str, float] = field(default_factory=dict)
    category_fill: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

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

    def categorical_values(self, frame: Frame, name: str) -> npt.NDArray[np.object_]:
        """The values of categorical feature ``name`` as strings, missing ones filled (see
        :attr:`category_fill`); ``None`` where no fill applies."""
        table = as_table(frame)
        fills = self.category_fill.get(name, {})
        values = table.text(name) if name in table else np.full(len(table), None, dtype=object)
        missing = np.array([value is None for value in values], dtype=bool)
        if missing.any() and fills:
            by_type = fills.get("*")
            types = table.text("instance_type") if "instance_type" in table else np.full(len(table), None)
            for row in np.flatnonzero(missing):
                values[row] = fills.get(types[row], by_type) if types[row] is not None else by_type
        return values

    def matrix(self, frame: Frame) -> npt.NDArray[np.float32]:
        """The ``(rows, features)`` float32 matrix of ``frame``; missing values take their fill value."""
        table = as_table(frame)
        out = np.empty((len(table), len(self.names)), dtype=np.float32)
        for j, name in enumerate(self.numeric):
            derived = derived_column(table, name)
            fill = self.fill.get(name, np.nan)
            out[:, j] = _column(table, name, fill) if derived is None else np.where(np.isfinite(derived), derived, fill)
        for k, name in enumerate(self.categorical):
            j = len(self.numeric) + k
            code_of = {value: code for code, value in enumerate(self.categories[name])}
            values = self.categorical_values(table, name)
            out[:, j] = [code_of.get(value, np.nan) for value in values]
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record of this encoder."""
        return {
            "numeric": list(self.numeric),
            "categorical": list(self.categorical),
            "categories": {k: list(v) for k, v in self.categories.items()},
            "fill": dict(self.fill),
            "category_fill": {k: dict(v) for k, v in self.category_fill.items()},
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> FeatureEncoder:
        """The encoder recorded by :meth:`to_json`."""
        return cls(
            numeric=tuple(doc["numeric"]),
            categorical=tuple(doc["categorical"]),
            categories={k: tuple(v) for k, v in doc["categories"].items()},
            fill={k: float(v) for k, v in doc["fill"].items()},
            category_fill={k: dict(v) for k, v in doc.get("category_fill", {}).items()},
        )


def _category_fill(frame: pd.DataFrame, name: str) -> dict[str, str]:
    """``{"*": most common value}`` plus, per instance type, the most common value among its rows."""
    values = frame[name].astype("string")
    fills = {"*": str(values.mode(dropna=True).iloc[0])}
    if "instance_type" in frame.columns:
        types = frame["instance_type"].astype("string")
        for instance, group in values.groupby(types, dropna=True):
            if group.notna().any():
                fills[str(instance)] = str(group.mode(dropna=True).iloc[0])
    return fills


def build_encoder(
    frame: pd.DataFrame, numeric: Sequence[str], categorical: Sequence[str]
) -> tuple[FeatureEncoder, list[str]]:
    """The encoder for a training frame, and the features dropped because they carry no information.

    A feature is dropped when its column is absent (and cannot be derived) or holds a single value over
    the whole training set (except ``size_bytes`` and ``world_size``, which are always kept). Fill
    values are the median of each numeric column, except the natural defaults in :data:`NATURAL_FILL`.
    """
    kept_numeric, kept_categorical, dropped = [], [], []
    fill: dict[str, float] = {}
    categories: dict[str, tuple[str, ...]] = {}
    category_fill: dict[str, dict[str, str]] = {}
    for name in numeric:
        always = name in ("size_bytes", "world_size")
        derived = derived_column(frame, name) if "world_size" in frame.columns else None
        if derived is not None:
            values = derived
        elif name in frame.columns:
            values = as_table(frame).numeric(name)
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
        category_fill[name] = _category_fill(frame, name)
    encoder = FeatureEncoder(tuple(kept_numeric), tuple(kept_categorical), categories, fill, category_fill)
    return encoder, dropped
