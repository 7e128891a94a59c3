"""The straggler process of the emulated cloud's GPUs, fitted on 400 consecutive H200 iterations (EMULATED).

The H200's ResNet-50 run at batch 64 (``h200_long_run``) is tight most of the time (σ ≈ 0.4%) and now and then
slow by 2-23%, in bursts: an iteration over +2% is followed by another 55% of the time, against 21% overall. So
the process has two states: **normal** (relative time ``1 + N(0, σ)``) and **slow** (``1 + θ + excess``), entered
with probability ``p`` per iteration and kept with probability ``q``. The excess over the threshold ``θ``
follows a generalised Pareto law, fitted by maximum likelihood (``scipy.stats.genpareto``): its shape ``ξ``
says whether the tail is heavy (``ξ > 0``) or bounded (``ξ < 0``). Every GPU of the emulated cloud runs its own
copy of the process, so with many GPUs some are slow in most iterations, as a synchronous job feels it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

FloatArray = NDArray[np.float64]
#: A long-run iteration slower than the median by more than this is in the slow state.
SLOW_THRESHOLD = 0.02


@dataclass(frozen=True)
class StragglerFit:
    """The two-state straggler process (relative iteration time ``r``; 1 is the median).

    Attributes:
        jitter_sigma: standard deviation of ``r`` in the normal state.
        p_enter: probability of entering the slow state from the normal one, per iteration.
        p_stay: probability of staying slow.
        threshold: a slow iteration takes ``1 + threshold + excess``.
        excess_shape, excess_scale: generalised Pareto ``(ξ, σ)`` of the excess (``ξ > 0``: heavy tail).
        measured_quantiles, simulated_quantiles: ``r`` at the 50/90/99th percentiles and the maximum, measured
            and from 20,000 simulated iterations of the fitted process.
    """

    jitter_sigma: float
    p_enter: float
    p_stay: float
    threshold: float
    excess_shape: float
    excess_scale: float
    measured_quantiles: tuple[float, ...] = ()
    simulated_quantiles: tuple[float, ...] = ()


#: No stragglers at all (for counterfactuals: what the truth would be without them).
NO_STRAGGLERS = StragglerFit(
    jitter_sigma=0.0, p_enter=0.0, p_stay=0.0, threshold=0.0, excess_shape=0.0, excess_scale=0.0
)


def stationary_slow(fit: StragglerFit) -> float:
    """Long-run share of slow iterations: ``p / (1 − q + p)``."""
    denominator = 1.0 - fit.p_stay + fit.p_enter
    return fit.p_enter / denominator if denominator > 0 else 0.0


def straggler_factors(fit: StragglerFit, rng: np.random.Generator, ranks: int, iters: int) -> FloatArray:
    """Relative speed of ``ranks`` GPUs over ``iters`` consecutive iterations (shape ``(iters, ranks)``),
    each starting in the process's stationary state."""
    u = rng.random((iters, ranks))
    slow = rng.random(ranks) < stationary_slow(fit)
    states = np.empty((iters, ranks), dtype=bool)
    for t in range(iters):
        slow = np.where(slow, u[t] < fit.p_stay, u[t] < fit.p_enter)
        states[t] = slow
    normal = 1.0 + fit.jitter_sigma * rng.standard_normal((iters, ranks))
    excess = genpareto_draws(rng, fit.excess_shape, fit.excess_scale, (iters, ranks))
    return np.where(states, 1.0 + fit.threshold + excess, np.maximum(normal, 0.5))


def genpareto_draws(rng: np.random.Generator, shape: float, scale: float, size: tuple[int, ...]) -> FloatArray:
    """Generalised Pareto draws by inversion (``ξ = 0``: exponential)."""
    u = rng.random(size)
    if abs(shape) < 1e-9:
        return -scale * np.log1p(-u)
    return scale * ((1.0 - u) ** (-shape) - 1.0) / shape


def fit_stragglers(iter_ms: FloatArray, threshold: float = SLOW_THRESHOLD) -> StragglerFit:
    """Fit the process to consecutive iteration times (see the module docstring)."""
    r = np.asarray(iter_ms, dtype=float) / float(np.median(iter_ms))
    slow = r > 1.0 + threshold
    normal_next = slow[1:][~slow[:-1]]
    slow_next = slow[1:][slow[:-1]]
    p_enter = float(normal_next.mean()) if normal_next.size else 0.0
    p_stay = float(slow_next.mean()) if slow_next.size else 0.0
    jitter = float(np.std(r[~slow] - 1.0))
    shape, _, scale = stats.genpareto.fit(r[slow] - 1.0 - threshold, floc=0.0)
    fit = StragglerFit(jitter, p_enter, p_stay, threshold, float(shape), float(scale))
    simulated = straggler_factors(fit, np.random.default_rng(0), 1, 20_000)[:, 0]
    q = (50, 90, 99)
    return StragglerFit(
        jitter,
        p_enter,
        p_stay,
        threshold,
        float(shape),
        float(scale),
        measured_quantiles=(*(float(np.percentile(r, x)) for x in q), float(r.max())),
        simulated_quantiles=(*(float(np.percentile(simulated, x)) for x in q), float(simulated.max())),
    )
