"""Fitting the network truth to real allreduce tables, and its held-out error (EMULATED cloud).

The tables (``data/allreduce_public.csv``: nccl-tests and torch.distributed on EFA, InfiniBand, RoCE and 8-GPU
NVLink nodes; ``data/allreduce_testbed.csv``: the testbed's gloo probes, TCP) are fitted with the functional
form of :mod:`srifty.cloud.network`: per fabric its eight constants (:class:`~srifty.cloud.network.FabricFit`),
per family group with tables of its own three factors ``(δ_η, δ_a, δ_S)`` on its efficiency, base latency
and Simple's extra latency, shrunk towards 1 (a log-normal prior of σ = :data:`GROUP_SIGMA`). Least squares
on the log of the time, each table weighing the same (``scipy.optimize.least_squares``, restarted from its
answer until a restart no longer lowers the cost).

The testbed's small messages are this machine's process latency divided by 50, not a cloud's; so only its
messages of at least :data:`TESTBED_MIN_BYTES` are fitted, and TCP takes its latency and protocol constants
from ``efa-host`` (EFA through host memory, T07: the closest measured path without GPUDirect RDMA), an
extrapolation the data README states.

:func:`leave_one_table_out` refits without each table in turn and predicts it: the held-out error per table
and per fabric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import least_squares

from srifty.cloud.network import FabricFit, predict_time_s

FloatArray = NDArray[np.float64]
#: Fabrics the tables measure; ``nvlink`` is the link inside one VM.
FABRICS = ("efa-rdma", "efa-host", "ib", "roce", "tcp", "nvlink")
#: The fabric whose latency and protocols TCP borrows (see the module docstring).
TCP_LATENCY_FROM = "efa-host"
#: Prior spread (log) of a family group's factors around its fabric.
GROUP_SIGMA = 2.0
#: Smallest testbed message fitted.
TESTBED_MIN_BYTES = 4 << 20
#: Starting point of every fabric (s, s, -, -, -, -, -, bytes/s).
START = FabricFit(60e-6, 5e-6, 0.7, 1.7, 4.0, 0.01, 0.6, 2e9)
#: Messages from this size on are bandwidth-bound: their held-out error is the spread of a fabric's efficiency.
BANDWIDTH_BYTES = 16 << 20
#: Largest optimiser evaluations per start.
MAX_EVALUATIONS = 400
#: Restarts from the optimiser's answer while one lowers the cost by more than :data:`RESTART_GAIN` (relative).
MAX_RESTARTS = 10
RESTART_GAIN = 1e-4


@dataclass(frozen=True)
class Table:
    """One sweep of a table: its machines and their published times.

    A table of the data files may sweep several node counts (the testbed's: 2, 4, 6 and 8 VMs); each node count
    is a sweep of its own, and the sweeps of a table share its ``table_id``: they weigh as one table in the fit
    and are held out together.

    Attributes:
        table_id: as in the data files.
        fabric: between VMs (``nvlink`` for one VM).
        group: the family group whose factors it shares.
        n_nodes, gpus_per_node: its machines.
        net_bytes_per_s: each VM's rated network (0 on one VM).
        intra_bytes_per_s: each GPU's link to the others, per direction.
        sizes_bytes, times_s: the published points.
        use: ``train`` or ``check`` (partial sweeps, single sizes).
    """

    table_id: str
    fabric: str
    group: str
    n_nodes: int
    gpus_per_node: int
    net_bytes_per_s: float
    intra_bytes_per_s: float
    sizes_bytes: FloatArray
    times_s: FloatArray
    use: str = "train"


def _text(name: str) -> str:
    return resources.files("srifty.cloud").joinpath("data", name).read_text(encoding="utf-8")


@cache
def load_tables() -> tuple[Table, ...]:
    """Every sweep of the two data files' tables (testbed rows from :data:`TESTBED_MIN_BYTES` on)."""
    import io

    public = pd.read_csv(io.StringIO(_text("allreduce_public.csv")))
    testbed = pd.read_csv(io.StringIO(_text("allreduce_testbed.csv")))
    testbed = testbed[testbed["size_bytes"] >= TESTBED_MIN_BYTES]
    out = []
    for frame in (public, testbed):
        for (table_id, _, _), rows in frame.groupby(["table_id", "n_nodes", "gpus_per_node"], sort=True):
            first = rows.iloc[0]
            rated = float(first["rated_network_gbps"]) if pd.notna(first["rated_network_gbps"]) else 0.0
            out.append(
                Table(
                    table_id=str(table_id),
                    fabric=str(first["fabric"]),
                    group=str(first["group"]),
                    n_nodes=int(first["n_nodes"]),
                    gpus_per_node=int(first["gpus_per_node"]),
                    net_bytes_per_s=rated * 1e9 / 8,
                    intra_bytes_per_s=float(first["intra_link_gbps"]) * 1e9 / 8,
                    sizes_bytes=rows["size_bytes"].to_numpy(dtype=float),
                    times_s=rows["time_s"].to_numpy(dtype=float),
                    use=str(first["use"]),
                )
            )
    return tuple(out)


@dataclass(frozen=True)
class NetworkFit:
    """The fitted network truth.

    Attributes:
        fabrics: each fabric's constants.
        groups: each family group's ``(δ_η, δ_a, δ_S)``.
        table_mape: in-sample MAPE of each table's times.
        held_out: per table, its MAPE when predicted by a fit without it (:func:`leave_one_table_out`).
        held_out_rms_log: per fabric, the RMS log error of its held-out predictions of messages of at least
            :data:`BANDWIDTH_BYTES`, where the efficiency sets the time (each seed of the cloud draws its families'
            efficiencies within it).
    """

    fabrics: Mapping[str, FabricFit]
    groups: Mapping[str, tuple[float, float, float]]
    table_mape: Mapping[str, float]
    held_out: Mapping[str, float]
    held_out_rms_log: Mapping[str, float]

    def family(self, fabric: str, group: str | None) -> FabricFit:
        """The constants of a family: its fabric's, with its group's factors where it has tables."""
        base = self.fabrics[fabric]
        d_eta, d_a, d_s = self.groups.get(group or "", (1.0, 1.0, 1.0))
        return FabricFit(
            base.base_latency_s * d_a,
            base.hop_latency_s,
            base.efficiency * d_eta,
            base.ll128_latency,
            1.0 + (base.simple_latency - 1.0) * d_s,
            base.ll_efficiency,
            base.ll128_efficiency,
            base.ll_cap_bytes_per_s,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "fabrics": {k: asdict(v) for k, v in self.fabrics.items()},
            "groups": {k: list(v) for k, v in self.groups.items()},
            "table_mape": dict(self.table_mape),
            "held_out": dict(self.held_out),
            "held_out_rms_log": dict(self.held_out_rms_log),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> NetworkFit:
        """Read :meth:`to_dict`'s form."""
        return cls(
            fabrics={k: FabricFit(**v) for k, v in doc["fabrics"].items()},
            groups={k: (float(v[0]), float(v[1]), float(v[2])) for k, v in doc["groups"].items()},
            table_mape=dict(doc.get("table_mape", {})),
            held_out=dict(doc.get("held_out", {})),
            held_out_rms_log=dict(doc.get("held_out_rms_log", {})),
        )


N_CONSTANTS = len(fields(FabricFit))


def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _constants(raw: FloatArray) -> FabricFit:
    """A fabric's constants from free parameters, so that they keep their meaning whatever the optimiser
    tries: positive latencies and rates, ``1 < λ_LL128 < λ_Simple``, ``0 < ε_LL < ε_LL128 < 1``."""
    r = np.clip(raw, -60.0, 60.0)
    ll128 = 1.0 + math.exp(r[3])
    ll = _sigmoid(r[5])
    return FabricFit(
        base_latency_s=math.exp(r[0]),
        hop_latency_s=math.exp(r[1]),
        efficiency=math.exp(r[2]),
        ll128_latency=ll128,
        simple_latency=ll128 * (1.0 + math.exp(r[4])),
        ll_efficiency=ll,
        ll128_efficiency=ll + (1.0 - ll) * _sigmoid(r[6]),
        ll_cap_bytes_per_s=math.exp(r[7]),
    )


def _raw(f: FabricFit) -> FloatArray:
    """The free parameters of ``f`` (the inverse of :func:`_constants`)."""
    return np.array(
        [
            math.log(f.base_latency_s),
            math.log(f.hop_latency_s),
            math.log(f.efficiency),
            math.log(f.ll128_latency - 1.0),
            math.log(f.simple_latency / f.ll128_latency - 1.0),
            _logit(f.ll_efficiency),
            _logit((f.ll128_efficiency - f.ll_efficiency) / (1.0 - f.ll_efficiency)),
            math.log(f.ll_cap_bytes_per_s),
        ]
    )


class _Layout:
    """Which constants a fit frees (fabrics and groups present in its tables) and where they sit in ``x``."""

    def __init__(self, tables: Sequence[Table]) -> None:
        present = {t.fabric for t in tables} | {"nvlink"}
        self.fabrics = [f for f in FABRICS if f in present and f != "tcp"]
        self.tcp = "tcp" in present
        self.groups = sorted({t.group for t in tables})
        self.size = N_CONSTANTS * len(self.fabrics) + (1 if self.tcp else 0) + 3 * len(self.groups)

    def start(self) -> FloatArray:
        x = np.zeros(self.size)
        for i in range(len(self.fabrics)):
            x[N_CONSTANTS * i : N_CONSTANTS * (i + 1)] = _raw(START)
        if self.tcp:
            x[N_CONSTANTS * len(self.fabrics)] = math.log(START.efficiency)
        return x

    def unpack(self, x: FloatArray) -> tuple[dict[str, FabricFit], dict[str, tuple[float, float, float]]]:
        fabrics = {}
        for i, name in enumerate(self.fabrics):
            fabrics[name] = _constants(x[N_CONSTANTS * i : N_CONSTANTS * (i + 1)])
        if self.tcp:
            borrowed = fabrics.get(TCP_LATENCY_FROM, START)
            eta = float(np.exp(x[N_CONSTANTS * len(self.fabrics)]))
            fabrics["tcp"] = FabricFit(**{**asdict(borrowed), "efficiency": eta})
        offset = self.size - 3 * len(self.groups)
        groups = {
            g: tuple(float(v) for v in np.exp(x[offset + 3 * i : offset + 3 * i + 3]))
            for i, g in enumerate(self.groups)
        }
        return fabrics, groups  # type: ignore[return-value]


def predict_table(fit_fabrics: Mapping[str, FabricFit], groups: Mapping[str, Any], table: Table) -> FloatArray:
    """The fitted times of ``table``'s sizes."""
    view = NetworkFit(fit_fabrics, groups, {}, {}, {})
    node_group = table.group if table.n_nodes == 1 else ""
    node = view.family("nvlink", node_group)
    between = view.family(table.fabric, table.group) if table.n_nodes >= 2 else node
    return predict_time_s(
        table.sizes_bytes,
        table.n_nodes,
        table.gpus_per_node,
        between,
        node,
        table.net_bytes_per_s,
        node.efficiency * table.intra_bytes_per_s if table.gpus_per_node > 1 else math.inf,
    )


def _points(tables: Sequence[Table]) -> dict[str, int]:
    """Published points per table id (over its sweeps)."""
    count: dict[str, int] = {}
    for t in tables:
        count[t.table_id] = count.get(t.table_id, 0) + len(t.times_s)
    return count


def _residuals(x: FloatArray, layout: _Layout, tables: Sequence[Table], points: Mapping[str, int]) -> FloatArray:
    fabrics, groups = layout.unpack(x)
    parts = []
    for t in tables:
        predicted = predict_table(fabrics, groups, t)
        parts.append(np.log(predicted / t.times_s) / math.sqrt(points[t.table_id]))
    offset = layout.size - 3 * len(layout.groups)
    parts.append(x[offset:] / GROUP_SIGMA)
    return np.concatenate(parts)


def fit_tables(tables: Sequence[Table], start: FloatArray | None = None) -> tuple[NetworkFit, FloatArray]:
    """Fit ``tables`` (see the module docstring); returns the fit and its parameter vector."""
    layout = _Layout(tables)
    x0 = layout.start() if start is None or start.size != layout.size else start
    points = _points(tables)

    def solve(start_x: FloatArray) -> Any:
        args = (layout, tables, points)
        return least_squares(_residuals, start_x, args=args, x_scale="jac", max_nfev=MAX_EVALUATIONS)

    result = solve(x0)
    for _ in range(MAX_RESTARTS):
        # least_squares stops on a small relative step of the cost while the scaled problem is still moving;
        # restarting from its answer rescales the Jacobian and goes on until a restart no longer helps.
        again = solve(result.x)
        if again.cost >= result.cost * (1.0 - RESTART_GAIN):
            result = again if again.cost < result.cost else result
            break
        result = again
    fabrics, groups = layout.unpack(result.x)
    mape = {}
    for table_id in points:
        predicted, measured, _ = _predicted(fabrics, groups, tables, table_id)
        mape[table_id] = _mape(predicted, measured)
    return NetworkFit(fabrics, groups, mape, {}, {}), result.x


def _predicted(
    fabrics: Mapping[str, FabricFit], groups: Mapping[str, Any], tables: Sequence[Table], table_id: str
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(predicted_s, measured_s, sizes_bytes)`` over every sweep of ``table_id``."""
    sweeps = [t for t in tables if t.table_id == table_id]
    return (
        np.concatenate([predict_table(fabrics, groups, t) for t in sweeps]),
        np.concatenate([t.times_s for t in sweeps]),
        np.concatenate([t.sizes_bytes for t in sweeps]),
    )


def _mape(predicted: FloatArray, measured: FloatArray) -> float:
    return float(np.mean(np.abs(predicted / measured - 1.0)))


def fabric_of(table: Table) -> str:
    """The fabric a table is judged under (``nvlink`` for one VM)."""
    return "nvlink" if table.n_nodes == 1 else table.fabric


def leave_one_table_out(tables: Sequence[Table]) -> tuple[dict[str, float], dict[str, float]]:
    """Per table of a fabric with at least two tables, its MAPE predicted by a fit without it; per fabric, the
    RMS log error of those predictions."""
    training = [t for t in tables if t.use == "train"]
    _, full = fit_tables(training)
    held: dict[str, float] = {}
    logs: dict[str, list[float]] = {}
    fabric_by_id = {t.table_id: fabric_of(t) for t in tables}
    for table_id, fabric in fabric_by_id.items():
        if sum(1 for f in fabric_by_id.values() if f == fabric) < 2:
            continue
        rest = [t for t in training if t.table_id != table_id]
        layout = _Layout(rest)
        fit, _ = fit_tables(rest, full if layout.size == full.size else None)
        predicted, measured, sizes = _predicted(fit.fabrics, fit.groups, tables, table_id)
        held[table_id] = _mape(predicted, measured)
        large = sizes >= BANDWIDTH_BYTES
        logs.setdefault(fabric, []).extend(np.log(predicted[large] / measured[large]).tolist())
    rms = {f: float(np.sqrt(np.mean(np.square(v)))) for f, v in logs.items() if v}
    return held, rms


def fit_network(with_held_out: bool = True) -> NetworkFit:
    """The network truth fitted on every ``train`` table, with its held-out errors."""
    tables = load_tables()
    fit, _ = fit_tables([t for t in tables if t.use == "train"])
    if not with_held_out:
        return fit
    held, rms = leave_one_table_out(tables)
    return NetworkFit(fit.fabrics, fit.groups, fit.table_mape, held, rms)
