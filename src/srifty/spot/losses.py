"""What spot losses do to a job: how many, what each costs, the checkpoint interval, as closed forms.

A configuration runs ``n_g`` spot VMs of each spot group ``g`` in one zone. Its loss *events* (any loss
stops a data-parallel job, and several VMs of a zone often go in one event) arrive at
``Λ = Σ_g λ_g n_g / (1 + ρ_g (n_g − 1))`` per second of running (:meth:`SpotFigures.events_per_hour`),
the rate itself varying (gamma, shape ``k``: the estimate's uncertainty and bursts over time), so the number
of events in a run of ``t`` seconds is negative binomial with mean ``m = Λ t`` and variance ``m + m²/k``.

Each event costs the job (seconds on its critical path):

* without an on-demand core: ``launch + restore + U·τ + D``: new VMs, the checkpoint restored, the work
  since the last checkpoint (``U`` uniform on [0, 1], ``τ`` the checkpoint interval) and the wait ``D`` until
  capacity returns (log-normal, from the traces);
* with an on-demand core that can hold the global batch on its own: ``2·restore + U·τ + (1 − s)·D``: the
  core restarts at once (one restore), trains at ``s`` (its share of the throughput) while capacity is away,
  and a second restore takes the spot VMs back (their launch overlaps the core's training).

At the start, all ``n`` spot VMs are there at once with the traces' chance ``p(n)``; otherwise the job
waits ``D`` first. Checkpoints are taken every ``τ = √(2·C·M) − C`` seconds of running (Daly's first-order
optimum, ``C`` the checkpoint cost, ``M = 1/Λ`` the job's mean time between events), each pausing training for
``C``. The delay these add is summarised by its mean and variance (compound negative binomial) and, for
tail probabilities, by weighted outcomes: none at all with the chance of no event, else a log-normal with
the moments left, read at equally spaced quantiles (:func:`delay_nodes`). Units: seconds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from srifty.spot.model import SpotFigures

#: Quantile nodes a delay distribution is read at (midpoints of equal slices).
N_NODES = 16


@dataclass(frozen=True)
class LossProcess:
    """The loss events of one configuration's spot VMs (see the module docstring).

    Attributes:
        events_per_s: expected loss events per second of running.
        shape: gamma shape of that rate (variance of the rate ``= mean² / shape``).
        vms_lost_per_s: expected VMs lost per second of running.
        downtime_mean_s, downtime_var_s2: moments of the time until capacity returns after an event.
        p_obtain_all: chance that every spot VM can be had at the start.
        sources: per spot group, ``(instance type, where its figures come from)``.
    """

    events_per_s: float
    shape: float
    vms_lost_per_s: float
    downtime_mean_s: float
    downtime_var_s2: float
    p_obtain_all: float
    sources: tuple[tuple[str, str], ...]


def loss_process(groups: Sequence[tuple[SpotFigures, int]]) -> LossProcess:
    """The loss process of spot groups ``(figures, VMs)`` running together; their events add, their downtimes
    mix in proportion to their event rates."""
    rates = [f.events_per_hour(n) / 3600.0 for f, n in groups]
    total = sum(rates)
    variance = sum(r * r / max(f.figures.rate_shape, 1e-9) for r, (f, _) in zip(rates, groups, strict=True))
    shape = total * total / variance if variance > 0 else math.inf
    vms = sum(r * f.vms_per_event(n) for r, (f, n) in zip(rates, groups, strict=True))
    weights = [r / total for r in rates] if total > 0 else [1.0 / len(groups)] * len(groups)
    first = second = 0.0
    for w, (f, _) in zip(weights, groups, strict=True):
        mu, sigma = f.figures.downtime_log_mu, f.figures.downtime_log_sigma
        first += w * math.exp(mu + sigma**2 / 2)
        second += w * math.exp(2 * mu + 2 * sigma**2)
    p_all = math.prod(f.p_obtain(n) for f, n in groups)
    sources = tuple((f.instance_type, f.source) for f, _ in groups)
    return LossProcess(total, shape, vms, first, max(second - first * first, 0.0), p_all, sources)


def checkpoint_interval_s(checkpoint_s: float, events_per_s: float, iteration_s: float) -> float:
    """Daly's first-order optimum ``√(2·C·M) − C`` (``M = 1/Λ``; ``M`` itself when ``C ≥ M/2``), rounded to
    whole iterations (at least one). Without losses, infinity (no checkpoint is needed for them)."""
    if events_per_s <= 0:
        return math.inf
    mtbf = 1.0 / events_per_s
    cost = max(checkpoint_s, 0.0)
    interval = math.sqrt(2.0 * cost * mtbf) - cost if cost < mtbf / 2 else mtbf
    return max(1, round(interval / iteration_s)) * iteration_s if iteration_s > 0 else interval


@dataclass(frozen=True)
class Delay:
    """What spot losses add to a run: mean and variance of the delay (s), the checkpoints' share of it,
    expected events and VMs lost, the checkpoint interval, and the expected time spent waiting for capacity
    with no spot VM held (``idle_s``: the start wait, and each event's wait without an on-demand core)."""

    mean_s: float
    var_s2: float
    checkpoints_s: float
    events: float
    vms_lost: float
    interval_s: float
    idle_s: float = 0.0


def spot_delay(
    process: LossProcess,
    run_s: float,
    iteration_s: float,
    launch_s: float,
    restore_s: float,
    core_share: float = 0.0,
) -> Delay:
    """The delay spot losses add to a run of ``run_s`` seconds (see the module docstring).

    Args:
        core_share: the share of throughput an on-demand core keeps while spot capacity is away (0: no core
            that can hold the global batch alone).
    """
    checkpoint_s = max(restore_s, 1.0)
    interval = checkpoint_interval_s(checkpoint_s, process.events_per_s, iteration_s)
    checkpoints = run_s * checkpoint_s / interval if math.isfinite(interval) else 0.0
    running = run_s + checkpoints
    m = process.events_per_s * running
    lost_work = interval if math.isfinite(interval) else 0.0
    if core_share > 0:
        fixed, wait = 2.0 * restore_s, 1.0 - core_share
    else:
        fixed, wait = launch_s + restore_s, 1.0
    event_mean = fixed + lost_work / 2 + wait * process.downtime_mean_s
    event_var = lost_work**2 / 12 + wait**2 * process.downtime_var_s2
    count_var = m + (m * m / process.shape if math.isfinite(process.shape) else 0.0)
    miss = 1.0 - process.p_obtain_all
    start_mean = miss * process.downtime_mean_s
    start_var = miss * (process.downtime_var_s2 + process.downtime_mean_s**2) - start_mean**2
    mean = checkpoints + start_mean + m * event_mean
    var = max(start_var, 0.0) + m * event_var + event_mean**2 * count_var
    idle = start_mean + (m * process.downtime_mean_s if core_share <= 0 else 0.0)
    return Delay(mean, var, checkpoints, m, process.vms_lost_per_s * running, interval, idle)


def delay_nodes(
    delay: Delay, process: LossProcess, n: int = N_NODES
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The delay as weighted outcomes ``(values, weights)``: the checkpoints (certain) plus a random part
    that is 0 when there is no event and every spot VM is there at the start (probability ``P₀ = p(n) ·
    P(K = 0)``, negative binomial), and otherwise log-normal with the moments that remain, read at ``n``
    equally spaced quantiles (each of weight ``(1 − P₀)/n``)."""
    random_mean = delay.mean_s - delay.checkpoints_s
    if random_mean <= 0 or delay.var_s2 <= 0:
        return np.array([delay.mean_s]), np.array([1.0])
    m, k = delay.events, process.shape
    p_no_event = math.exp(-m) if not math.isfinite(k) else (1.0 + m / k) ** (-k)
    p_zero = min(process.p_obtain_all * p_no_event, 1.0 - 1e-9)
    mean = random_mean / (1.0 - p_zero)
    second = (delay.var_s2 + random_mean**2) / (1.0 - p_zero)
    sigma2 = math.log(max(second / (mean * mean), 1.0))
    values = np.exp(math.log(mean) - sigma2 / 2 + math.sqrt(sigma2) * _normal_levels(n))
    weights = np.full(n + 1, (1.0 - p_zero) / n)
    weights[0] = p_zero
    return delay.checkpoints_s + np.concatenate(([0.0], values)), weights


@functools.lru_cache(maxsize=4)
def _normal_levels(n: int) -> NDArray[np.float64]:
    return np.array([NormalDist().inv_cdf((i + 0.5) / n) for i in range(n)])
