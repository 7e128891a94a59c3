"""Ask a bus-bandwidth model about a configuration's links: per-transfer ``b_bus`` and the cap ``b_cap``.

The paper measures bandwidth per instance type only, because in synchronous training the slowest VM's
bandwidth sets everyone's: for a heterogeneous configuration each transfer's ``b_bus`` is the minimum over
its instance types, and ``b_cap`` is the saturated bus bandwidth of the slowest type (the largest value
its model predicts over message sizes up to 512 MiB).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.catalog import InstanceType
from srifty.errors import SriftyError

# Message sizes over which the saturated bus bandwidth (b_cap) is looked for: 1 KiB .. 512 MiB.
CAP_GRID_BYTES = np.array([2.0**k for k in range(10, 30)])


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
        best = pred if best is None else np.minimum(best, pred)
    if best is None:
        raise SriftyError("no instance types to query the bandwidth model for")
    if np.any(~np.isfinite(best)) or np.any(best <= 0):
        raise SriftyError(f"bandwidth model predicted non-positive bus bandwidth for {instances[0].name}")
    return best


def bus_cap_bytes_per_s(
    model: BusBandwidthModel, world_size: int, n_nodes: int, instances: Sequence[InstanceType]
) -> float:
    """``b_cap``: the saturated bus bandwidth of the configuration's slowest type."""
    return float(np.max(busbw_bytes_per_s(model, CAP_GRID_BYTES, world_size, n_nodes, instances)))
