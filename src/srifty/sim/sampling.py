"""Pieces of per-iteration sampling that the DDP simulator and the FSDP timeline share."""

from __future__ import annotations

import math

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

    Both branches are its polynomials evaluated by numpy in the same order, so the same doubles (the central
    one, ``|p − 0.5| ≤ 0.425``, 85 % of uniform draws; the tails, most draws of a maximum over many ranks,
    with :func:`_tail_quantile`)."""
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
        out[tails] = _tail_quantile(inside[tails])
    return out


#: AS241's tail approximations (``r = sqrt(−log(min(p, 1 − p)))``; ``r ≤ 5`` about 1.6, beyond about 5), highest
#: power first, as the standard library has them.
_TAIL_NEAR = (
    (
        7.74545014278341407640e-4,
        2.27238449892691845833e-2,
        2.41780725177450611770e-1,
        1.27045825245236838258e0,
        3.64784832476320460504e0,
        5.76949722146069140550e0,
        4.63033784615654529590e0,
        1.42343711074968357734e0,
    ),
    (
        1.05075007164441684324e-9,
        5.47593808499534494600e-4,
        1.51986665636164571966e-2,
        1.48103976427480074590e-1,
        6.89767334985100004550e-1,
        1.67638483018380384940e0,
        2.05319162663775882187e0,
        1.0,
    ),
)
_TAIL_FAR = (
    (
        2.01033439929228813265e-7,
        2.71155556874348757815e-5,
        1.24266094738807843860e-3,
        2.65321895265761230930e-2,
        2.96560571828504891230e-1,
        1.78482653991729133580e0,
        5.46378491116411436990e0,
        6.65790464350110377720e0,
    ),
    (
        2.04426310338993978564e-15,
        1.42151175831644588870e-7,
        1.84631831751005468180e-5,
        7.86869131145613259100e-4,
        1.48753612908506148525e-2,
        1.36929880922735805310e-1,
        5.99832206555887937690e-1,
        1.0,
    ),
)


def _tail_quantile(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """AS241's tails as the standard library evaluates them, in numpy. The logarithm is ``math.log`` (the C
    library's, as the standard library's C code calls it; numpy's may differ in the last bit), the rest the
    same operations in the same order: the same doubles, without a Python call per element."""
    q = p - 0.5
    smaller = np.where(q <= 0.0, p, 1.0 - p)
    logs = np.fromiter(map(math.log, smaller.tolist()), dtype=np.float64, count=smaller.size)
    r = np.sqrt(-logs)
    x = np.empty_like(r)
    near = r <= 5.0
    for part, shift, (num_coef, den_coef) in ((near, 1.6, _TAIL_NEAR), (~near, 5.0, _TAIL_FAR)):
        shifted = r[part] - shift
        num = np.full_like(shifted, num_coef[0])
        den = np.full_like(shifted, den_coef[0])
        for a, b in zip(num_coef[1:], den_coef[1:], strict=True):
            num = num * shifted + a
            den = den * shifted + b
        x[part] = num / den
    return 0.0 + (np.where(q < 0.0, -x, x) * 1.0)  # mu + x·sigma, as NormalDist() computes it
