"""Smooth in message size: a regressor is asked only at knot sizes, and log-log interpolation fills between.

A tree ensemble is a step function of every feature, message size included: between two probed sizes it
answers with one neighbour's value or the other's, never in between, and gradient buckets come in every
size. Here the bandwidth model's booster is evaluated at the two knots around each queried size (knots are
the sizes it was trained on) and the answers are joined by a straight line in ``(log size, log busbw)``,
the shape bus bandwidth has between nearby sizes (``busbw ∝ size`` while latency-bound, flat once the
link is saturated).

Outside the knots: above the largest knot of the large-message side bus bandwidth stays flat
(saturated); elsewhere (below the smallest knot, or between the small side's largest knot and the MTU)
the nearest segment is extended with its slope clipped to ``[0, 1]``, between flat and latency-bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Matrix = npt.NDArray[np.float32]
#: At most this many knots per side; more distinct training sizes are thinned evenly in log size.
MAX_KNOTS = 64


def knot_sizes(sizes_bytes: npt.ArrayLike, max_knots: int = MAX_KNOTS) -> FloatArray:
    """The distinct sizes in ``sizes_bytes``, sorted; thinned to ``max_knots`` (ends kept) when there are more."""
    distinct = np.unique(np.asarray(sizes_bytes, dtype=np.float64))
    if distinct.size <= max_knots:
        return distinct
    targets = np.linspace(np.log(distinct[0]), np.log(distinct[-1]), max_knots)
    picked = np.unique(np.abs(np.log(distinct)[:, None] - targets[None, :]).argmin(axis=0))
    return distinct[picked]


def _brackets(log_size: FloatArray, log_knots: FloatArray) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Indices of the knots left and right of each size (the nearest segment outside the knots)."""
    n = log_knots.size
    if n == 1:
        zero = np.zeros(log_size.size, dtype=np.int64)
        return zero, zero
    right = np.clip(np.searchsorted(log_knots, log_size, side="left"), 1, n - 1)
    return right - 1, right


def smooth_predict(
    predict: Callable[[Matrix], FloatArray],
    x: Matrix,
    size_column: int,
    knot_sets: Sequence[FloatArray],
    row_set: npt.NDArray[np.int64],
    flat_above: bool,
) -> FloatArray:
    """``predict`` (log bus bandwidth, or a log fraction of a link) interpolated log-log between knots.

    Args:
        predict: the regressor, on a float32 feature matrix.
        x: the query rows; column ``size_column`` holds the message size in bytes.
        size_column: index of the size feature.
        knot_sets: sorted knot sizes (see :func:`knot_sizes`); each row uses one set.
        row_set: for each row, the index of its knot set.
        flat_above: hold the value of the largest knot above it (the large-message side).

    Returns:
        One value per row. Rows that fall on a knot get exactly the regressor's value there.
    """
    if not len(x):
        return np.zeros(0)
    log_size = np.log(x[:, size_column].astype(np.float64))
    size_left, size_right = np.empty_like(log_size), np.empty_like(log_size)
    largest = np.empty_like(log_size)
    for index in np.unique(row_set):
        rows = row_set == index
        knots = np.asarray(knot_sets[index], dtype=np.float64)
        left, right = _brackets(log_size[rows], np.log(knots))
        size_left[rows], size_right[rows], largest[rows] = knots[left], knots[right], knots[-1]
    probe = np.concatenate([x, x])
    probe[: len(x), size_column] = size_left
    probe[len(x) :, size_column] = size_right
    log_left, log_right, last = np.log(size_left), np.log(size_right), np.log(largest)
    # Many rows share every feature but the size (one configuration, many buckets): ask once per row.
    unique, inverse = np.unique(probe, axis=0, return_inverse=True)
    values = np.asarray(predict(unique), dtype=np.float64)[inverse.reshape(-1)]
    y_left, y_right = values[: len(x)], values[len(x) :]
    span = log_right - log_left
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(span > 0, (y_right - y_left) / span, 0.0)
    outside = (log_size < log_left) | (log_size > log_right)
    slope = np.where(outside, np.clip(slope, 0.0, 1.0), slope)
    if flat_above:
        slope = np.where(log_size > last, 0.0, slope)
    anchor_right = log_size > log_right
    base = np.where(anchor_right, y_right, y_left)
    base_log = np.where(anchor_right, log_right, log_left)
    return base + slope * (log_size - base_log)
