"""Memory model: peak training memory is linear in the batch, ``peak_bytes = a + b·batch``.

``a`` covers parameters, gradients and optimizer state; ``b`` the activations one sample keeps for the
backward pass. Fitted by least squares on measured peaks; predicts the largest batch that fits any
device capacity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from srifty.errors import ProfileError

# On a GPU, the CUDA context and allocator fragmentation take memory the model does not see.
DEFAULT_GPU_RESERVE_BYTES = 1 << 30
DEFAULT_USABLE_FRACTION = 0.92


@dataclass(frozen=True)
class MemoryModel:
    """``peak_bytes(B) = base_bytes + per_sample_bytes · B``."""

    base_bytes: float
    per_sample_bytes: float

    def peak_bytes(self, batch: float) -> float:
        """Predicted peak bytes at ``batch``."""
        return self.base_bytes + self.per_sample_bytes * batch

    def max_batch(
        self,
        capacity_bytes: float,
        usable_fraction: float = DEFAULT_USABLE_FRACTION,
        reserve_bytes: float = DEFAULT_GPU_RESERVE_BYTES,
    ) -> int:
        """Largest batch whose predicted peak fits ``usable_fraction·capacity − reserve`` (0 if none)."""
        usable = capacity_bytes * usable_fraction - reserve_bytes - self.base_bytes
        if usable <= 0:
            return 0
        if self.per_sample_bytes <= 0:
            raise ProfileError("memory model has no per-sample cost; cannot bound the batch by memory")
        return int(usable / self.per_sample_bytes + 1e-9)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"base_bytes": self.base_bytes, "per_sample_bytes": self.per_sample_bytes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryModel:
        """Inverse of :meth:`to_dict`."""
        return cls(float(data["base_bytes"]), float(data["per_sample_bytes"]))


def fit_memory_model(batches: Sequence[int], peak_bytes: Sequence[float]) -> MemoryModel:
    """Line through measured ``(batch, peak_bytes)``: least-squares slope (at least 1 byte per sample),
    intercept raised until the line is at or above every measurement, so the predicted largest batch
    errs on the side of fitting.

    Raises:
        ProfileError: fewer than two distinct batch sizes.
    """
    xs = np.asarray(batches, dtype=float)
    ys = np.asarray(peak_bytes, dtype=float)
    if len(np.unique(xs)) < 2:
        raise ProfileError("a memory model needs peak memory at two or more batch sizes")
    slope, _ = np.polyfit(xs, ys, 1)
    slope = max(float(slope), 1.0)
    intercept = float(np.max(ys - slope * xs))
    return MemoryModel(base_bytes=max(intercept, 0.0), per_sample_bytes=slope)


def find_max_batch(fits: Callable[[int], bool], cap: int) -> int:
    """Largest batch in ``[1, cap]`` for which ``fits`` is true: doubling, then binary search.

    Assumes ``fits`` is monotone (true up to some batch, false beyond). The profiler calls it with a real
    out-of-memory probe; the emulated cloud with its memory truth.

    Raises:
        ProfileError: not even batch 1 fits.
    """
    if not fits(1):
        raise ProfileError("not even a batch of 1 fits in memory; use a larger device or a smaller model")
    good, bad = 1, None
    while good < cap:
        trial = min(good * 2, cap)
        if fits(trial):
            good = trial
        else:
            bad = trial
            break
    if bad is None:
        return good
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good
