"""The alpha-beta baseline (the communication model of the paper's APM, after Daydream).

An allreduce of ``s`` bytes over ``n`` ranks takes ``t = alpha + (2·(n−1)/n)·s / beta``: a fixed latency
``alpha`` (s) plus the ring's traffic at a link bandwidth ``beta`` (bytes/s). Here ``alpha`` and
``1/beta`` are fitted per group of rows (by default per rated link, GPUs per node, world size and
concurrency: the most generous version of the baseline) by non-negative least squares on *relative*
time error, so both stay physical. A query whose group was never seen falls back to coarser groups
(dropping grouping columns from the right), then to one global fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from srifty.artifacts import read_json_artifact, write_json_artifact
from srifty.network import NATURAL_FILL, NetModelError, busbw_cap_bytes_per_s, validate_frame
from srifty.vocab import Table, as_table, busbw_bytes_per_s, ring_bytes_factor

ALPHA_BETA_KIND = "alpha-beta-model"
ALPHA_BETA_SCHEMA_VERSION = 1
DEFAULT_GROUP_BY = ("rated_network_gbps", "gpus_per_node", "world_size", "n_concurrent")
FloatArray = npt.NDArray[np.float64]
Key = tuple[float, ...]


def fit_alpha_beta(size_bytes: FloatArray, world_size: FloatArray, time_s: FloatArray) -> tuple[float, float]:
    """``(alpha_s, s_per_byte)`` minimising the squared relative error of ``alpha + x·s_per_byte`` against
    ``time_s``, with ``x = 2·(n−1)/n·size`` and both parameters ``≥ 0``."""
    from scipy.optimize import nnls

    x = ring_bytes_factor(world_size) * size_bytes
    design = np.column_stack([np.ones_like(x), x]) / time_s[:, None]
    solution, _ = nnls(design, np.ones_like(x))
    return float(solution[0]), float(solution[1])


def _key_values(table: Table, columns: tuple[str, ...]) -> list[FloatArray]:
    out = []
    for name in columns:
        values = table.numeric(name) if name in table else np.full(len(table), np.nan)
        out.append(np.where(np.isfinite(values), values, NATURAL_FILL.get(name, -1.0)))
    return out


class AlphaBetaModel:
    """Alpha-beta allreduce model with the same interface as :class:`~srifty.network.BandwidthModel`.

    Args:
        group_by: columns whose distinct values get their own ``alpha`` and ``beta``; ``()`` for one
            global fit. A missing column reads as unknown (-1), or 1 for GPUs per node and concurrency.
    """

    def __init__(self, *, group_by: tuple[str, ...] = DEFAULT_GROUP_BY) -> None:
        self.group_by = group_by

    def fit(self, frame: Any) -> AlphaBetaModel:
        """Fit ``alpha`` and ``beta`` for every group and every coarser prefix of the grouping; returns self.
        ``frame``: probe rows (a DataFrame, or a mapping of column names to arrays).

        Raises:
            NetModelError: invalid columns (see :func:`~srifty.network.dataset.validate_frame`).
        """
        probes = as_table(frame, NetModelError)
        validate_frame(probes, need_label=True)
        size = probes.numeric("size_bytes")
        world = probes.numeric("world_size")
        time_s = size * ring_bytes_factor(world) / probes.numeric("busbw_bytes_per_s")
        keys = _key_values(probes, self.group_by)
        self.params_: dict[int, dict[Key, tuple[float, float]]] = {}
        for depth in range(len(self.group_by), -1, -1):
            table: dict[Key, tuple[float, float]] = {}
            if depth:
                unique, inverse = np.unique(np.column_stack(keys[:depth]), axis=0, return_inverse=True)
            else:
                unique, inverse = np.zeros((1, 0)), np.zeros(len(probes), dtype=np.int64)
            for g, key in enumerate(unique):
                rows = inverse.reshape(-1) == g
                table[tuple(float(v) for v in key)] = fit_alpha_beta(size[rows], world[rows], time_s[rows])
            self.params_[depth] = table
        return self

    def _params_for(self, rows: Table) -> tuple[FloatArray, FloatArray]:
        keys = _key_values(rows, self.group_by)
        alpha = np.full(len(rows), np.nan)
        slope = np.full(len(rows), np.nan)
        for depth in range(len(self.group_by), -1, -1):
            todo = np.isnan(alpha)
            if not todo.any():
                break
            table = self.params_[depth]
            for i in np.flatnonzero(todo):
                hit = table.get(tuple(float(k[i]) for k in keys[:depth]))
                if hit is not None:
                    alpha[i], slope[i] = hit
        return alpha, slope

    def predict_busbw_bytes_per_s(self, frame: Any) -> FloatArray:
        """Bus bandwidth (bytes/s) implied by the fitted times; non-negative and capped at the rated link."""
        if not hasattr(self, "params_"):
            raise NetModelError("this AlphaBetaModel is not fitted; call fit() or AlphaBetaModel.load().")
        data = as_table(frame, NetModelError)
        validate_frame(data, need_label=False)
        size = data.numeric("size_bytes")
        world = data.numeric("world_size")
        alpha, slope = self._params_for(data)
        time_s = alpha + ring_bytes_factor(world) * size * slope
        with np.errstate(divide="ignore", invalid="ignore"):
            busbw = np.where(time_s > 0, busbw_bytes_per_s(size, world, time_s), np.inf)
        return np.clip(busbw, 0.0, busbw_cap_bytes_per_s(data))

    def save(self, path: str | Path) -> Path:
        """Write the fitted parameters as one versioned JSON file (atomically)."""
        if not hasattr(self, "params_"):
            raise NetModelError("this AlphaBetaModel is not fitted; nothing to save.")
        groups = {
            str(depth): [{"key": list(key), "alpha_s": a, "s_per_byte": b} for key, (a, b) in table.items()]
            for depth, table in self.params_.items()
        }
        return write_json_artifact(
            path,
            ALPHA_BETA_KIND,
            ALPHA_BETA_SCHEMA_VERSION,
            {"group_by": list(self.group_by), "groups": groups},
        )

    @classmethod
    def load(cls, path: str | Path) -> AlphaBetaModel:
        """Load a model written by :meth:`save`."""
        doc = read_json_artifact(path, ALPHA_BETA_KIND, ALPHA_BETA_SCHEMA_VERSION)
        model = cls(group_by=tuple(doc["group_by"]))
        model.params_ = {
            int(depth): {tuple(float(v) for v in g["key"]): (float(g["alpha_s"]), float(g["s_per_byte"])) for g in rows}
            for depth, rows in doc["groups"].items()
        }
        return model
