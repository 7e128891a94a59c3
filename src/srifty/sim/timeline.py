"""The event-driven timeline of one FSDP/HSDP iteration: compute of each unit, and collectives on two streams.

The units (see :func:`srifty.compute.sharding.sharding_units`) run their forward in order, then their
backward in reverse. Collectives run on two FIFO streams, as FSDP2 issues them:

* the **all-gather stream**: each unit's parameters are gathered before its forward (the next unit's
  gather is issued when a unit's forward starts: one prefetched), and, for units resharded after forward
  (every block; not the root), again before its backward (the next one issued when a unit's backward
  starts; the first when the forward ends);
* the **reduce-scatter stream**: when a unit's backward ends, its gradients are reduce-scattered (and, under
  HSDP, the shard is then allreduced across VMs).

A unit's compute starts when the previous compute ended and its parameters are gathered. The optimizer
step runs after the last collective. Two transfers that are in flight at once on the same link share it by
the paper's rule (:mod:`srifty.sim.allreduce`): each at its own bus bandwidth while their sum is under the
link's cap, at ``min(own, cap / 2)`` otherwise; transfers on different links (HSDP's all-gathers inside a VM
and its allreduces between VMs) do not share. Compute and communication slow each other while both run, by
measured :class:`~srifty.compute.interference.OverlapFactors` (while a unit computes and any transfer is in
flight: compute at ``1/f_b`` of its speed and every transfer at ``1/f_c`` of its rate; without factors, neither
slows the other).

Pure python, no randomness; the caller (:mod:`srifty.sim.fsdp`) scales compute and communication per
iteration.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from srifty.compute import OverlapFactors

AG, RS = 0, 1
_EPS = 1e-15


@dataclass(frozen=True)
class Transfer:
    """One collective: ``bus_bytes`` to move per rank at ``busbw_bytes_per_s`` alone, on link ``link``."""

    bus_bytes: float
    busbw_bytes_per_s: float
    link: int = 0

    @property
    def alone_s(self) -> float:
        """Its duration when nothing else is in flight."""
        return self.bus_bytes / self.busbw_bytes_per_s if self.bus_bytes > 0 else 0.0


@dataclass(frozen=True)
class UnitSteps:
    """What one unit does in an iteration (seconds, and its transfers).

    Attributes:
        fw_s, bwd_s: its forward and backward compute.
        gather: its parameters' all-gather before forward (``None``: nothing to gather, one GPU).
        regather: before backward (``None`` where it stays gathered: the root).
        reduce: its gradients' reduce-scatter, then an HSDP allreduce, in order (empty on one GPU).
    """

    fw_s: float
    bwd_s: float
    gather: Transfer | None
    regather: Transfer | None
    reduce: tuple[Transfer, ...]


@dataclass(frozen=True)
class TimelineResult:
    """When things ended, from the start of the iteration (seconds).

    Attributes:
        end_s: the iteration (after the optimizer step).
        compute_end_s: the last backward compute.
        forward_end_s: the last forward compute (backward starts here).
        comm_end_s: the last collective.
        compute_s: forward + backward + step compute alone.
    """

    end_s: float
    compute_end_s: float
    forward_end_s: float
    comm_end_s: float
    compute_s: float


def run_timeline(
    units: Sequence[UnitSteps],
    step_s: float,
    caps_bytes_per_s: Sequence[float],
    factors: OverlapFactors | None = None,
) -> TimelineResult:
    """Simulate one iteration of ``units`` (forward order); ``caps_bytes_per_s[link]`` caps each link;
    ``factors``: how compute and communication slow each other while both run (``None``: not at all)."""
    n = len(units)
    # compute tasks: forward 0..n-1, then backward n-1..0; the gather each needs, and what starting/ending issues
    order = list(range(n)) + list(range(n - 1, -1, -1))
    durations = [units[u].fw_s if k < n else units[u].bwd_s for k, u in enumerate(order)]
    # stream jobs: (transfer, issued-at-or-None)
    ag_jobs: list[Transfer] = []
    need: list[int | None] = []  # compute task -> index of the all-gather job it waits for
    for u in range(n):
        gather = units[u].gather
        need.append(len(ag_jobs) if gather is not None else None)
        if gather is not None:
            ag_jobs.append(gather)
    for u in range(n - 1, -1, -1):
        regather = units[u].regather
        need.append(len(ag_jobs) if regather is not None else None)
        if regather is not None:
            ag_jobs.append(regather)
    rs_jobs: list[Transfer] = []
    reduce_of: list[list[int]] = []  # backward task (k - n) -> its reduce jobs
    for u in range(n - 1, -1, -1):
        reduce_of.append(list(range(len(rs_jobs), len(rs_jobs) + len(units[u].reduce))))
        rs_jobs.extend(units[u].reduce)
    issued = ([False] * len(ag_jobs), [False] * len(rs_jobs))
    done = ([math.inf] * len(ag_jobs), [math.inf] * len(rs_jobs))
    head = [0, 0]
    remaining: list[float | None] = [None, None]

    prefetched = -1  # compute tasks up to this one have had their gather issued

    def issue_gathers_up_to(k_task: int) -> None:
        """Issue every all-gather needed by compute tasks up to ``k_task`` (prefetch)."""
        nonlocal prefetched
        while prefetched < min(k_task, len(order) - 1):
            prefetched += 1
            j = need[prefetched]
            if j is not None:
                issued[AG][j] = True

    now = 0.0
    task = 0
    work_left: float | None = None  # seconds of the running compute task's work at full speed
    forward_end = compute_end = 0.0
    inf = math.inf
    issue_gathers_up_to(1)  # the first unit's gather and one prefetched
    n_tasks = len(order)
    while True:
        if work_left is None and task < n_tasks:
            j = need[task]
            if j is None or done[AG][j] <= now + _EPS:
                work_left = durations[task]
                # starting a unit's forward (or backward) prefetches the next unit's gather
                issue_gathers_up_to(task + 1)
        left_ag, left_rs = remaining
        if left_ag is None and head[AG] < len(ag_jobs) and issued[AG][head[AG]]:
            left_ag = ag_jobs[head[AG]].bus_bytes
        if left_rs is None and head[RS] < len(rs_jobs) and issued[RS][head[RS]]:
            left_rs = rs_jobs[head[RS]].bus_bytes
        rate_ag, rate_rs = _rates(ag_jobs, rs_jobs, head, left_ag, left_rs, caps_bytes_per_s)
        communicating = left_ag is not None or left_rs is not None
        speed, rho_comm = (1.0, 1.0) if factors is None else factors.rates(communicating, work_left is not None)
        rate_ag, rate_rs = rate_ag * rho_comm, rate_rs * rho_comm
        busy_until = now + work_left / speed if work_left is not None else inf
        finish_ag = now + left_ag / rate_ag if left_ag is not None else inf
        finish_rs = now + left_rs / rate_rs if left_rs is not None else inf
        t_next = min(busy_until, finish_ag, finish_rs)
        if t_next == inf:
            remaining = [left_ag, left_rs]
            break
        step = t_next - now
        now = t_next
        if work_left is not None:
            work_left = max(work_left - speed * step, 0.0)
        if busy_until <= now + _EPS:
            work_left = None
            if task == n - 1:
                forward_end = now
            compute_end = now
            if task >= n:
                for r in reduce_of[task - n]:
                    issued[RS][r] = True
            task += 1
        remaining = [
            _advance(AG, left_ag, rate_ag * step, finish_ag, now, done, head),
            _advance(RS, left_rs, rate_rs * step, finish_rs, now, done, head),
        ]
    if task < n_tasks:
        raise RuntimeError("FSDP timeline stalled: a unit waits for a gather never issued")  # a bug, not input
    comm_end = max([*(d for d in done[AG] if d < math.inf), *(d for d in done[RS] if d < math.inf), 0.0])
    compute_s = sum(durations) + step_s
    end = max(now, comm_end) + step_s
    return TimelineResult(end, compute_end, forward_end, comm_end, compute_s)


def _advance(
    stream: int,
    left: float | None,
    moved: float,
    finish: float,
    now: float,
    done: tuple[list[float], list[float]],
    head: list[int],
) -> float | None:
    """The bytes ``stream``'s current transfer has left after moving ``moved`` more; ``None`` when it is done
    by ``now`` (its finish time reached, or nothing left), which is then recorded and the stream moves on."""
    if left is None:
        return None
    left = max(left - moved, 0.0)
    if finish <= now + _EPS or left <= _EPS:
        done[stream][head[stream]] = now
        head[stream] += 1
        return None
    return left


def _rates(
    ag_jobs: list[Transfer],
    rs_jobs: list[Transfer],
    head: list[int],
    left_ag: float | None,
    left_rs: float | None,
    caps: Sequence[float],
) -> tuple[float, float]:
    """Each stream's current rate: its own bus bandwidth, or a fair share of a link both use over its cap."""
    own_ag = ag_jobs[head[AG]].busbw_bytes_per_s if left_ag is not None else 0.0
    own_rs = rs_jobs[head[RS]].busbw_bytes_per_s if left_rs is not None else 0.0
    if left_ag is None or left_rs is None:
        return own_ag, own_rs
    link = ag_jobs[head[AG]].link
    if link != rs_jobs[head[RS]].link or own_ag + own_rs < caps[link]:
        return own_ag, own_rs
    half = caps[link] / 2.0
    return min(own_ag, half), min(own_rs, half)
