"""Piecewise-linear latency-vs-batch models and the adaptive probe placement that fits them.

The paper (section "Latency Model") observes that latency t(B) at batch B is linear, ``t = αB + β``, but
with different slopes at small and large batches: a GPU is latency-bound below some *knee* batch and
throughput-bound above it. :class:`LatencyModel` is a continuous, non-decreasing piecewise-linear
function of the batch, stored as its vertices. :func:`fit_latency_curve` chooses at most ``n_probes``
batch sizes to measure so as to locate the knee, then fits the model.

On a GPU (``flat_floor``) the probes are spread evenly in log batch and each phase is fitted with a smooth
maximum of a latency-bound floor and a throughput-bound line (:func:`fit_floor_line`); this rule was chosen
among 36 (six placements by six segment models) by leave-one-model-out cross-validation on the real H200
curves (``benchmarks/compute_accuracy.py``), where it was chosen with every model held out. On a CPU the
adaptive placement and the piecewise-linear model through the probes stay (the same cross-validation
chose no single better rule there).

Pure numpy (and scipy's least squares); no torch. Latencies are in milliseconds, batches in samples per
device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.errors import ProfileError

# A probe whose latency is within this fraction of the throughput-bound line is "on the line".
LINEAR_TOLERANCE = 0.05
# With a floor expected (a GPU), the smallest probe is on it when it lies above the next line by this fraction.
FLOOR_TOLERANCE = 0.0
#: The smooth maximum's exponent in :func:`fit_floor_line` (chosen by the cross-validation, from 2 and 4).
FLOOR_LINE_Q = 4.0
#: Where a GPU's probes go, as fractions of the log batch range (chosen by the cross-validation).
GPU_PROBE_FRACTIONS = (0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0)
#: Vertices a smooth curve is stored with (log-spaced between its smallest and largest probe).
CURVE_VERTICES = 96


@dataclass(frozen=True)
class LatencyModel:
    """A continuous, non-decreasing piecewise-linear model of latency (ms) against batch size.

    Attributes:
        vertices_batch: x-coordinates of the vertices, strictly increasing.
        vertices_ms: latency at each vertex (non-decreasing).
        knee_batch: where the curve turns from latency-bound to throughput-bound, if one was found.
        probe_batches: the batch sizes that were measured.
        probe_ms: what was measured there (before the monotone correction).

    Between vertices the model interpolates linearly; beyond the ends it extends the end segments'
    lines (never below 0 and never decreasing).
    """

    vertices_batch: tuple[float, ...]
    vertices_ms: tuple[float, ...]
    knee_batch: float | None
    probe_batches: tuple[int, ...]
    probe_ms: tuple[float, ...]

    def __post_init__(self) -> None:
        xs = np.asarray(self.vertices_batch, dtype=float)
        if len(xs) == 0 or len(xs) != len(self.vertices_ms):
            raise ProfileError("a latency model needs at least one vertex and one latency per vertex")
        if np.any(np.diff(xs) <= 0):
            raise ProfileError("latency model vertices must have strictly increasing batch sizes")

    def predict_ms(self, batch_sizes: ArrayLike) -> NDArray[np.float64]:
        """Predicted latency in ms at each batch size (vectorised)."""
        b = np.asarray(batch_sizes, dtype=float)
        xs = np.asarray(self.vertices_batch, dtype=float)
        ys = np.asarray(self.vertices_ms, dtype=float)
        if len(xs) == 1:
            # One probe: latency proportional to the batch, the most conservative guess.
            return np.maximum(ys[0] * b / xs[0], 0.0)
        out = np.interp(b, xs, ys)
        lo_slope = (ys[1] - ys[0]) / (xs[1] - xs[0])
        hi_slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        out = np.where(b < xs[0], ys[0] + lo_slope * (b - xs[0]), out)
        out = np.where(b > xs[-1], ys[-1] + hi_slope * (b - xs[-1]), out)
        return np.maximum(out, 0.0)

    def segments(self) -> list[tuple[float, float, float, float]]:
        """``(batch_from, batch_to, alpha_ms_per_sample, beta_ms)`` for each segment, ``t = αB + β``."""
        xs, ys = self.vertices_batch, self.vertices_ms
        out = []
        for x0, x1, y0, y1 in zip(xs[:-1], xs[1:], ys[:-1], ys[1:], strict=True):
            alpha = (y1 - y0) / (x1 - x0)
            out.append((x0, x1, alpha, y0 - alpha * x0))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "vertices_batch": list(self.vertices_batch),
            "vertices_ms": list(self.vertices_ms),
            "knee_batch": self.knee_batch,
            "probe_batches": list(self.probe_batches),
            "probe_ms": list(self.probe_ms),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyModel:
        """Inverse of :meth:`to_dict`."""
        return cls(
            vertices_batch=tuple(float(x) for x in data["vertices_batch"]),
            vertices_ms=tuple(float(y) for y in data["vertices_ms"]),
            knee_batch=None if data.get("knee_batch") is None else float(data["knee_batch"]),
            probe_batches=tuple(int(b) for b in data.get("probe_batches", ())),
            probe_ms=tuple(float(t) for t in data.get("probe_ms", ())),
        )

    def scaled(self, factor: float) -> LatencyModel:
        """The same curve with every latency multiplied by ``factor``."""
        return LatencyModel(
            vertices_batch=self.vertices_batch,
            vertices_ms=tuple(y * factor for y in self.vertices_ms),
            knee_batch=self.knee_batch,
            probe_batches=self.probe_batches,
            probe_ms=tuple(y * factor for y in self.probe_ms),
        )


def _isotonic(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Pool-adjacent-violators: the closest non-decreasing sequence in least squares."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    return np.concatenate([np.full(int(c), s / c) for s, c in blocks])


def _line(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float]:
    slope = (y1 - y0) / (x1 - x0)
    return slope, y0 - slope * x0


def fit_piecewise_linear(
    batches: Sequence[float], latencies_ms: Sequence[float], flat_floor: bool = False
) -> LatencyModel:
    """Fit a continuous, non-decreasing piecewise-linear model through measured points.

    The vertices are the measured points (after a monotone correction for noise). Where the lines of the
    two neighbouring segments meet strictly inside an interval, that meeting point is the knee: the
    interval is split there, so a latency-bound segment and a throughput-bound segment are each exact on
    their own probes. Only the interval with the largest slope increase gets a knee. With ``flat_floor`` (a
    GPU's curve) the smallest probe may be a latency-bound floor, flat up to the knee (see ``_find_knee``).

    Raises:
        ProfileError: no points, or batch sizes that are not positive and distinct.
    """
    xs = np.asarray(batches, dtype=float)
    ys_raw = np.asarray(latencies_ms, dtype=float)
    if len(xs) == 0 or len(xs) != len(ys_raw):
        raise ProfileError("fit_piecewise_linear needs one latency per batch size, and at least one point")
    if np.any(xs <= 0) or len(np.unique(xs)) != len(xs):
        raise ProfileError(f"batch sizes must be positive and distinct, got {sorted(xs.tolist())}")
    if np.any(~np.isfinite(ys_raw)) or np.any(ys_raw < 0):
        raise ProfileError(f"latencies must be finite and non-negative, got {ys_raw.tolist()}")
    order = np.argsort(xs)
    xs, ys_raw = xs[order], ys_raw[order]
    ys = _isotonic(ys_raw)
    vx, vy = list(xs), list(ys)
    knee = _find_knee(xs, ys, flat_floor)
    if knee is not None:
        index, kx, ky = knee
        vx.insert(index + 1, kx)
        vy.insert(index + 1, ky)
    knee_batch = knee[1] if knee is not None else _sharpest_bend(xs, ys)
    return LatencyModel(
        vertices_batch=tuple(float(x) for x in vx),
        vertices_ms=tuple(float(y) for y in vy),
        knee_batch=knee_batch,
        probe_batches=tuple(round(x) for x in xs),
        probe_ms=tuple(float(y) for y in ys_raw),
    )


def _find_knee(
    xs: NDArray[np.float64], ys: NDArray[np.float64], flat_floor: bool = False
) -> tuple[int, float, float] | None:
    """``(interval index, knee batch, knee latency)`` where neighbouring lines meet inside an interval.

    The first interval has no probe on its left. With ``flat_floor`` (a GPU, whose small batches sit on a
    latency-bound floor) its left line is flat at the smallest probe, if that probe lies above the right
    line (by :data:`FLOOR_TOLERANCE`), so a probe just past the knee still recovers it; without (a CPU, whose
    curve rises from the smallest batch on) the first interval keeps its chord.
    """
    best: tuple[float, int, float, float] | None = None
    for i in range(0 if flat_floor else 1, len(xs) - 2):
        left = (0.0, float(ys[0])) if i == 0 else _line(xs[i - 1], ys[i - 1], xs[i], ys[i])
        right = _line(xs[i + 1], ys[i + 1], xs[i + 2], ys[i + 2])
        bend = right[0] - left[0]
        on_floor = ys[0] > (right[0] * xs[0] + right[1]) * (1.0 + FLOOR_TOLERANCE)
        if bend <= 0 or (i == 0 and not on_floor):
            continue
        kx = (left[1] - right[1]) / bend
        ky = left[0] * kx + left[1]
        inside = xs[i] < kx < xs[i + 1] and ys[i] - 1e-12 <= ky <= ys[i + 1] + 1e-12
        if inside and (best is None or bend > best[0]):
            best = (bend, i, float(kx), float(ky))
    return None if best is None else (best[1], best[2], best[3])


def _sharpest_bend(xs: NDArray[np.float64], ys: NDArray[np.float64]) -> float | None:
    """The probe where the slope grows the most (relative), if it grows by more than the tolerance."""
    if len(xs) < 3:
        return None
    slopes = np.diff(ys) / np.diff(xs)
    growth = (slopes[1:] - slopes[:-1]) / np.maximum(np.abs(slopes[1:]), 1e-12)
    i = int(np.argmax(growth))
    return float(xs[i + 1]) if growth[i] > LINEAR_TOLERANCE else None


def default_candidates(max_batch: int) -> list[int]:
    """Powers of two from 1 up to ``max_batch``."""
    if max_batch < 1:
        raise ProfileError(f"max_batch must be at least 1, got {max_batch}")
    return [2**k for k in range(int(math.log2(max_batch)) + 1)]


def fit_latency_curve(
    measure: Callable[[int], float],
    max_batch: int,
    n_probes: int = 4,
    candidates: Sequence[int] | None = None,
    flat_floor: bool = False,
    smooth: bool | None = None,
) -> LatencyModel:
    """Measure at most ``n_probes`` batch sizes, chosen to locate the knee, and fit a :class:`LatencyModel`.

    Placement on a GPU (``flat_floor``, unless ``smooth`` is false): spread evenly in log batch
    (:func:`spread_probes`), fitted with :func:`fit_floor_line`. Otherwise (a CPU, or the GPU rule before
    issue 27 with ``smooth=False``): the two largest candidates pin the throughput-bound line; the smallest
    shows whether small batches sit on that line. If they do not, the next probe goes to the candidate
    nearest (in log batch) to where a flat latency-bound segment would meet the line: on a GPU curve that is
    where the gradual bend departs most from both, so measuring it bounds the error on either side. Further
    probes bisect the interval where neighbouring segments disagree most.

    Args:
        measure: ``measure(batch) -> latency_ms``; called at most ``n_probes`` times, never twice for one
            batch.
        max_batch: the largest batch that fits.
        n_probes: how many batch sizes to measure (the paper uses 4).
        candidates: batch sizes that may be probed; defaults to the powers of two up to ``max_batch``.
        flat_floor: the device has a latency-bound floor at small batches (a GPU); see
            :func:`fit_piecewise_linear`.
        smooth: on a GPU, the spread placement and :func:`fit_floor_line` (default: ``flat_floor``).

    Raises:
        ProfileError: fewer than 2 probes, or no valid candidate.
    """
    if n_probes < 2:
        raise ProfileError(f"n_probes must be at least 2 to fit a slope, got {n_probes}")
    cands = sorted({int(c) for c in (candidates if candidates is not None else default_candidates(max_batch))})
    cands = [c for c in cands if 1 <= c <= max_batch]
    if not cands:
        raise ProfileError(f"no candidate batch size between 1 and max_batch={max_batch}")
    measured: dict[int, float] = {}

    def probe(batch: int) -> None:
        if batch not in measured and len(measured) < n_probes:
            measured[batch] = float(measure(batch))

    if len(cands) <= n_probes:
        for c in cands:
            probe(c)
        return fit_phase_model(list(measured), list(measured.values()), flat_floor and smooth is not False)
    if flat_floor and smooth is not False:
        for c in spread_probes(cands, n_probes):
            probe(c)
        return fit_floor_line(list(measured), list(measured.values()))

    probe(cands[-1])
    probe(cands[-2])
    probe(cands[0])
    if len(measured) < n_probes:
        probe(_knee_probe(cands, measured))
    while len(measured) < n_probes:
        nxt = _bisect_probe(cands, measured)
        if nxt is None:
            break
        probe(nxt)
    return fit_piecewise_linear(list(measured), list(measured.values()), flat_floor)


def spread_probes(cands: Sequence[int], n_probes: int) -> list[int]:
    """``n_probes`` candidates spread evenly in log batch, smallest and largest included (a GPU's placement;
    with 4 probes at :data:`GPU_PROBE_FRACTIONS`); fewer where candidates coincide."""
    ordered = sorted(cands)
    lo, hi = math.log(ordered[0]), math.log(ordered[-1])
    fractions = GPU_PROBE_FRACTIONS if n_probes == 4 else [k / (n_probes - 1) for k in range(n_probes)]
    chosen = [min(ordered, key=lambda c: (abs(math.log(c) - (lo + f * (hi - lo))), c)) for f in fractions]
    return sorted(set(chosen))


def fit_phase_model(batches: Sequence[float], latencies_ms: Sequence[float], flat_floor: bool) -> LatencyModel:
    """A phase's model through measured points: :func:`fit_floor_line` on a GPU (``flat_floor``) where there are
    at least 3 points, else :func:`fit_piecewise_linear`."""
    if flat_floor and len(batches) >= 3:
        return fit_floor_line(batches, latencies_ms)
    return fit_piecewise_linear(batches, latencies_ms, flat_floor)


def fit_floor_line(batches: Sequence[float], latencies_ms: Sequence[float]) -> LatencyModel:
    """A GPU curve: ``t(B) = (c^q + (a + s·B)^q)^(1/q)``, a smooth maximum of a latency-bound floor ``c`` and a
    throughput-bound line, fitted by least squares on relative error (``c, a, s > 0``, ``q`` =
    :data:`FLOOR_LINE_Q`). Stored as a :class:`LatencyModel` with :data:`CURVE_VERTICES` vertices between the
    smallest and the largest point (beyond them the end segments extend, as for every model); the knee is
    where the line reaches the floor.

    Raises:
        ProfileError: fewer than 3 points, or batch sizes or latencies that are not positive.
    """
    from scipy.optimize import least_squares

    xs = np.asarray(batches, dtype=float)
    ys = np.asarray(latencies_ms, dtype=float)
    if len(xs) < 3 or len(xs) != len(ys):
        raise ProfileError("a floor-and-line fit needs at least 3 points, one latency per batch size")
    if np.any(xs <= 0) or np.any(~np.isfinite(ys)) or np.any(ys <= 0) or len(np.unique(xs)) != len(xs):
        raise ProfileError(f"batch sizes and latencies must be positive and batches distinct: {xs}, {ys}")
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    q = FLOOR_LINE_Q

    def curve(p: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        floor, intercept, slope = np.exp(p)
        line = intercept + slope * b
        top = np.maximum(floor, line)
        return top * ((floor / top) ** q + (line / top) ** q) ** (1.0 / q)

    slope0 = max((ys[-1] - ys[-2]) / (xs[-1] - xs[-2]), 1e-9 * ys[-1])
    start = np.log([ys[0], max(ys[-1] - slope0 * xs[-1], 1e-3 * ys[0]), slope0])
    fitted = least_squares(lambda p: curve(p, xs) / ys - 1.0, start).x
    grid = np.unique(np.concatenate([np.geomspace(xs[0], xs[-1], CURVE_VERTICES), xs]))
    values = np.maximum.accumulate(curve(fitted, grid))
    floor, intercept, slope = np.exp(fitted)
    knee = (floor - intercept) / slope if floor > intercept else None
    return LatencyModel(
        vertices_batch=tuple(float(x) for x in grid),
        vertices_ms=tuple(float(y) for y in values),
        knee_batch=None if knee is None or not xs[0] < knee < xs[-1] else float(knee),
        probe_batches=tuple(round(x) for x in xs),
        probe_ms=tuple(float(y) for y in ys),
    )


def _knee_probe(cands: list[int], measured: dict[int, float]) -> int:
    """Where to probe fourth: nearest the estimated knee (log scale), or mid-range if small batches are on the
    line."""
    hi, hi2, lo = cands[-1], cands[-2], cands[0]
    slope, intercept = _line(hi2, measured[hi2], hi, measured[hi])
    on_line = slope * lo + intercept
    inner = cands[1:-2]
    if not inner:
        return cands[len(cands) // 2]
    if measured[lo] <= on_line or slope <= 0:
        # Small batches are on (or below) the throughput line: no knee to find, check the middle.
        return inner[len(inner) // 2]
    knee_estimate = max((measured[lo] - intercept) / slope, 1.0)
    return min(inner, key=lambda c: (abs(math.log(c / knee_estimate)), c))


def _bisect_probe(cands: list[int], measured: dict[int, float]) -> int | None:
    """The middle candidate of the interval where neighbouring segments disagree most."""
    xs = sorted(measured)
    best: tuple[float, int, int] | None = None  # (score, width, candidate)
    for i in range(len(xs) - 1):
        a, b = xs[i], xs[i + 1]
        inside = [c for c in cands if a < c < b and c not in measured]
        if not inside:
            continue
        mid = inside[len(inside) // 2]
        chord = measured[a] + (measured[b] - measured[a]) * (mid - a) / (b - a)
        score = 0.0
        if i >= 1:
            s, c0 = _line(xs[i - 1], measured[xs[i - 1]], a, measured[a])
            score = max(score, abs(s * mid + c0 - chord) / max(chord, 1e-12))
        if i + 2 < len(xs):
            s, c0 = _line(b, measured[b], xs[i + 2], measured[xs[i + 2]])
            score = max(score, abs(s * mid + c0 - chord) / max(chord, 1e-12))
        key = (score, len(inside), mid)
        if best is None or key > best:
            best = key
    return None if best is None else best[2]


def fit_linear(batches: Sequence[float], latencies_ms: Sequence[float]) -> LatencyModel:
    """One least-squares line ``αB + β`` through all points: the APM-style baseline (Nexus' model)."""
    xs = np.asarray(batches, dtype=float)
    ys = np.asarray(latencies_ms, dtype=float)
    if len(xs) < 2:
        raise ProfileError("a linear fit needs at least two points")
    alpha, beta = np.polyfit(xs, ys, 1)
    alpha = max(float(alpha), 0.0)
    lo, hi = float(xs.min()), float(xs.max())
    return LatencyModel(
        vertices_batch=(lo, hi),
        vertices_ms=(alpha * lo + float(beta), alpha * hi + float(beta)),
        knee_batch=None,
        probe_batches=tuple(round(x) for x in xs),
        probe_ms=tuple(float(y) for y in ys),
    )
