"""Candidate rules for the 4-probe latency fit (issue 27, item 4): where the probes go and which segment
model goes through them, scored on measured curves and chosen by leave-one-model-out cross-validation.

Six placements by six segment models, fixed before scoring (a rule is chosen among them, nothing else is
fitted to the curves):

* placements: srifty's adaptive one (:func:`srifty.compute.fit_latency_curve` with ``smooth=False``: the
  two largest, the smallest and the candidate nearest the estimated knee), evenly in log batch (0, 1/3,
  2/3, 1 of the range), the two smallest and two largest, and the smallest, the largest two and one at a
  quarter, a half or a third of the candidates (the last with the third largest instead of the second);
* segment models: piecewise linear through the probes with a flat floor (srifty's GPU model before issue 27)
  or without (its CPU model), least-squares floor-then-line, linear in log-log, and a smooth maximum of a
  floor and a line with exponent 2 or 4 (:func:`srifty.compute.latency.fit_floor_line` is the latter).

Each rule is scored as ``benchmarks.compute_accuracy`` scores srifty: probes see one interleaved half of
the timed iterations, the other half is the truth at the batches not probed (MAPE of fw, bw and iter).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import least_squares

from srifty.compute import latency

PHASES = ("fw", "bw", "iter")
Curve = Mapping[int, Mapping[str, float]]


class Model(Protocol):
    def predict_ms(self, batch_sizes: Any) -> NDArray[np.float64]: ...


def _near(cands: Sequence[int], fraction: float) -> int:
    lo, hi = math.log(cands[0]), math.log(cands[-1])
    return min(cands, key=lambda c: (abs(math.log(c) - (lo + fraction * (hi - lo))), c))


def placements(cands: Sequence[int], fit: Curve) -> dict[str, list[int]]:
    """Every candidate placement's probes for one curve (``fit``: the probes' view of it)."""
    n = len(cands)
    adaptive = latency.fit_latency_curve(lambda b: fit[b]["iter"], cands[-1], 4, cands, flat_floor=True, smooth=False)
    return {
        "adaptive": sorted(adaptive.probe_batches),
        "log-even": sorted({_near(cands, f) for f in (0.0, 1 / 3, 2 / 3, 1.0)}),
        "two low, two high": sorted({cands[0], cands[1], cands[-2], cands[-1]}),
        "ends + quarter": sorted({cands[0], cands[n // 4], cands[-2], cands[-1]}),
        "ends + middle": sorted({cands[0], cands[n // 2], cands[-2], cands[-1]}),
        "wide line": sorted({cands[0], cands[n // 3], cands[-3], cands[-1]}),
    }


class _FloorThenLine:
    """Least squares (relative): the first ``k`` probes on a floor, the rest on a line, the best ``k``."""

    def __init__(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        x, y = np.asarray(xs, float), np.asarray(ys, float)
        best: tuple[float, float, float, float] | None = None
        for k in range(len(x) - 1):
            slope, icpt = np.polyfit(x[k:], y[k:], 1)
            floor = float(np.mean(y[:k])) if k else 0.0
            err = float(np.sum(((np.maximum(floor, slope * x + icpt) - y) / y) ** 2))
            if best is None or err < best[0]:
                best = (err, floor, float(slope), float(icpt))
        assert best is not None
        _, self.floor, self.slope, self.icpt = best

    def predict_ms(self, batch_sizes: Any) -> NDArray[np.float64]:
        return np.maximum(self.floor, self.slope * np.asarray(batch_sizes, float) + self.icpt)


class _LogLog:
    """Linear interpolation in log batch and log latency, the end segments extended."""

    def __init__(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        self.x, self.y = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))

    def predict_ms(self, batch_sizes: Any) -> NDArray[np.float64]:
        lb = np.log(np.asarray(batch_sizes, float))
        x, y = self.x, self.y
        out = np.interp(lb, x, y)
        out = np.where(lb < x[0], y[0] + (y[1] - y[0]) / (x[1] - x[0]) * (lb - x[0]), out)
        out = np.where(lb > x[-1], y[-1] + (y[-1] - y[-2]) / (x[-1] - x[-2]) * (lb - x[-1]), out)
        return np.exp(out)


class _SmoothFloorLine:
    """``(c^q + (a + s·B)^q)^(1/q)`` by least squares on relative error (q fixed)."""

    def __init__(self, xs: Sequence[float], ys: Sequence[float], q: float) -> None:
        x, y = np.asarray(xs, float), np.asarray(ys, float)
        self.q = q
        slope0 = max((y[-1] - y[-2]) / (x[-1] - x[-2]), 1e-9 * y[-1])
        start = np.log([y[0], max(y[-1] - slope0 * x[-1], 1e-3 * y[0]), slope0])
        self.p = least_squares(lambda p: self._curve(p, x) / y - 1.0, start).x

    def _curve(self, p: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
        floor, icpt, slope = np.exp(p)
        line = icpt + slope * b
        top = np.maximum(floor, line)
        return top * ((floor / top) ** self.q + (line / top) ** self.q) ** (1.0 / self.q)

    def predict_ms(self, batch_sizes: Any) -> NDArray[np.float64]:
        return self._curve(self.p, np.asarray(batch_sizes, float))


SEGMENTS: dict[str, Callable[[Sequence[float], Sequence[float]], Model]] = {
    "piecewise, floor": lambda x, y: latency.fit_piecewise_linear(x, y, flat_floor=True),
    "piecewise": lambda x, y: latency.fit_piecewise_linear(x, y, flat_floor=False),
    "floor then line": _FloorThenLine,
    "log-log": _LogLog,
    "smooth max q=2": lambda x, y: _SmoothFloorLine(x, y, 2.0),
    "smooth max q=4": lambda x, y: _SmoothFloorLine(x, y, 4.0),
}
Rule = tuple[str, str]


def mape(pred: NDArray[np.float64], truth: NDArray[np.float64]) -> float:
    return float(np.mean(np.abs(pred - truth) / truth) * 100.0)


def score_rules(fit: Curve, truth: Curve) -> dict[Rule, tuple[float, float, float]]:
    """Every rule's (fw, bw, iter) MAPE at the batches it did not probe."""
    batches = sorted(fit)
    out = {}
    for place, probes in placements(batches, fit).items():
        held = [b for b in batches if b not in probes]
        for name, segment in SEGMENTS.items():
            errors = []
            for ph in PHASES:
                model = segment(probes, [fit[b][ph] for b in probes])
                errors.append(mape(model.predict_ms(held), np.array([truth[b][ph] for b in held])))
            out[(place, name)] = (errors[0], errors[1], errors[2])
    return out


def chosen(scores: Mapping[str, Mapping[Rule, tuple[float, float, float]]], models: Sequence[str]) -> Rule:
    """The rule with the least mean error (fw, bw and iter alike) over ``models``."""
    rules = list(next(iter(scores.values())))
    return min(rules, key=lambda r: (float(np.mean([np.mean(scores[m][r]) for m in models])), r))


def leave_one_model_out(
    scores: Mapping[str, Mapping[Rule, tuple[float, float, float]]],
) -> dict[str, tuple[Rule, tuple[float, float, float]]]:
    """Per model: the rule chosen on every other model, and its errors on this one."""
    out = {}
    for held in scores:
        rule = chosen(scores, [m for m in scores if m != held])
        out[held] = (rule, scores[held][rule])
    return out
