"""The event-driven allreduce simulator (paper, section "Simulator"): when does parameter exchange end?

Time 0 is the start of the backward pass. Each transfer (a DDP bucket, or a layer in per-layer mode)
starts at its ready time and must move ``bus_bytes = 2·s·(n−1)/n`` bytes (what a ring allreduce of
``s`` bytes moves per rank, so that ``bus_bytes / busbw`` is its duration). The paper's sharing rule:
with ``c`` transfers active and ``b_agg`` the sum of their bus bandwidths, each runs at its own
``b_bus`` while ``b_agg < b_cap``, and at ``min(b_bus, b_cap / c)`` otherwise. Whenever the active set
changes, the rates change; a processor-sharing virtual clock (see :func:`_fair_share`) keeps this to the
transfers whose rate actually changes class, instead of re-queueing every active one (``O(n²)`` for DDP's
~100 buckets). Finishes come before starts at equal times, then first-come, so runs are deterministic.

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
    """The paper's rule with a processor-sharing virtual clock: ``O((n + moves) log n)`` instead of re-queueing
    every active transfer whenever the active set changes.

    Every active transfer runs at ``min(own_j, L)``, one level ``L`` for all: ``L = ∞`` while the sum of own
    rates is under the cap, ``cap / c`` otherwise. Transfers with ``own_j ≤ L`` (set *U*) keep a finish time
    in real time, which only changes when they move; the others (set *S*) all progress at ``L``, so they share
    a virtual clock ``V`` with ``dV/dt = L`` and finish, in order of their tags ``V_join + remaining``, when
    ``V`` reaches their tag. When ``L`` changes (an arrival or a finish), only the transfers whose own rate lies
    between the old and the new level move between the sets. Ties: finishes before arrivals, then arrival
    order (as the event heap of the reference implementation keys them).
    """
    n = len(starts)
    order = sorted(range(n), key=lambda i: (float(starts[i]), i))
    arrival = [float(v) for v in starts]
    own = [float(v) for v in busbw]
    size = [float(v) for v in sizes]
    finish = [0.0] * n
    where = [0] * n  # 0 pending, 1 in U, 2 in S, 3 done
    version = [0] * n
    due = [0.0] * n  # U: finish time
    tag = [0.0] * n  # S: virtual finish
    u_due: list[tuple[float, int, int, int]] = []  # (finish time, arrival rank, transfer, version)
    u_fast: list[tuple[float, int, int]] = []  # (-own, transfer, version): U's fastest first
    s_tag: list[tuple[float, int, int, int]] = []  # (tag, arrival rank, transfer, version)
    s_slow: list[tuple[float, int, int]] = []  # (own, transfer, version): S's slowest first
    rank = {j: r for r, j in enumerate(order)}
    now = virtual = 0.0
    level = float("inf")
    active = 0
    aggregate = 0.0
    k = 0

    def into_u(j: int, remaining: float) -> None:
        version[j] += 1
        where[j] = 1
        due[j] = now + remaining / own[j]
        heapq.heappush(u_due, (due[j], rank[j], j, version[j]))
        heapq.heappush(u_fast, (-own[j], j, version[j]))

    def into_s(j: int, remaining: float) -> None:
        version[j] += 1
        where[j] = 2
        tag[j] = virtual + remaining
        heapq.heappush(s_tag, (tag[j], rank[j], j, version[j]))
        heapq.heappush(s_slow, (own[j], j, version[j]))

    def top(heap: list[tuple[float, int, int, int]], member: int) -> tuple[float, int] | None:
        while heap and (where[heap[0][2]] != member or version[heap[0][2]] != heap[0][3]):
            heapq.heappop(heap)
        return (heap[0][0], heap[0][2]) if heap else None

    def relevel() -> None:
        nonlocal level
        new = float("inf") if aggregate < cap or active == 0 else cap / active
        if new > level:  # S members now under the level run at their own rate
            while s_slow:
                rate, j, ver = s_slow[0]
                if where[j] != 2 or version[j] != ver:
                    heapq.heappop(s_slow)
                elif rate <= new:
                    heapq.heappop(s_slow)
                    into_u(j, max(tag[j] - virtual, 0.0))
                else:
                    break
        elif new < level:  # U members above the new level share it
            while u_fast:
                neg, j, ver = u_fast[0]
                if where[j] != 1 or version[j] != ver:
                    heapq.heappop(u_fast)
                elif -neg > new:
                    heapq.heappop(u_fast)
                    into_s(j, max((due[j] - now) * own[j], 0.0))
                else:
                    break
        level = new

    while True:
        next_arrival = arrival[order[k]] if k < n else float("inf")
        u_next = top(u_due, 1)
        s_next = top(s_tag, 2)
        u_time = u_next[0] if u_next else float("inf")
        s_time = now + (s_next[0] - virtual) / level if s_next else float("inf")
        event = min(u_time, s_time)
        if event == float("inf") and next_arrival == float("inf"):
            break
        if event <= next_arrival:
            j = u_next[1] if (u_next and u_time <= s_time) else s_next[1]  # type: ignore[index]
            if s_next and level < float("inf"):
                virtual += level * max(event - now, 0.0)
            now = max(now, event)
            where[j] = 3
            finish[j] = now
            active -= 1
            aggregate -= own[j]
        else:
            if s_next and level < float("inf"):
                virtual += level * max(next_arrival - now, 0.0)
            now = max(now, next_arrival)
            j = order[k]
            k += 1
            active += 1
            aggregate += own[j]
            into_u(j, size[j])
        relevel()
    finish_s = np.asarray(finish)
    return AllreduceTrace(float(finish_s.max()), starts.copy(), finish_s)
