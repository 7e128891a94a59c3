"""Ask a bus-bandwidth model about a configuration's links: per-transfer ``b_bus`` and the cap ``b_cap``.

The paper measures bandwidth per instance type only, because in synchronous training the slowest VM's
bandwidth sets everyone's: for a heterogeneous configuration each transfer's ``b_bus`` is the minimum over
its instance types, and ``b_cap`` is the saturated bus bandwidth of the slowest type (the largest value
its model predicts over message sizes up to 512 MiB). A configuration of a single multi-GPU VM never
touches the network; its level comes from the GPU datasheet's intra-node link instead (see
:func:`_intra_node`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.catalog import GpuSpec, InstanceType
from srifty.errors import SriftyError

# Message sizes over which the saturated bus bandwidth (b_cap) is looked for: 1 KiB .. 512 MiB.
CAP_GRID_BYTES = np.array([2.0**k for k in range(10, 30)])

# Inside one multi-GPU VM, allreduce runs over NVLink/PCIe, not the network. nccl-tests reach 0.78-0.90 of
# the per-direction link: 135.5 GB/s busbw on 8x V100-SXM2 (NVLink 2, 150 GB/s per direction; OCI
# BM.GPU3.8, oracle-japan/ocitutorials) and 235 GB/s on 8x A100 (NVLink 3, 300 GB/s per direction;
# stas00/ml-engineering network/README.md), both in shared/data/reference/nccl/all_reduce.csv.
INTRA_NODE_EFFICIENCY = 0.85


class BusBandwidthModel(Protocol):
    """Anything that predicts allreduce bus bandwidth (bytes/s) for rows of features."""

    def predict_busbw_bytes_per_s(self, frame: Any) -> NDArray[np.float64]:
        """One prediction per row; rows carry ``size_bytes``, ``world_size`` and optional features."""
        ...


def feature_frame(
    sizes_bytes: ArrayLike, world_size: int, n_nodes: int, instance: InstanceType, n_concurrent: int = 1
) -> Any:
    """A pandas frame of model features for allreduces of ``sizes_bytes`` among VMs of ``instance``."""
    import pandas as pd

    sizes = np.asarray(sizes_bytes, dtype=float)
    return pd.DataFrame(
        {
            "size_bytes": sizes,
            "world_size": world_size,
            "n_nodes": n_nodes,
            "gpus_per_node": instance.gpus_per_vm,
            "n_concurrent": n_concurrent,
            "rated_network_gbps": np.nan if instance.rated_network_gbps is None else instance.rated_network_gbps,
            "instance_type": instance.name,
            "gpu": instance.gpu_name,
            "cloud": instance.cloud,
            "region": instance.region,
        }
    )


def busbw_bytes_per_s(
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
    sizes = np.asarray(sizes_bytes, dtype=float)
    best: NDArray[np.float64] | None = None
    for instance in instances:
        pred = np.asarray(model.predict_busbw_bytes_per_s(feature_frame(sizes, world_size, n_nodes, instance)), float)
        if pred.shape != sizes.shape:
            raise SriftyError(f"bandwidth model returned {pred.shape} values for {sizes.shape} sizes")
        if n_nodes == 1 and instance.gpus_per_vm > 1 and instance.gpu is not None:
            pred = _intra_node(model, pred, world_size, instance, instance.gpu)
        best = pred if best is None else np.minimum(best, pred)
    if best is None:
        raise SriftyError("no instance types to query the bandwidth model for")
    if np.any(~np.isfinite(best)) or np.any(best <= 0):
        raise SriftyError(f"bandwidth model predicted non-positive bus bandwidth for {instances[0].name}")
    return best


def _intra_node(
    model: BusBandwidthModel, pred: NDArray[np.float64], world_size: int, instance: InstanceType, gpu: GpuSpec
) -> NDArray[np.float64]:
    """All ranks in one VM: the level is the datasheet's intra-node link (per direction) times
    :data:`INTRA_NODE_EFFICIENCY`; the shape over message sizes (latency-bound small messages) is the
    bandwidth model's own, normalised to its saturated value."""
    grid = np.asarray(model.predict_busbw_bytes_per_s(feature_frame(CAP_GRID_BYTES, world_size, 1, instance)), float)
    saturated = float(np.max(grid)) if len(grid) else 0.0
    if saturated <= 0:
        return pred
    level = 0.5 * gpu.link_bytes_per_s_per_gpu * INTRA_NODE_EFFICIENCY
    return np.minimum(pred / saturated, 1.0) * level


def bus_cap_bytes_per_s(
    model: BusBandwidthModel, world_size: int, n_nodes: int, instances: Sequence[InstanceType]
) -> float:
    """``b_cap``: the saturated bus bandwidth of the configuration's slowest type."""
    return float(np.max(busbw_bytes_per_s(model, CAP_GRID_BYTES, world_size, n_nodes, instances)))
