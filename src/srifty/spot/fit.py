"""What a spot trace says, as statistics that pool by adding, and the figures fitted from them.

From each trace (:class:`~srifty.vocab.spot_trace.SpotTrace`, instances held per tick):

* **losses**: every fall of the held count is one *loss event* of ``before − after`` VMs; VMs lost per
  VM-hour held is the loss rate;
* **losses together**: in an event that starts with ``h`` VMs held, one VM is lost and each of the other
  ``h − 1`` goes with it with probability ``ρ`` (the burst correlation): ``ρ = Σ(lost − 1) / Σ(h − 1)``
  over events with ``h ≥ 2`` (only traces of several VMs say anything about it);
* **bursts over time**: the trace is cut into windows of :data:`WINDOW_S`; the VMs lost per window scatter
  more than a Poisson count would when the rate itself varies, and the excess gives the gamma shape ``k``
  of the rate's variation (``1/k = Σ((x − μ)² − μ) / Σ μ²``, method of moments for a gamma-Poisson count
  with exposure);
* **time to regain capacity**: after each event, the time until the held count is back at its level before
  the event (ticks, so at least one ``gap_seconds``; events whose capacity never returns before the trace
  ends are censored and counted apart); fitted as a log-normal;
* **the chance of obtaining n VMs at once**: the share of ticks holding at least ``n``.

Loss rates are shrunk towards a prior: the gamma distribution of the rate across every trace (method of
moments over the traces' own rates, its variance doubled: the *widened* prior). A zone with a long trace is
ruled by its data; one with little data, or none, by the prior. Units: seconds, VM-hours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from srifty.units import SECONDS_PER_HOUR
from srifty.vocab import SpotTrace

#: Length of the windows over which bursts in time are measured (s): about one training job.
WINDOW_S = 4 * SECONDS_PER_HOUR
#: The prior's variance is the traces' between-zone variance times this (the prior is *widened*).
PRIOR_WIDENING = 2.0


@dataclass(frozen=True)
class TraceCounts:
    """What one trace (or several, pooled) says, as sums that pool by adding.

    Attributes:
        held_vm_hours: VM-hours held (every tick counts its held VMs for one gap).
        vms_lost: VMs lost (sum of every fall).
        loss_events: falls of the held count.
        burst_extra: ``Σ(lost − 1)`` over events that start with at least 2 VMs held.
        burst_room: ``Σ(held before − 1)`` over those events.
        downtimes_s: seconds from each event until the held count is back at its level before it.
        censored: events whose capacity had not come back when the trace ended.
        dispersion_num: ``Σ((x − μ)² − μ)`` over windows (VMs lost ``x``, expected ``μ`` at the trace's rate).
        dispersion_den: ``Σ μ²`` over windows.
        ticks: ticks observed.
        ticks_holding: ticks holding at least ``j`` VMs, ``j = 1, 2, …``.
        ticks_holding_less: ticks holding at least ``j − 1`` VMs, in traces that ever held ``j`` (so that
            ``ticks_holding[j] / ticks_holding_less[j]`` is the chance of ``j`` given ``j − 1``).
        rates: each trace's own rate (VMs lost per VM-hour held), for the prior.
    """

    held_vm_hours: float
    vms_lost: int
    loss_events: int
    burst_extra: int
    burst_room: int
    downtimes_s: tuple[float, ...]
    censored: int
    dispersion_num: float
    dispersion_den: float
    ticks: int
    ticks_holding: tuple[int, ...]
    ticks_holding_less: tuple[int, ...]
    rates: tuple[float, ...]

    def __add__(self, other: TraceCounts) -> TraceCounts:
        return TraceCounts(
            self.held_vm_hours + other.held_vm_hours,
            self.vms_lost + other.vms_lost,
            self.loss_events + other.loss_events,
            self.burst_extra + other.burst_extra,
            self.burst_room + other.burst_room,
            self.downtimes_s + other.downtimes_s,
            self.censored + other.censored,
            self.dispersion_num + other.dispersion_num,
            self.dispersion_den + other.dispersion_den,
            self.ticks + other.ticks,
            _add(self.ticks_holding, other.ticks_holding),
            _add(self.ticks_holding_less, other.ticks_holding_less),
            self.rates + other.rates,
        )


def _add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    return tuple(x + y for x, y in zip(a + (0,) * (n - len(a)), b + (0,) * (n - len(b)), strict=True))


def count_trace(trace: SpotTrace) -> TraceCounts:
    """The sums of one trace (see the module docstring)."""
    held = np.asarray(trace.held, dtype=np.int64)
    gap = trace.gap_s
    held_hours = float(held.sum()) * gap / SECONDS_PER_HOUR
    before, after = held[:-1], held[1:]
    falls = np.flatnonzero(after < before)
    lost = before[falls] - after[falls]
    several = before[falls] >= 2
    downtimes: list[float] = []
    censored = 0
    for level in np.unique(before[falls]):
        back_at = np.flatnonzero(held >= level)  # ticks holding at least the level before the fall
        at = falls[before[falls] == level]
        nxt = np.searchsorted(back_at, at + 1)
        found = nxt < back_at.size
        downtimes += [float(d) * gap for d in back_at[nxt[found]] - at[found]]
        censored += int((~found).sum())
    rate = float(lost.sum()) / held_hours if held_hours > 0 else 0.0
    per_window = max(1, round(WINDOW_S / gap))
    num = den = 0.0
    for start in range(0, len(held) - 1, per_window):
        stop = min(start + per_window, len(held) - 1)
        window_lost = float(np.clip(held[start:stop] - held[start + 1 : stop + 1], 0, None).sum())
        expected = rate * float(held[start:stop].sum()) * gap / SECONDS_PER_HOUR
        num += (window_lost - expected) ** 2 - expected
        den += expected**2
    top = int(held.max())
    return TraceCounts(
        held_vm_hours=held_hours,
        vms_lost=int(lost.sum()),
        loss_events=int(falls.size),
        burst_extra=int((lost[several] - 1).sum()),
        burst_room=int((before[falls][several] - 1).sum()),
        downtimes_s=tuple(downtimes),
        censored=censored,
        dispersion_num=num,
        dispersion_den=den,
        ticks=len(held),
        ticks_holding=tuple(int((held >= j).sum()) for j in range(1, top + 1)),
        ticks_holding_less=(len(held), *(int((held >= j - 1).sum()) for j in range(2, top + 1))),
        rates=(rate,),
    )


@dataclass(frozen=True)
class RatePrior:
    """The gamma prior of the loss rate (VMs lost per VM-hour): ``shape`` and ``rate_vm_hours`` (its rate
    parameter, in VM-hours), so that the mean is ``shape / rate_vm_hours``."""

    shape: float
    rate_vm_hours: float

    @property
    def mean_per_vm_hour(self) -> float:
        """The prior's mean loss rate."""
        return self.shape / self.rate_vm_hours


def fit_prior(rates: Sequence[float]) -> RatePrior:
    """The widened gamma prior over the traces' own loss rates (method of moments; see the module docstring).

    With one trace, or traces that agree exactly, the spread is taken as the mean itself (shape 1 before
    widening): a prior should not claim to know a rate it has seen once.
    """
    values = np.asarray([r for r in rates if math.isfinite(r)], dtype=float)
    mean = float(values.mean()) if values.size else 0.0
    if mean <= 0:
        return RatePrior(0.5, 1.0)  # nothing was ever lost: a vague prior at 0.5 losses per VM-hour
    var = float(values.var(ddof=1)) if values.size > 1 else 0.0
    if var <= 0:
        var = mean**2
    var *= PRIOR_WIDENING
    return RatePrior(mean**2 / var, mean / var)


@dataclass(frozen=True)
class FittedFigures:
    """The figures a spot model keeps for one (instance type, zone), one region, one type, or the prior.

    Attributes:
        loss_rate_per_vm_hour: expected VMs lost per VM-hour held.
        rate_shape: gamma shape of the rate a job meets (the estimate's uncertainty and its bursts over
            time together): the variance of the rate is ``mean² / rate_shape``.
        burst_rho: chance that each other VM of the zone is lost in the same event.
        downtime_log_mu, downtime_log_sigma: log-normal of the time to regain capacity (log seconds).
        downtime_median_s, downtime_p90_s, downtime_mean_s: the same, as observed.
        p_obtain: chance that at least ``j`` VMs can be had at once, ``j = 1, 2, …`` (observed; beyond the
            counts these traces held, conditional chances from the fallback's).
    """

    loss_rate_per_vm_hour: float
    rate_shape: float
    burst_rho: float
    downtime_log_mu: float
    downtime_log_sigma: float
    downtime_median_s: float
    downtime_p90_s: float
    downtime_mean_s: float
    p_obtain: tuple[float, ...]


def fit_figures(
    counts: TraceCounts,
    prior: RatePrior,
    fallback: FittedFigures | None = None,
    as_prior: bool = False,
) -> FittedFigures:
    """Figures from pooled counts, shrunk towards ``prior``; where the counts say nothing (no event with
    several VMs, no downtime), ``fallback``'s figures are used.

    Args:
        as_prior: the figures of the prior itself: the rate is the prior's mean, its shape the prior's.
    """
    if as_prior:
        rate, shape_of_estimate = prior.mean_per_vm_hour, prior.shape
    else:
        shape_of_estimate = prior.shape + counts.vms_lost
        rate = shape_of_estimate / (prior.rate_vm_hours + counts.held_vm_hours)
    inv_time_shape = max(0.0, counts.dispersion_num / counts.dispersion_den) if counts.dispersion_den > 0 else 0.0
    rate_shape = 1.0 / (1.0 / shape_of_estimate + inv_time_shape)
    if counts.burst_room > 0:
        rho = counts.burst_extra / counts.burst_room
    else:
        rho = fallback.burst_rho if fallback is not None else 0.0
    if len(counts.downtimes_s) >= 2:
        logs = np.log(np.asarray(counts.downtimes_s))
        downtime = (
            float(logs.mean()),
            float(logs.std(ddof=1)),
            float(np.median(counts.downtimes_s)),
            float(np.quantile(counts.downtimes_s, 0.9)),
            float(np.mean(counts.downtimes_s)),
        )
    elif fallback is not None:
        downtime = (
            fallback.downtime_log_mu,
            fallback.downtime_log_sigma,
            fallback.downtime_median_s,
            fallback.downtime_p90_s,
            fallback.downtime_mean_s,
        )
    else:
        downtime = (math.log(1800.0), 1.0, 1800.0, 1800.0 * math.exp(1.2816), 1800.0 * math.exp(0.5))
    return FittedFigures(rate, rate_shape, rho, *downtime, _p_obtain(counts, fallback))


def _p_obtain(counts: TraceCounts, fallback: FittedFigures | None) -> tuple[float, ...]:
    """``P(at least j VMs)``, ``j = 1, 2, …``: the chance of one VM, times the chance of each further VM given
    the ones before, from the traces that held that many; further counts take the fallback's conditional
    chances (so a zone traced with one VM borrows what traces of several VMs say about the next ones)."""
    p, chances = 1.0, []
    for held, less in zip(counts.ticks_holding, counts.ticks_holding_less, strict=True):
        p *= held / less if less > 0 else 0.0
        chances.append(p)
    if fallback is not None:
        theirs = fallback.p_obtain
        for j in range(len(chances), len(theirs)):
            before = theirs[j - 1] if j > 0 else 1.0
            p *= theirs[j] / before if before > 0 else 0.0
            chances.append(p)
    return tuple(chances)
