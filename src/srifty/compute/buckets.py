"""DDP gradient buckets, formed as ``torch.nn.parallel.DistributedDataParallel`` forms them.

DDP (torch 2.x, default settings) puts every parameter in one bucket for the first iteration, then
*rebuilds* its buckets from the order in which gradients became ready: walking parameters in ready
order, a bucket closes once its size reaches the limit; the first bucket's limit is 1 MiB (DDP's
``_DEFAULT_FIRST_BUCKET_BYTES``) when ``bucket_cap_mb`` is left at its default, else ``bucket_cap_mb``;
every later bucket's limit is ``bucket_cap_mb`` (default 25 MiB). This mirrors
``Reducer::rebuild_buckets`` and ``compute_bucket_assignment_by_size`` in PyTorch's C++ reducer; an
integration test checks it against real DDP.

Bucket *k* starts its allreduce when all its gradients are ready and bucket *k−1* has started (the
reducer launches buckets in order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from srifty.units import BYTES_PER_MIB

DDP_DEFAULT_BUCKET_CAP_MB = 25.0
DDP_FIRST_BUCKET_BYTES = 1 * BYTES_PER_MIB


@dataclass(frozen=True)
class Bucket:
    """One DDP bucket.

    Attributes:
        index: launch order (0 first).
        param_indices: indices into the profile's parameter list, in ready order.
        size_bytes: gradient bytes allreduced.
        ready_frac: when its last gradient is ready, as a fraction of the backward pass.
        start_frac: when DDP launches it: ``max(ready_frac, previous start_frac)``.
    """

    index: int
    param_indices: tuple[int, ...]
    size_bytes: int
    ready_frac: float
    start_frac: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "index": self.index,
            "param_indices": list(self.param_indices),
            "size_bytes": self.size_bytes,
            "ready_frac": self.ready_frac,
            "start_frac": self.start_frac,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Bucket:
        """Inverse of :meth:`to_dict`."""
        return cls(
            index=int(data["index"]),
            param_indices=tuple(int(i) for i in data["param_indices"]),
            size_bytes=int(data["size_bytes"]),
            ready_frac=float(data["ready_frac"]),
            start_frac=float(data["start_frac"]),
        )


def bucket_limits_bytes(bucket_cap_mb: float | None) -> tuple[int, int]:
    """``(first_bucket_limit, later_bucket_limit)`` in bytes, as DDP sets them for ``bucket_cap_mb``."""
    if bucket_cap_mb is None:
        return DDP_FIRST_BUCKET_BYTES, int(DDP_DEFAULT_BUCKET_CAP_MB * BYTES_PER_MIB)
    cap = int(bucket_cap_mb * BYTES_PER_MIB)
    return cap, cap


def assign_buckets(
    ready_order: Sequence[int],
    sizes_bytes: Sequence[int],
    ready_fracs: Sequence[float],
    bucket_cap_mb: float | None = None,
    dtypes: Sequence[str] | None = None,
) -> list[Bucket]:
    """Group parameters into DDP buckets.

    Args:
        ready_order: parameter indices in the order their gradients became ready.
        sizes_bytes: gradient bytes of each parameter (indexed by parameter index).
        ready_fracs: when each parameter's gradient is ready, as a fraction of backward.
        bucket_cap_mb: DDP's ``bucket_cap_mb``; ``None`` means DDP's default (25, with a 1 MiB first bucket).
        dtypes: gradient dtype of each parameter; DDP never mixes dtypes in one bucket.
    """
    first_limit, limit = bucket_limits_bytes(bucket_cap_mb)
    open_buckets: dict[str, list[int]] = {}
    open_sizes: dict[str, int] = {}
    limit_of: dict[str, int] = {}
    closed: list[list[int]] = []
    for index in ready_order:
        key = dtypes[index] if dtypes is not None else "float32"
        open_buckets.setdefault(key, []).append(index)
        open_sizes[key] = open_sizes.get(key, 0) + int(sizes_bytes[index])
        current_limit = limit_of.setdefault(key, first_limit)
        if open_sizes[key] >= current_limit:
            closed.append(open_buckets.pop(key))
            open_sizes[key] = 0
            limit_of[key] = limit
    closed.extend(members for members in open_buckets.values() if members)
    buckets: list[Bucket] = []
    previous_start = 0.0
    for k, members in enumerate(closed):
        ready = max(float(ready_fracs[i]) for i in members)
        start = max(ready, previous_start)
        buckets.append(Bucket(k, tuple(members), sum(int(sizes_bytes[i]) for i in members), ready, start))
        previous_start = start
    return buckets
