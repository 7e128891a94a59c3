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


#: AS241's rational approximation for ``|p − 0.5| ≤ 0.425``, highest power first, as the standard library has it.
_CENTRAL_NUM = (
    2.50908_09287_30122_6727e3,
    3.34305_75583_58812_8105e4,
    6.72657_70927_00870_0853e4,
    4.59219_53931_54987_1457e4,
    1.37316_93765_50946_1125e4,
    1.97159_09503_06551_4427e3,
    1.33141_66789_17843_7745e2,
    3.38713_28727_96366_6080e0,
)
_CENTRAL_DEN = (
    5.22649_52788_52854_5610e3,
    2.87290_85735_72194_2674e4,
    3.93078_95800_09271_0610e4,
    2.12137_94301_58659_5867e4,
    5.39419_60214_24751_1077e3,
    6.87187_00749_20579_0830e2,
    4.23133_30701_60091_1252e1,
    1.0,
)


def normal_quantile(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``Φ⁻¹(p)`` of the standard normal, element-wise (``p`` kept inside (0, 1), as draws from ``[0, 1)``
    can touch 0). The standard library's (Wichura's AS241, accurate to about 1e-16) rather than
    ``scipy.special.ndtri``: importing scipy.special costs a cold ``srifty plan`` about 0.4 s.

    The central branch (``|p − 0.5| ≤ 0.425``, 85 % of uniform draws) is the same polynomial evaluated by
    numpy in the same order, so the same doubles; the tails (a logarithm) stay with the standard library."""
    tiny = np.finfo(np.float64).tiny
    inside = np.clip(np.asarray(p, dtype=np.float64), tiny, np.nextafter(1.0, 0.0))
    q = inside - 0.5
    central = np.abs(q) <= 0.425
    out = np.empty_like(inside)
    qc = q[central]
    r = 0.180625 - qc * qc
    num = np.full_like(r, _CENTRAL_NUM[0])
    den = np.full_like(r, _CENTRAL_DEN[0])
    for a, b in zip(_CENTRAL_NUM[1:], _CENTRAL_DEN[1:], strict=True):
        num = num * r + a
        den = den * r + b
    out[central] = 0.0 + (num * qc / den) * 1.0  # mu + x·sigma, as NormalDist() computes it
    tails = ~central
    if tails.any():
        out[tails] = np.asarray(_quantile(inside[tails]), dtype=np.float64)
    return out
