"""Per-configuration residual curves: what a probed instance type measured, beyond what the booster says.

The booster sees only features that carry over to machines never probed (message size, ranks, nodes,
GPUs per node, concurrency, link rating, backend), so that it can answer for any VM. Where an instance
type *was* probed, its own curve is better evidence than any cross-type rule: NCCL's protocol changes,
an EFA provider's latency, a version's regression. So each probed configuration (instance type, backend,
and whether its traffic stays inside one VM) keeps the weighted median of the booster's log residuals at
every size it was measured, and a query of that configuration adds the residual, interpolated linearly in
log size between the measured sizes and held flat beyond them. Configurations never probed get none.

Residuals are in the model's label units (log of bus bandwidth, or of its fraction of the link), so a
curve is a multiplicative correction. Medians are weighted by the decayed sample weights, so new probes
of a configuration outweigh old ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from srifty.network.features import FeatureEncoder, Frame, is_intra_node
from srifty.vocab import as_table, filled

FloatArray = npt.NDArray[np.float64]
#: Key of a row whose instance type is not known.
UNKNOWN = "?"


def configuration_keys(frame: Frame, encoder: FeatureEncoder) -> npt.NDArray[np.str_]:
    """``"instance type|backend|intra"`` (or ``|net``) per row; the backend filled as the encoder fills it. A
    model that learned several collectives (``collective`` among its categorical features) keys each one
    apart: ``"…|net|all_gather"``."""
    table = as_table(frame)
    instance = table.text_or("instance_type", UNKNOWN)
    if "backend" in encoder.categorical:
        backend = filled(encoder.categorical_values(table, "backend"), UNKNOWN)
    else:
        backend = table.text_or("backend", UNKNOWN)
    traffic = np.where(is_intra_node(table), "intra", "net")
    keys = np.char.add(np.char.add(np.char.add(instance, "|"), np.char.add(backend, "|")), traffic)
    if "collective" in encoder.categorical:
        collective = filled(encoder.categorical_values(table, "collective"), "allreduce")
        keys = np.char.add(np.char.add(keys, "|"), collective)
    return keys


@dataclass(frozen=True)
class ResidualCurves:
    """Residual curves by configuration key: ``{key: (sizes in bytes, residuals)}``, sizes ascending."""

    curves: Mapping[str, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)

    @classmethod
    def fit(
        cls, keys: npt.ArrayLike, sizes_bytes: npt.ArrayLike, residuals: FloatArray, weights: FloatArray
    ) -> ResidualCurves:
        """The weighted median residual of every (key, size) seen (the lower median at an even split)."""
        key_array = np.asarray(keys, dtype=str)
        size_array = np.asarray(sizes_bytes, dtype=np.float64)
        order = np.lexsort((residuals, size_array, key_array))
        k, s, r, w = key_array[order], size_array[order], residuals[order], weights[order]
        starts = np.flatnonzero(np.r_[True, (k[1:] != k[:-1]) | (s[1:] != s[:-1])])
        ends = np.r_[starts[1:], len(k)]
        cumulative = np.cumsum(w)
        before = np.r_[0.0, cumulative][starts]
        half = before + 0.5 * (cumulative[ends - 1] - before)
        medians = r[np.minimum(np.searchsorted(cumulative, half, side="left"), ends - 1)]
        curves: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
        for key in np.unique(k[starts]):
            at = k[starts] == key
            curves[str(key)] = (tuple(s[starts][at].tolist()), tuple(medians[at].tolist()))
        return cls(curves)

    def known(self, keys: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Whether each key has a curve (its configuration was probed)."""
        return np.isin(np.asarray(keys, dtype=str), list(self.curves))

    def residual(self, keys: npt.ArrayLike, sizes_bytes: npt.ArrayLike) -> FloatArray:
        """Each row's residual at its size (0 for configurations never probed)."""
        key_array = np.asarray(keys, dtype=str)
        log_size = np.log(np.asarray(sizes_bytes, dtype=np.float64))
        out = np.zeros(key_array.size)
        for key in np.unique(key_array):
            curve = self.curves.get(str(key))
            if curve is None:
                continue
            rows = key_array == key
            out[rows] = np.interp(log_size[rows], np.log(np.asarray(curve[0])), np.asarray(curve[1]))
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {key: {"sizes_bytes": list(s), "residuals": list(r)} for key, (s, r) in self.curves.items()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ResidualCurves:
        """The curves recorded by :meth:`to_json`."""
        return cls({k: (tuple(v["sizes_bytes"]), tuple(v["residuals"])) for k, v in doc.items()})
