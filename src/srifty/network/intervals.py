"""Prediction intervals by split conformal calibration on held-out residuals, per kind of question.

How wrong the model is depends on what it is asked: a probed configuration on a new allocation is off by
that placement's luck; a fabric never probed is off by however much it differs from every fabric that
was. So held-out residuals ``log(measured / predicted)`` are collected in two classes:

* ``probed``: rows of held-out *allocations* whose configuration (instance type, backend, traffic inside
  or between VMs) was probed in other allocations (cross-validation grouped by allocation);
* ``unprobed``: rows whose configuration the training part never saw (cross-validation grouped by
  instance type, plus allocations that were a type's only ones).

Each class keeps the weighted empirical quantiles of its residuals at :data:`LEVELS`; an interval of
coverage ``c`` is the prediction times ``exp`` of the ``(1−c)/2`` and ``(1+c)/2`` quantiles, which covers
a share ``c`` of new rows to the extent that they resemble the held-out ones (split conformal prediction,
without its finite-sample correction, which is below 1 % at the row counts here). A class with fewer
than :data:`MIN_RESIDUALS` residuals borrows from the other, widened by :data:`UNCALIBRATED_WIDENING`
when it is the unprobed class that borrows (not calibrated; marked so in the metadata).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Familiarity = Literal["probed", "unprobed"]
CLASSES: tuple[Familiarity, ...] = ("probed", "unprobed")
#: Quantile levels kept per class; intervals and samples interpolate between them.
LEVELS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975, 0.99)
MIN_RESIDUALS = 30
#: A class without its own residuals takes another's, this many times as wide.
UNCALIBRATED_WIDENING = 3.0


def weighted_quantiles(values: FloatArray, weights: FloatArray, levels: tuple[float, ...] = LEVELS) -> FloatArray:
    """Quantiles of ``values`` under ``weights`` (midpoint plotting positions, linear in between)."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    positions = (np.cumsum(w) - 0.5 * w) / w.sum()
    return np.interp(np.asarray(levels), positions, v)


@dataclass(frozen=True)
class ResidualQuantiles:
    """Quantiles of held-out log residuals per familiarity class.

    Attributes:
        quantiles: class → residual quantiles at :data:`LEVELS`.
        counts: class → how many held-out residuals the quantiles rest on (0: borrowed).
        calibrated: class → whether its quantiles come from its own residuals.
    """

    quantiles: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    calibrated: Mapping[str, bool] = field(default_factory=dict)

    @classmethod
    def fit(cls, residuals: FloatArray, weights: FloatArray, classes: npt.NDArray[np.str_]) -> ResidualQuantiles:
        """Quantiles per class; a class with too few residuals borrows (see the module docstring).

        ``residuals`` may be empty (nothing could be held out): every interval is then a point.
        """
        quantiles: dict[str, tuple[float, ...]] = {}
        counts: dict[str, int] = {}
        calibrated: dict[str, bool] = {}
        for name in CLASSES:
            mask = classes == name
            counts[name] = int(mask.sum())
            if counts[name] >= MIN_RESIDUALS:
                quantiles[name] = tuple(float(q) for q in weighted_quantiles(residuals[mask], weights[mask]))
                calibrated[name] = True
        for name in CLASSES:
            if name in quantiles:
                continue
            other = next((c for c in CLASSES if c in quantiles), None)
            calibrated[name] = False
            if other is None:
                pooled = weighted_quantiles(residuals, weights) if residuals.size else np.zeros(len(LEVELS))
                quantiles[name] = tuple(float(q) for q in pooled)
            else:
                widen = UNCALIBRATED_WIDENING if name == "unprobed" else 1.0
                median = quantiles[other][LEVELS.index(0.5)]
                quantiles[name] = tuple(median + widen * (q - median) for q in quantiles[other])
        return cls(quantiles, counts, calibrated)

    def at(self, classes: npt.NDArray[np.str_], levels: npt.ArrayLike) -> FloatArray:
        """Residual quantiles at ``levels`` (each in (0, 1)) for each row's class: shape ``(rows, levels)``.

        Levels beyond the outermost kept ones take the outermost quantile.
        """
        wanted = np.atleast_1d(np.asarray(levels, dtype=np.float64))
        out = np.zeros((len(classes), wanted.size))
        for name in CLASSES:
            mask = classes == name
            if mask.any():
                out[mask] = np.interp(wanted, LEVELS, self.quantiles[name])
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "levels": list(LEVELS),
            "quantiles": {k: list(v) for k, v in self.quantiles.items()},
            "counts": dict(self.counts),
            "calibrated": dict(self.calibrated),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ResidualQuantiles:
        """The quantiles recorded by :meth:`to_json`.

        Raises:
            ValueError: a class's quantiles are not one per recorded level.
        """
        for name, values in doc["quantiles"].items():
            if len(values) != len(doc["levels"]):
                raise ValueError(f"class '{name}' has {len(values)} quantiles for {len(doc['levels'])} levels")
        if tuple(doc["levels"]) != LEVELS:
            levels = np.asarray(doc["levels"], dtype=np.float64)
            quantiles = {k: tuple(np.interp(LEVELS, levels, v)) for k, v in doc["quantiles"].items()}
        else:
            quantiles = {k: tuple(v) for k, v in doc["quantiles"].items()}
        return cls(quantiles, dict(doc["counts"]), dict(doc["calibrated"]))
