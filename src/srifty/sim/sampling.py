"""Pieces of per-iteration sampling that the DDP simulator and the FSDP timeline share."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from srifty.sim.netquery import SPREAD_LEVELS

#: Midpoints of 1,000 equal slices of (0, 1): the expectation of a function of a draw from the quantiles.
EXPECTATION_LEVELS = (np.arange(1000) + 0.5) / 1000


def log_time_factors(spread: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    """Quantiles (at :data:`SPREAD_LEVELS`) of the log of the factor on communication time, from those of
    the log-busbw residual ``e`` (time goes as ``exp(−scale·e)``), shifted so that the factor's mean over
    the distribution is 1: the mean communication time stays the model's prediction."""
    log_time = -scale * np.asarray(spread, dtype=np.float64)
    mean = float(np.mean(np.exp(np.interp(EXPECTATION_LEVELS, SPREAD_LEVELS, log_time))))
    return log_time - np.log(mean)


def curve_at(
    t_bwd: NDArray[np.float64], grid: NDArray[np.float64], pe_grid: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``t_pe`` at backward times ``t_bwd``: the cached curve, extended linearly past its last point."""
    return np.interp(t_bwd, grid, pe_grid) + np.where(
        t_bwd > grid[-1], (t_bwd - grid[-1]) * end_slope(grid, pe_grid), 0.0
    )


def end_slope(grid: NDArray[np.float64], values: NDArray[np.float64]) -> float:
    span = grid[-1] - grid[-2]
    return float((values[-1] - values[-2]) / span) if span > 0 else 0.0


_STANDARD_NORMAL = NormalDist()
_quantile = np.frompyfunc(_STANDARD_NORMAL.inv_cdf, 1, 1)


def normal_quantile(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``Φ⁻¹(p)`` of the standard normal, element-wise (``p`` kept inside (0, 1), as draws from ``[0, 1)``
    can touch 0). The standard library's (Wichura's AS241, accurate to about 1e-16) rather than
    ``scipy.special.ndtri``: importing scipy.special costs a cold ``srifty plan`` about 0.4 s."""
    tiny = np.finfo(np.float64).tiny
    inside = np.clip(p, tiny, np.nextafter(1.0, 0.0))
    return np.asarray(_quantile(inside), dtype=np.float64)
