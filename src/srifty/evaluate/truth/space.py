"""The space of configurations the judge searches, and how it divides a job's work (EMULATED cloud).

A configuration rents ``n_i ≤ quota_i`` VMs of each offer ``i`` (its *shape*) and gives every GPU a local
batch so that the local batches add up to the job's global batch. The judge's space is wider than srifty's
(:data:`WIDE`): any local batch from 1 to what the GPU really holds, not only powers of two, and the VMs of
one offer may split their share unevenly (some at ``b``, the rest at ``b − 1``), so a global batch that no
power of two divides is still divided exactly. :data:`POWERS_OF_TWO` is srifty's own rule (one power-of-two
batch per offer, the batch equation met exactly), kept to measure what that rule costs.

Within a shape, the best way to divide the work is the one whose slowest GPU is fastest: a configuration's
time and cost depend on its shape (prices, VMs, network) and on the slowest rank (everyone waits for it), and
its cost is its shape's price times its time. :func:`wide_split` finds that division exactly on the truth's
own per-rank compute curves (water-filling over the levels of the curves, then removing the surplus from
the slowest VMs); :func:`powers_of_two_split` does the same within srifty's rule (a dynamic programme over
sums).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from srifty.evaluate.truth.offers import RentalOffer

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Space = Literal["wide", "powers_of_two"]
WIDE: Space = "wide"
POWERS_OF_TWO: Space = "powers_of_two"
#: One offer's part of a configuration: ``(offer index, VMs, local batch)``.
Part = tuple[int, int, int]
#: Levels above the lowest one tried when whole GPUs cannot add up to the global batch at it.
MAX_EXTRA_LEVELS = 8


@dataclass(frozen=True)
class OfferCurve:
    """One offer with the truth's steady per-rank time at every local batch that fits.

    Attributes:
        offer: what is rented.
        rank_ms: ``rank_ms[b − 1]`` is one GPU's steady iteration time (ms) at local batch ``b``, never above
            the truth's and non-decreasing (:meth:`srifty.cloud.ComputeTruth.rank_curve_ms`); its length is the
            largest batch that fits.
    """

    offer: RentalOffer
    rank_ms: FloatArray

    @property
    def max_batch(self) -> int:
        """Largest local batch one GPU holds."""
        return int(self.rank_ms.size)

    @property
    def gpus(self) -> int:
        """GPUs per VM."""
        return self.offer.gpus

    def ms(self, batch: int) -> float:
        """Steady per-rank time at ``batch``."""
        return float(self.rank_ms[batch - 1])


@dataclass(frozen=True)
class Levels:
    """Every offer's largest batch within each level of per-rank time (for water-filling).

    Attributes:
        levels_ms: every distinct per-rank time of every offer, ascending.
        batches: ``batches[i, m]``: offer ``i``'s largest batch with time ≤ ``levels_ms[m]`` (0: none).
    """

    levels_ms: FloatArray
    batches: IntArray = field(repr=False)

    @classmethod
    def of(cls, curves: Sequence[OfferCurve]) -> Levels:
        """The levels of ``curves``."""
        parts = [c.rank_ms for c in curves if c.max_batch]
        levels = np.unique(np.concatenate(parts)) if parts else np.zeros(0)
        batches = np.array([np.searchsorted(c.rank_ms, levels, side="right") for c in curves], dtype=np.int64).reshape(
            len(curves), levels.size
        )
        return cls(levels, batches)

    def lowest_level(self, weights: Sequence[int], global_batch: int, floor_ms: float = 0.0) -> int | None:
        """Index of the lowest level at or above ``floor_ms`` at which ``Σ weights[i]·batches[i]`` reaches
        ``global_batch`` (``weights[i]``: GPUs of offer ``i`` that may take samples); ``None`` if none does."""
        if self.levels_ms.size == 0:
            return None
        w = np.asarray(weights, dtype=np.int64)
        lo = int(np.searchsorted(self.levels_ms, floor_ms - 1e-12, side="left"))
        hi = self.levels_ms.size - 1
        if lo > hi or int(w @ self.batches[:, hi]) < global_batch:
            return None
        while lo < hi:
            mid = (lo + hi) // 2
            if int(w @ self.batches[:, mid]) >= global_batch:
                hi = mid
            else:
                lo = mid + 1
        return lo


def shapes_in(curves: Sequence[OfferCurve]) -> int:
    """Shapes (VM counts per offer, at least one VM) the offers allow."""
    return math.prod(c.offer.quota + 1 for c in curves) - 1


def wide_split(
    curves: Sequence[OfferCurve], counts: Sequence[int], global_batch: int, levels: Levels
) -> tuple[Part, ...] | None:
    """The division of ``global_batch`` over the VMs ``counts`` whose slowest GPU is fastest, with any local
    batch and uneven shares within an offer; ``None`` when the shape cannot divide it (too many GPUs for the
    batch, too little memory, or GPUs per VM that do not divide it)."""
    used = [i for i, n in enumerate(counts) if n > 0]
    if not used:
        return None
    gpus = [counts[i] * curves[i].gpus for i in used]
    if sum(gpus) > global_batch or any(curves[i].max_batch < 1 for i in used):
        return None
    if global_batch % reduce(math.gcd, (curves[i].gpus for i in used)):
        return None
    weights = [counts[i] * curves[i].gpus if counts[i] > 0 else 0 for i in range(len(curves))]
    floor = max(curves[i].ms(1) for i in used)
    m = levels.lowest_level(weights, global_batch, floor)
    if m is None:
        return None
    top = levels.levels_ms.size
    for level in range(m, min(m + MAX_EXTRA_LEVELS, top)):
        caps = {i: int(levels.batches[i, level]) for i in used}
        parts = _greedy_shares(curves, counts, used, caps, global_batch) or _exact_shares(
            curves, counts, used, caps, global_batch
        )
        if parts is not None:
            return parts

    # Higher still: an exact division at a level stays possible at every level above it (caps only grow), so
    # the lowest level that has one is found by bisection.
    def exact_at(level: int) -> tuple[Part, ...] | None:
        return _exact_shares(curves, counts, used, {i: int(levels.batches[i, level]) for i in used}, global_batch)

    lo, hi = m + MAX_EXTRA_LEVELS, top - 1
    if lo > hi or exact_at(hi) is None:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if exact_at(mid) is not None:
            hi = mid
        else:
            lo = mid + 1
    return exact_at(lo)


def _as_parts(curves: Sequence[OfferCurve], counts: Sequence[int], shares: dict[int, int]) -> tuple[Part, ...]:
    """Each offer's share of samples spread over its VMs as evenly as whole GPUs allow: ``(VMs, batch)`` parts."""
    parts: list[Part] = []
    for i, share in shares.items():
        per_vm, extra = divmod(share // curves[i].gpus, counts[i])
        if counts[i] - extra > 0:
            parts.append((i, counts[i] - extra, per_vm))
        if extra > 0:
            parts.append((i, extra, per_vm + 1))
    return tuple(parts)


def _greedy_shares(
    curves: Sequence[OfferCurve], counts: Sequence[int], used: list[int], caps: dict[int, int], global_batch: int
) -> tuple[Part, ...] | None:
    """Every offer at its cap, then the surplus taken off the slowest VMs first (larger VMs first on ties)."""
    batch = dict(caps)
    lowered = dict.fromkeys(used, 0)  # VMs of each offer at one below its batch
    surplus = sum(counts[i] * curves[i].gpus * batch[i] for i in used) - global_batch
    while surplus > 0:
        able = [i for i in used if batch[i] >= 2 and curves[i].gpus <= surplus]
        if not able:
            return None
        i = min(able, key=lambda j: (-curves[j].ms(batch[j]), -curves[j].gpus, j))
        take = min(counts[i] - lowered[i], surplus // curves[i].gpus)
        lowered[i] += take
        surplus -= take * curves[i].gpus
        if lowered[i] == counts[i]:
            batch[i] -= 1
            lowered[i] = 0
    return _as_parts(curves, counts, {i: curves[i].gpus * (counts[i] * batch[i] - lowered[i]) for i in used})


def _exact_shares(
    curves: Sequence[OfferCurve], counts: Sequence[int], used: list[int], caps: dict[int, int], global_batch: int
) -> tuple[Part, ...] | None:
    """Shares ``S_i`` (whole GPUs' worth, between one sample per GPU and the cap) adding up to the global batch
    exactly, by a dynamic programme over sums; the fastest offers (largest cap) take as much as they can."""
    order = sorted(used, key=lambda i: -caps[i])
    size = global_batch + 1
    reach = [np.zeros(size, dtype=bool)]
    reach[0][0] = True
    for i in order:
        g, lo, hi = curves[i].gpus, counts[i] * curves[i].gpus, counts[i] * curves[i].gpus * caps[i]
        nxt = np.zeros(size, dtype=bool)
        for share in range(lo, min(hi, global_batch) + 1, g):
            nxt[share:] |= reach[-1][: size - share]
        reach.append(nxt)
    if not reach[-1][global_batch]:
        return None
    shares: dict[int, int] = {}
    remaining = global_batch
    for k in range(len(order) - 1, -1, -1):
        i = order[k]
        g, lo, hi = curves[i].gpus, counts[i] * curves[i].gpus, counts[i] * curves[i].gpus * caps[i]
        top = lo + (min(hi, remaining) - lo) // g * g
        share = next(x for x in range(top, lo - 1, -g) if reach[k][remaining - x])
        shares[i] = share
        remaining -= share
    return _as_parts(curves, counts, shares)


def powers_of_two_split(
    curves: Sequence[OfferCurve], counts: Sequence[int], global_batch: int
) -> tuple[Part, ...] | None:
    """srifty's rule: one power-of-two batch per offer, ``Σ VMs·GPUs·batch`` exactly the global batch, the
    slowest GPU as fast as possible (dynamic programme over sums); ``None`` when no such batches exist."""
    used = [i for i, n in enumerate(counts) if n > 0]
    if not used:
        return None
    size = global_batch + 1
    best = np.full(size, np.inf)
    best[0] = 0.0
    choices: list[NDArray[np.int64]] = []
    for i in used:
        w = counts[i] * curves[i].gpus
        nxt = np.full(size, np.inf)
        pick = np.zeros(size, dtype=np.int64)
        b = 1
        while b <= curves[i].max_batch and w * b <= global_batch:
            shift = w * b
            candidate = np.maximum(best[: size - shift], curves[i].ms(b))
            better = candidate < nxt[shift:]
            nxt[shift:] = np.where(better, candidate, nxt[shift:])
            pick[shift:] = np.where(better, b, pick[shift:])
            b *= 2
        best = nxt
        choices.append(pick)
    if not math.isfinite(best[global_batch]):
        return None
    parts: list[Part] = []
    remaining = global_batch
    for i, pick in zip(reversed(used), reversed(choices), strict=True):
        b = int(pick[remaining])
        parts.append((i, counts[i], b))
        remaining -= counts[i] * curves[i].gpus * b
    return tuple(reversed(parts))


def split(
    space: Space, curves: Sequence[OfferCurve], counts: Sequence[int], global_batch: int, levels: Levels
) -> tuple[Part, ...] | None:
    """The best division of the work over ``counts`` within ``space``."""
    if space == WIDE:
        return wide_split(curves, counts, global_batch, levels)
    return powers_of_two_split(curves, counts, global_batch)


def slowest_ms(curves: Sequence[OfferCurve], parts: Sequence[Part]) -> float:
    """The steady per-rank time of the slowest GPU of ``parts``."""
    return max(curves[i].ms(b) for i, _, b in parts)
