"""The event-driven allreduce simulator (paper, section "Simulator"): when does parameter exchange end?

Time 0 is the start of the backward pass. Each transfer (a DDP bucket, or a layer in per-layer mode)
starts at its ready time and must move ``bus_bytes = 2·s·(n−1)/n`` bytes (what a ring allreduce of
``s`` bytes moves per rank, so that ``bus_bytes / busbw`` is its duration). The paper's sharing rule:
with ``c`` transfers active and ``b_agg`` the sum of their bus bandwidths, each runs at its own
``b_bus`` while ``b_agg < b_cap``, and at ``min(b_bus, b_cap / c)`` otherwise. Whenever the active set
changes, every remaining finish time is recomputed. The heap is keyed ``(time, priority, seq)`` (finishes
before starts at equal times, then first-come), so runs are deterministic.

``mode="sequential"`` runs one transfer at a time in start order, as a single communication stream does
(NCCL issues all of DDP's buckets on one stream).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.errors import SriftyError

OverlapMode = Literal["fair_share", "sequential"]
_FINISH, _START = 0, 1


@dataclass(frozen=True)
class AllreduceTrace:
    """Result of one simulated parameter exchange (seconds from the start of backward)."""

    end_s: float
    start_s: NDArray[np.float64]
    finish_s: NDArray[np.float64]


def simulate_allreduce(
    start_s: ArrayLike,
    bus_bytes_each: ArrayLike,
    busbw_bytes_per_s: ArrayLike,
    cap_bytes_per_s: float,
    mode: OverlapMode = "fair_share",
) -> AllreduceTrace:
    """Simulate concurrent transfers under the paper's fair-sharing rule (or one at a time).

    Args:
        start_s: when each transfer may start (s).
        bus_bytes_each: bytes each transfer moves per rank (see :func:`srifty.vocab.busbw.bus_bytes`).
        busbw_bytes_per_s: each transfer's bus bandwidth alone (from the bandwidth model), > 0.
        cap_bytes_per_s: the per-VM bus-bandwidth cap ``b_cap``, > 0.
        mode: ``"fair_share"`` (the paper) or ``"sequential"``.

    Returns:
        The end of the last transfer, ``t_pe`` (0 when there are none), and each transfer's start/finish.
    """
    starts = np.asarray(start_s, dtype=float)
    sizes = np.asarray(bus_bytes_each, dtype=float)
    busbw = np.asarray(busbw_bytes_per_s, dtype=float)
    n = len(starts)
    if not (len(sizes) == len(busbw) == n):
        raise SriftyError("simulate_allreduce needs one start, size and bandwidth per transfer")
    if n and (np.any(busbw <= 0) or cap_bytes_per_s <= 0):
        raise SriftyError("bus bandwidths and the cap must be positive")
    if n == 0:
        empty = np.zeros(0)
        return AllreduceTrace(0.0, empty, empty)
    if mode == "sequential":
        return _sequential(starts, sizes, np.minimum(busbw, cap_bytes_per_s))
    return _fair_share(starts, sizes, busbw, cap_bytes_per_s)


def _sequential(starts: NDArray[np.float64], sizes: NDArray[np.float64], rate: NDArray[np.float64]) -> AllreduceTrace:
    order = np.argsort(starts, kind="stable")
    begin = np.zeros_like(starts)
    finish = np.zeros_like(starts)
    clock = 0.0
    for i in order:
        begin[i] = max(clock, starts[i])
        clock = begin[i] + sizes[i] / rate[i]
        finish[i] = clock
    return AllreduceTrace(float(finish.max()), begin, finish)


def _fair_share(
    starts: NDArray[np.float64], sizes: NDArray[np.float64], busbw: NDArray[np.float64], cap: float
) -> AllreduceTrace:
    heap: list[tuple[float, int, int, int, int]] = []  # (time, priority, seq, transfer, version)
    seq = 0
    for i in np.argsort(starts, kind="stable"):
        heap.append((float(starts[i]), _START, seq, int(i), 0))
        seq += 1
    heapq.heapify(heap)
    # Plain lists: element access on numpy arrays costs more than the arithmetic in this loop.
    remaining = [float(v) for v in sizes]
    own = [float(v) for v in busbw]
    rate = [0.0] * len(remaining)
    version = [0] * len(remaining)
    finish = [0.0] * len(remaining)
    active: list[int] = []
    now = 0.0

    def reschedule() -> None:
        nonlocal seq
        aggregate = sum(own[j] for j in active)
        share = cap / len(active) if active else 0.0
        for j in active:
            new_rate = own[j] if aggregate < cap else min(own[j], share)
            if new_rate == rate[j]:
                continue  # its queued finish time still holds
            rate[j] = new_rate
            version[j] += 1
            heapq.heappush(heap, (now + remaining[j] / new_rate, _FINISH, seq, j, version[j]))
            seq += 1

    while heap:
        time, kind, _, j, ver = heapq.heappop(heap)
        if kind == _FINISH and ver != version[j]:
            continue  # superseded by a later reschedule
        elapsed = time - now
        if elapsed > 0:
            for k in active:
                remaining[k] = max(remaining[k] - rate[k] * elapsed, 0.0)
        now = max(now, time)
        if kind == _START:
            active.append(j)
        else:
            active.remove(j)
            remaining[j] = 0.0
            rate[j] = 0.0
            finish[j] = now
        reschedule()
    finish_s = np.asarray(finish)
    return AllreduceTrace(float(finish_s.max()), starts.copy(), finish_s)
