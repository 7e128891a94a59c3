"""Backward and the gradient exchange slowing each other: when do both end?

The paper's simulator lets backward and the allreduce overlap perfectly (:mod:`srifty.sim.allreduce` gives
``t_pe``, the iteration takes ``max(t_bwd, t_pe)``). Here they slow each other by measured
:class:`~srifty.compute.interference.OverlapFactors`: between events the rates are constant; backward moves
through its work at ``ρ_b / t_bwd`` per second, each active transfer at ``ρ_c`` times its network rate
(the paper's sharing rule among transfers: each at its own bus bandwidth while their sum is under the cap,
at ``min(own, cap / c)`` otherwise; or one at a time in start order, ``sequential``), with
``(ρ_b, ρ_c) = (1/f_b, 1/f_c)`` while both run and ``(1, 1)`` otherwise. A transfer becomes ready when
backward has done its start fraction of the work, so a slowed backward also delays the buckets. Events:
backward reaching the next start fraction or its end, a transfer finishing.

Pure python; ``O(events × transfers)``, events ≤ 2 × transfers + 1 (DDP has a handful of buckets; per-layer
transfers are a few hundred at most). Time 0 is the start of backward.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from srifty.compute import OverlapFactors
from srifty.errors import SriftyError
from srifty.sim.allreduce import OverlapMode

_EPS = 1e-12


@dataclass(frozen=True)
class OverlapTrace:
    """When backward and the exchange end (seconds from the start of backward)."""

    bwd_end_s: float
    pe_end_s: float

    @property
    def end_s(self) -> float:
        """When both are done: what the iteration waits for before the optimizer step."""
        return max(self.bwd_end_s, self.pe_end_s)


def _network_rates(active: list[int], own: list[float], cap: float, mode: OverlapMode) -> dict[int, float]:
    """Each active transfer's network rate (bus bytes/s) by the paper's rule, or the first alone."""
    if not active:
        return {}
    if mode == "sequential":
        return {active[0]: min(own[active[0]], cap)}
    total = sum(own[j] for j in active)
    level = float("inf") if total < cap else cap / len(active)
    return {j: min(own[j], level) for j in active}


def simulate_overlap(
    start_fracs: ArrayLike,
    bus_bytes_each: ArrayLike,
    busbw_bytes_per_s: ArrayLike,
    cap_bytes_per_s: float,
    t_bwd_s: float,
    factors: OverlapFactors,
    mode: OverlapMode = "fair_share",
) -> OverlapTrace:
    """Simulate backward and the transfers slowing each other.

    Args:
        start_fracs: each transfer's start, as a fraction of backward's work (DDP bucket start fractions).
        bus_bytes_each: bus bytes each transfer moves per rank.
        busbw_bytes_per_s: each transfer's bus bandwidth on its network alone, > 0.
        cap_bytes_per_s: the per-VM bus-bandwidth cap, > 0.
        t_bwd_s: backward's time alone (s).
        factors: how much the two slow each other while both run.
        mode: ``"fair_share"`` or ``"sequential"`` (see :mod:`srifty.sim.allreduce`).
    """
    fracs = [min(max(float(f), 0.0), 1.0) for f in np.asarray(start_fracs, dtype=float)]
    size = [float(v) for v in np.asarray(bus_bytes_each, dtype=float)]
    own = [float(v) for v in np.asarray(busbw_bytes_per_s, dtype=float)]
    n = len(fracs)
    if not (len(size) == len(own) == n):
        raise SriftyError("simulate_overlap needs one start, size and bandwidth per transfer")
    if n and (min(own) <= 0 or cap_bytes_per_s <= 0):
        raise SriftyError("bus bandwidths and the cap must be positive")
    order = sorted(range(n), key=lambda j: (fracs[j], j))
    remaining = size[:]
    active: list[int] = []
    done = 0.0  # backward's work done (0-1)
    now = 0.0
    bwd_end = t_bwd_s if t_bwd_s > 0 else 0.0
    k = 0
    if t_bwd_s <= 0:
        done = 1.0
    finished = 0
    pe_end = 0.0
    while True:
        while k < n and fracs[order[k]] <= done + _EPS:
            active.append(order[k])
            k += 1
        if finished == n and done >= 1.0:
            break
        computing = done < 1.0
        net = _network_rates(active, own, cap_bytes_per_s, mode)
        rho_b, rho_c = factors.rates(bool(net), computing)
        speed = rho_b / t_bwd_s if computing else 0.0
        target = fracs[order[k]] if k < n else 1.0
        step = (min(target, 1.0) - done) / speed if computing and speed > 0 else float("inf")
        finishing = {j: remaining[j] / (rho_c * r) for j, r in net.items() if r > 0}
        first = min(finishing.values(), default=float("inf"))
        dt = min(step, first)
        if dt == float("inf"):
            raise SriftyError("simulate_overlap: nothing can progress (a zero rate)")
        now += dt
        if computing:
            done = min(done + speed * dt, 1.0) if dt < step else min(target, 1.0)
            if done >= 1.0 - _EPS:
                done = 1.0
                bwd_end = now
        for j, r in net.items():
            remaining[j] -= rho_c * r * dt
        for j in [j for j in active if remaining[j] <= size[j] * 1e-12 or finishing.get(j, float("inf")) <= dt]:
            active.remove(j)
            finished += 1
            pe_end = now
    return OverlapTrace(bwd_end, pe_end)
