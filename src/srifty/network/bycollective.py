"""Two bandwidth models behind one: allreduces to one, all-gathers and reduce-scatters to the other where it
measured them.

srifty's embedded default is two models fitted with the same method (:class:`~srifty.network.BandwidthModel`):
the allreduce model the planner has always used, fitted on allreduce probes alone, and a model of every
collective, fitted on those probes *and* the all-gather and reduce-scatter probes, with the collective as a
categorical feature (its residual curves keyed by it, see :mod:`srifty.network.curves`). Allreduces are
answered by the first, so that adding collectives changed no allreduce prediction the planner makes. An
all-gather or a reduce-scatter is answered by the second where its configuration (instance type, backend,
inside or between VMs, collective) was probed, and otherwise by the first, as an allreduce of the same bus
bandwidth: nccl-tests defines bus bandwidth per collective so that it reflects the hardware, the same for each
operation on a well-implemented library (``PERFORMANCE.md``), and every all-gather and reduce-scatter srifty
has measured ran on gloo, whose all-gather reaches about half its allreduce's bus bandwidth on the testbed and
its reduce-scatter about a quarter: a cross-collective rule learned there says more about gloo than about
NCCL's rings on EFA.

A model fitted by ``srifty fit-net`` on probes of several collectives is already one model; this class is
only how the default ships.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from srifty.network.errors import NetModelError
from srifty.network.model import BandwidthModel
from srifty.vocab import Table, as_table

FloatArray = npt.NDArray[np.float64]


class ByCollective:
    """``others`` answers rows of another collective than allreduce whose configuration it probed; ``allreduce``
    every other row (see the module docstring).

    Args:
        allreduce: the allreduce model.
        others: a model that learned the other collectives (``collective`` among its categorical features).
    """

    def __init__(self, allreduce: BandwidthModel, others: BandwidthModel) -> None:
        self.allreduce = allreduce
        self.others = others

    @property
    def predicts_intra_node(self) -> bool:
        """Whether the allreduce model learned single multi-GPU VMs (see :mod:`srifty.sim.netquery`)."""
        return bool(self.allreduce.predicts_intra_node)

    def _others_mask(self, data: Table) -> npt.NDArray[np.bool_]:
        """Rows of another collective whose configuration the second model probed."""
        if "collective" not in data:
            return np.zeros(len(data), dtype=bool)
        other = np.array([value not in (None, "allreduce") for value in data.text("collective")], dtype=bool)
        if other.any():
            other[other] = self.others.probed(data.take(other))
        return other

    def _split(self, frame: Any, ask: Callable[[BandwidthModel, Table], Any]) -> Any:
        data = as_table(frame, NetModelError)
        mask = self._others_mask(data)
        if not mask.any():
            return ask(self.allreduce, data)
        if mask.all():
            return ask(self.others, data)
        first = ask(self.allreduce, data.take(~mask))
        second = ask(self.others, data.take(mask))
        if isinstance(first, list):
            merged: list[Any] = [None] * len(data)
            for index, value in zip(np.flatnonzero(~mask), first, strict=True):
                merged[index] = value
            for index, value in zip(np.flatnonzero(mask), second, strict=True):
                merged[index] = value
            return merged
        first_array, second_array = np.asarray(first), np.asarray(second)
        text = first_array.dtype.kind in "US"  # widths differ between the two answers
        out = np.empty((len(data), *first_array.shape[1:]), dtype=object if text else first_array.dtype)
        out[~mask] = first_array
        out[mask] = second_array
        return out.astype(str) if text else out

    def predict_busbw_bytes_per_s(self, frame: Any) -> FloatArray:
        """Bus bandwidth (bytes/s) of each row's collective."""
        return np.asarray(self._split(frame, lambda m, d: m.predict_busbw_bytes_per_s(d)), dtype=np.float64)

    def residual_quantiles(self, frame: Any, levels: npt.ArrayLike) -> FloatArray:
        """Quantiles of ``log(measured / predicted)`` busbw per row (see :meth:`BandwidthModel.residual_quantiles`)."""
        return np.asarray(self._split(frame, lambda m, d: m.residual_quantiles(d, levels)), dtype=np.float64)

    def familiarity(self, frame: Any) -> npt.NDArray[np.str_]:
        """``"probed"`` or ``"unprobed"`` per row, by the model that answers it."""
        return np.asarray(self._split(frame, lambda m, d: m.familiarity(d)), dtype=str)

    def explain(self, frame: Any) -> list[str]:
        """Where each row's answer comes from (see :meth:`BandwidthModel.explain`)."""
        return list(self._split(frame, lambda m, d: m.explain(d)))

    def predict_busbw_interval(self, frame: Any, coverage: float = 0.8) -> tuple[FloatArray, FloatArray]:
        """``(low, high)`` bus bandwidth of each row (see :meth:`BandwidthModel.predict_busbw_interval`)."""
        both = self._split(frame, lambda m, d: np.column_stack(m.predict_busbw_interval(d, coverage)))
        return np.asarray(both[:, 0], dtype=np.float64), np.asarray(both[:, 1], dtype=np.float64)

    def __repr__(self) -> str:
        return f"ByCollective(allreduce={self.allreduce!r}, others={self.others!r})"
