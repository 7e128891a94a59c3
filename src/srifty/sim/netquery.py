"""Ask a bus-bandwidth model about a configuration's links: per-transfer ``b_bus`` and the cap ``b_cap``.

The paper measures bandwidth per instance type only, because in synchronous training the slowest VM's
bandwidth sets everyone's: for a heterogeneous configuration each transfer's ``b_bus`` is the minimum over
its instance types, and ``b_cap`` is the saturated bus bandwidth of the slowest type (the largest value
its model predicts over message sizes up to 512 MiB). A configuration of a single multi-GPU VM never
touches the network: a model that learned such configurations from NVLink/PCIe measurements (its
``predicts_intra_node`` is true, as for srifty's embedded default) answers for them itself; for any other
model the level comes from the GPU datasheet's intra-node link (see :func:`_intra_node`).

A model that also knows how wrong it tends to be (``residual_quantiles``, as
:class:`~srifty.network.BandwidthModel`) is asked for that too (:func:`spread_many`): the simulator draws
each iteration's communication time from it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.catalog import InstanceType
from srifty.errors import SriftyError

# Message sizes over which the saturated bus bandwidth (b_cap) is looked for: 1 KiB .. 512 MiB.
CAP_GRID_BYTES = np.array([2.0**k for k in range(10, 30)])

# Inside one multi-GPU VM, allreduce runs over NVLink/PCIe, not the network. nccl-tests reach 0.78-0.90 of
# the per-direction link: 135.5 GB/s busbw on 8x V100-SXM2 (NVLink 2, 150 GB/s per direction; OCI
# BM.GPU3.8, oracle-japan/ocitutorials) and 235 GB/s on 8x A100 (NVLink 3, 300 GB/s per direction;
# stas00/ml-engineering network/README.md), both in shared/data/reference/nccl/all_reduce.csv.
INTRA_NODE_EFFICIENCY = 0.85


#: Quantile levels of the spread the simulator samples communication time from.
SPREAD_LEVELS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975, 0.99)


class BusBandwidthModel(Protocol):
    """Anything that predicts allreduce bus bandwidth (bytes/s) for rows of features."""

    def predict_busbw_bytes_per_s(self, frame: Any) -> NDArray[np.float64]:
        """One prediction per row; rows carry ``size_bytes``, ``world_size`` and optional features. The simulator
        passes a :class:`~srifty.vocab.Table` (``frame["size_bytes"]`` is a numpy array, ``len(frame)`` the
        rows; ``srifty.vocab.as_table`` reads a DataFrame or a mapping the same way)."""
        ...


def _predicts_intra_node(model: BusBandwidthModel) -> bool:
    return bool(getattr(model, "predicts_intra_node", False))


def config_busbw_bytes_per_s(
    model: BusBandwidthModel,
    sizes_bytes: ArrayLike,
    world_size: int,
    n_nodes: int,
    instances: Sequence[InstanceType],
) -> NDArray[np.float64]:
    """Per-size bus bandwidth of a (possibly mixed) configuration: the minimum over its instance types.

    Raises:
        SriftyError: the model returns the wrong number of values or non-positive bandwidth.
    """
    return config_busbw_many(
        model, [NetRequest(np.asarray(sizes_bytes, dtype=float), world_size, n_nodes, tuple(instances))]
    )[0]


#: (sizes in bytes, world size, VMs, instance type, collective, concurrent transfers)
Block = tuple[NDArray[np.float64], int, int, InstanceType, str, int]


@dataclass(frozen=True)
class NetRequest:
    """One :func:`config_busbw_bytes_per_s` question: ``collective`` transfers of these sizes (bytes) among
    ``n_nodes`` VMs of ``instances``, ``n_concurrent`` of them sharing each VM's link at once."""

    sizes_bytes: NDArray[np.float64]
    world_size: int
    n_nodes: int
    instances: tuple[InstanceType, ...]
    collective: str = "allreduce"
    n_concurrent: int = 1


def config_busbw_many(model: BusBandwidthModel, requests: Sequence[NetRequest]) -> list[NDArray[np.float64]]:
    """:func:`config_busbw_bytes_per_s` for many configurations with one model call (a planner asks hundreds).

    Raises:
        SriftyError: as :func:`config_busbw_bytes_per_s`.
    """
    # Every (request, instance) pair is one block of rows; single multi-GPU VMs add a block on the cap grid.
    # Requests of a search repeat blocks (same sizes, world, VMs and type): each distinct one is asked once.
    blocks: list[Block] = []
    index: dict[tuple[object, ...], int] = {}
    order: list[int] = []

    def add(block: Block) -> None:
        key = (block[0].tobytes(), block[1], block[2], id(block[3]), block[4], block[5])
        if key not in index:
            index[key] = len(blocks)
            blocks.append(block)
        order.append(index[key])

    datasheet = not _predicts_intra_node(model)
    for r in requests:
        if not r.instances:
            raise SriftyError("no instance types to query the bandwidth model for")
        for inst in r.instances:
            add((np.asarray(r.sizes_bytes, dtype=float), r.world_size, r.n_nodes, inst, r.collective, r.n_concurrent))
            if datasheet and _is_intra_node(r.n_nodes, inst):
                add((CAP_GRID_BYTES, r.world_size, 1, inst, r.collective, r.n_concurrent))
    unique = list(_predict_blocks(model, blocks))
    predictions = iter([unique[i] for i in order])
    out: list[NDArray[np.float64]] = []
    for r in requests:
        best: NDArray[np.float64] | None = None
        for inst in r.instances:
            pred = next(predictions)
            if datasheet and _is_intra_node(r.n_nodes, inst):
                pred = _intra_node(pred, next(predictions), inst)
            best = pred if best is None else np.minimum(best, pred)
        assert best is not None
        if np.any(~np.isfinite(best)) or np.any(best <= 0):
            raise SriftyError(f"bandwidth model predicted non-positive bus bandwidth for {r.instances[0].name}")
        out.append(best)
    return out


def spread_many(model: BusBandwidthModel, requests: Sequence[NetRequest]) -> list[NDArray[np.float64] | None]:
    """For each request, quantiles at :data:`SPREAD_LEVELS` of ``log(true / predicted)`` bus bandwidth of
    its transfers (weighted by bytes), from a model that knows them (``residual_quantiles``); ``None``
    for every request otherwise. A mixed configuration takes its least-known instance type (widest
    80 % range): its slowest link sets everyone's pace, and it is the one the model is least sure of."""
    ask = getattr(model, "residual_quantiles", None)
    if ask is None or not requests:
        return [None] * len(requests)
    blocks = [
        (r.sizes_bytes, r.world_size, r.n_nodes, inst, r.collective, r.n_concurrent)
        for r in requests
        for inst in r.instances
    ]
    quantiles = np.asarray(ask(feature_frame(blocks), SPREAD_LEVELS), dtype=float)
    lo, hi = SPREAD_LEVELS.index(0.1), SPREAD_LEVELS.index(0.9)
    out: list[NDArray[np.float64] | None] = []
    start = 0
    for r in requests:
        weights = np.asarray(r.sizes_bytes, dtype=float)
        widest: NDArray[np.float64] | None = None
        for _ in r.instances:
            rows = quantiles[start : start + len(weights)]
            start += len(weights)
            mixed = weights @ rows / weights.sum() if weights.sum() > 0 else rows.mean(axis=0)
            if widest is None or mixed[hi] - mixed[lo] > widest[hi] - widest[lo]:
                widest = mixed
        out.append(widest)
    return out


def feature_frame(blocks: Sequence[Block]) -> Any:
    """One table of transfers (:data:`~srifty.vocab.probes.TRANSFER_COLUMNS`) for every block's collectives, in
    block order, built from numpy columns at once (no DataFrame: see :mod:`srifty.vocab.table`)."""
    from srifty.vocab import transfer_frame

    counts = [len(b[0]) for b in blocks]

    def column(values: list[Any]) -> NDArray[Any]:
        return np.repeat(np.asarray(values, dtype=object if isinstance(values[0], str) else None), counts)

    insts = [b[3] for b in blocks]
    return transfer_frame(
        {
            "size_bytes": np.concatenate([np.asarray(b[0], dtype=float) for b in blocks]),
            "world_size": column([b[1] for b in blocks]),
            "n_nodes": column([b[2] for b in blocks]),
            "gpus_per_node": column([i.gpus_per_vm for i in insts]),
            "n_concurrent": column([b[5] for b in blocks]).astype(np.int64),
            "rated_network_gbps": column(
                [np.nan if i.rated_network_gbps is None else float(i.rated_network_gbps) for i in insts]
            ),
            "instance_type": column([i.name for i in insts]),
            "gpu": column([i.gpu_name for i in insts]),
            "cloud": column([i.cloud for i in insts]),
            "region": column([i.region for i in insts]),
            "collective": column([b[4] for b in blocks]),
        }
    )


def _predict_blocks(model: BusBandwidthModel, blocks: Sequence[Block]) -> Iterator[NDArray[np.float64]]:
    """One model call over every block's rows; yields each block's predictions in order."""
    if not blocks:
        return iter(())
    frame = feature_frame(blocks)
    pred = np.asarray(model.predict_busbw_bytes_per_s(frame), float)
    if pred.shape != (len(frame),):
        raise SriftyError(f"bandwidth model returned {pred.shape} values for {len(frame)} sizes")
    bounds = np.cumsum([0] + [len(b[0]) for b in blocks])
    return (pred[bounds[i] : bounds[i + 1]] for i in range(len(blocks)))


def _is_intra_node(n_nodes: int, instance: InstanceType) -> bool:
    return n_nodes == 1 and instance.gpus_per_vm > 1 and instance.gpu is not None


def _intra_node(pred: NDArray[np.float64], grid: NDArray[np.float64], instance: InstanceType) -> NDArray[np.float64]:
    """All ranks in one VM: the level is the datasheet's intra-node link (per direction) times
    :data:`INTRA_NODE_EFFICIENCY`; the shape over message sizes (latency-bound small messages) is the
    bandwidth model's own (``grid``: its predictions on the cap grid), normalised to its saturated value."""
    assert instance.gpu is not None
    saturated = float(np.max(grid)) if len(grid) else 0.0
    if saturated <= 0:
        return pred
    level = 0.5 * instance.gpu.link_bytes_per_s_per_gpu * INTRA_NODE_EFFICIENCY
    return np.minimum(pred / saturated, 1.0) * level


def bus_cap_bytes_per_s(
    model: BusBandwidthModel, world_size: int, n_nodes: int, instances: Sequence[InstanceType]
) -> float:
    """``b_cap``: the saturated bus bandwidth of the configuration's slowest type."""
    return float(np.max(config_busbw_bytes_per_s(model, CAP_GRID_BYTES, world_size, n_nodes, instances)))
