"""Per-op work counts: floating-point operations, memory traffic and (on the measured device) time.

One training iteration is recorded op by op at two batch sizes ``b_lo < b_hi``. Each :class:`OpRecord`
holds, for one group of identical ATen ops in one phase (``fw``, ``bw`` or ``step``), the FLOPs and bytes
moved at both batch sizes and the time they took there. Counts are taken as linear in the batch,
``x(B) = x0 + x1·B``, through the two measurements; this is exact for convolutions, matrix products and
element-wise ops whose shapes grow with the batch, and for the optimizer step, which does not grow.

Pure numpy; the recorder that fills these records (:mod:`srifty.compute.measure.opcount`) needs torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.errors import ProfileError

WORK_PHASES: tuple[str, ...] = ("fw", "bw", "step")
HALF_DTYPES = frozenset({"bfloat16", "float16"})
# Marks op counts whose grouped-convolution backward FLOPs are right (torch's formula counts them dense).
GROUPED_CONV_FIX = "grouped convolution backward fixed"
# One matrix product an op runs, as ``(m, n, k, problems)``: ``problems`` independent ``m x k`` by ``k x n``
# products (groups of a convolution, the batch of a ``bmm``), ``2·m·n·k·problems`` FLOPs in all.
GemmDims = tuple[float, float, float, float]


def _dims(values: Sequence[float]) -> GemmDims:
    m, n, k, problems = (float(v) for v in values)
    return (m, n, k, problems)


def _gemm_pair(pair: Sequence[Sequence[float]]) -> tuple[GemmDims, GemmDims]:
    lo, hi = pair
    return (_dims(lo), _dims(hi))


@dataclass(frozen=True)
class OpRecord:
    """``count`` identical ATen ops of one phase, measured at the two batch sizes of their :class:`OpWork`.

    Attributes:
        phase: ``fw`` (forward and loss), ``bw`` (backward) or ``step`` (optimizer step).
        op: the ATen overload, for example ``aten.convolution.default``.
        scope: the innermost module the first instance ran in (``ResNet.layer1.0.conv1``), or ``""``.
        dtype: dtype of the op's first floating-point tensor (``float32``, ``bfloat16``).
        count: how many instances were merged into this record (same op, dtype, FLOPs and bytes).
        flops: total FLOPs of all instances at ``(b_lo, b_hi)``; a multiply-add counts as 2.
        bytes: total bytes read and written at ``(b_lo, b_hi)``: distinct input tensors, output tensors,
            and tensors written in place (views and expanded tensors count their storage once).
        time_s: total measured seconds at ``(b_lo, b_hi)`` on the profile's device, or ``None`` where the
            profile is an estimate (counts do not depend on the device, times do).
        variant: what the op name does not say and a GPU's kernels depend on: ``"grouped"`` or
            ``"depthwise"`` for convolutions with ``groups > 1``; ``""`` otherwise and in profiles made
            before srifty recorded it.
        gemms: the matrix products one instance runs (:data:`GemmDims`, a convolution as its implicit GEMM;
            its backward as two, input and weight gradient), each as ``(at b_lo, at b_hi)``; ``()`` for ops
            that are not matrix products, and for every op of a profile made before srifty recorded them
            (:attr:`OpWork.gemms_recorded`).
    """

    phase: str
    op: str
    scope: str
    dtype: str
    count: int
    flops: tuple[float, float]
    bytes: tuple[float, float]
    time_s: tuple[float, float] | None
    variant: str = ""
    gemms: tuple[tuple[GemmDims, GemmDims], ...] = ()


@dataclass(frozen=True)
class OpWork:
    """Every op of one training iteration, recorded at batch sizes ``batches = (b_lo, b_hi)``.

    Attributes:
        batches: the two batch sizes (equal when only batch 1 fits; counts are then taken as proportional
            to the batch).
        records: op groups in first-execution order.
        timing_method: ``perf_counter`` (CPU: each op is synchronous) or ``cuda_events``.
        op_iters: instrumented iterations per batch size (per-op times are their median).
        flop_formulas: where the FLOP formulas come from.
    """

    batches: tuple[int, int]
    records: tuple[OpRecord, ...]
    timing_method: str
    op_iters: int = 1
    flop_formulas: str = "torch.utils.flop_counter"

    def __post_init__(self) -> None:
        lo, hi = self.batches
        if lo < 1 or hi < lo:
            raise ProfileError(f"op work batches must satisfy 1 <= b_lo <= b_hi, got {self.batches}")
        bad = sorted({r.phase for r in self.records} - set(WORK_PHASES))
        if bad:
            raise ProfileError(f"op records have unknown phases {bad}; expected {', '.join(WORK_PHASES)}")

    @property
    def gemms_recorded(self) -> bool:
        """Whether the recorder noted each matrix product's shape (profiles since issue 27)."""
        return any(r.gemms for r in self.records)

    def gemms_at(self, record: OpRecord, batch: ArrayLike) -> NDArray[np.float64]:
        """Dimensions of ``record``'s matrix products at each batch: shape ``(gemms, 4, batches)``, rows
        ``m, n, k, problems``, each linear in the batch through its two recorded values (a dimension that
        grows with the batch grows in proportion), at least 1. Recorded at one batch only (``b_lo = b_hi``),
        which dimension grows is unknown: the shapes are kept as recorded."""
        b = np.atleast_1d(np.asarray(batch, dtype=float))
        if not record.gemms:
            return np.zeros((0, 4, b.size))
        pairs = np.asarray(record.gemms, dtype=float)  # (gemms, 2, 4)
        flat = pairs.transpose(0, 2, 1).reshape(-1, 2)  # (gemms·4, 2)
        lo, hi = self.batches
        dims = np.repeat(flat[:, 1:], b.size, axis=1) if lo == hi else self._linear(flat, b)
        return np.maximum(dims, 1.0).reshape(len(record.gemms), 4, b.size)

    @property
    def has_times(self) -> bool:
        """Whether every record carries measured times (a measured profile's work does)."""
        return bool(self.records) and all(r.time_s is not None for r in self.records)

    def select(self, phase: str) -> tuple[OpRecord, ...]:
        """The records of one phase."""
        return tuple(r for r in self.records if r.phase == phase)

    def _linear(self, pairs: NDArray[np.float64], batch: ArrayLike) -> NDArray[np.float64]:
        """Evaluate ``x(B)`` per record (rows) at each batch (columns), never below zero."""
        lo, hi = self.batches
        b = np.atleast_1d(np.asarray(batch, dtype=float))
        if hi == lo:
            slope = pairs[:, 1] / hi
            intercept = np.zeros_like(slope)
        else:
            slope = (pairs[:, 1] - pairs[:, 0]) / (hi - lo)
            intercept = pairs[:, 0] - slope * lo
        return np.maximum(intercept[:, None] + slope[:, None] * b[None, :], 0.0)

    def flops_at(self, records: Sequence[OpRecord], batch: ArrayLike) -> NDArray[np.float64]:
        """FLOPs of each record (rows) at each batch (columns)."""
        return self._linear(np.asarray([r.flops for r in records], dtype=float).reshape(-1, 2), batch)

    def bytes_at(self, records: Sequence[OpRecord], batch: ArrayLike) -> NDArray[np.float64]:
        """Bytes moved by each record (rows) at each batch (columns)."""
        return self._linear(np.asarray([r.bytes for r in records], dtype=float).reshape(-1, 2), batch)

    def time_s_at(self, records: Sequence[OpRecord], batch: ArrayLike) -> NDArray[np.float64]:
        """Measured seconds of each record (rows) at each batch (columns), linear through both measurements.

        Raises:
            ProfileError: a record has no measured time (an estimated profile's work).
        """
        if any(r.time_s is None for r in records):
            raise ProfileError("these op records carry no measured times (they belong to an estimated profile)")
        pairs = np.asarray([r.time_s for r in records], dtype=float).reshape(-1, 2)
        return self._linear(pairs, batch)

    def total_flops(self, phase: str, batch: float) -> float:
        """FLOPs of one phase at ``batch``."""
        records = self.select(phase)
        return float(self.flops_at(records, batch).sum()) if records else 0.0

    def total_bytes(self, phase: str, batch: float) -> float:
        """Bytes moved by one phase at ``batch``."""
        records = self.select(phase)
        return float(self.bytes_at(records, batch).sum()) if records else 0.0

    def without_times(self) -> OpWork:
        """The same counts with the measured times removed (what an estimated profile carries)."""
        return replace(self, records=tuple(replace(r, time_s=None) for r in self.records))

    # ---- serialisation: columnar, so a profile of a thousand ops stays readable ----------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: one list per column."""
        recs = self.records
        return {
            "batches": list(self.batches),
            "timing_method": self.timing_method,
            "op_iters": self.op_iters,
            "flop_formulas": self.flop_formulas,
            "columns": {
                "phase": [r.phase for r in recs],
                "op": [r.op for r in recs],
                "scope": [r.scope for r in recs],
                "dtype": [r.dtype for r in recs],
                "count": [r.count for r in recs],
                "flops_lo": [r.flops[0] for r in recs],
                "flops_hi": [r.flops[1] for r in recs],
                "bytes_lo": [r.bytes[0] for r in recs],
                "bytes_hi": [r.bytes[1] for r in recs],
                "time_lo_s": [None if r.time_s is None else r.time_s[0] for r in recs],
                "time_hi_s": [None if r.time_s is None else r.time_s[1] for r in recs],
                "variant": [r.variant for r in recs],
                "gemms": [[[list(lo), list(hi)] for lo, hi in r.gemms] for r in recs],
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OpWork:
        """Inverse of :meth:`to_dict`.

        Raises:
            ProfileError: a column is missing or the columns differ in length.
        """
        try:
            cols = dict(data["columns"])
            n = len(cols["op"])
            cols.setdefault("variant", [""] * n)  # recorded since op counts fixed grouped convolutions
            cols.setdefault("gemms", [[] for _ in range(n)])  # recorded since issue 27
            if any(len(v) != n for v in cols.values()):
                raise ProfileError("op work columns differ in length; regenerate the profile")
            records = tuple(
                OpRecord(
                    phase=cols["phase"][i],
                    op=cols["op"][i],
                    scope=cols["scope"][i],
                    dtype=cols["dtype"][i],
                    count=int(cols["count"][i]),
                    flops=(float(cols["flops_lo"][i]), float(cols["flops_hi"][i])),
                    bytes=(float(cols["bytes_lo"][i]), float(cols["bytes_hi"][i])),
                    time_s=None
                    if cols["time_lo_s"][i] is None
                    else (float(cols["time_lo_s"][i]), float(cols["time_hi_s"][i])),
                    variant=str(cols["variant"][i] or ""),
                    gemms=tuple(_gemm_pair(pair) for pair in cols["gemms"][i] or ()),
                )
                for i in range(n)
            )
            lo, hi = data["batches"]
            return cls(
                batches=(int(lo), int(hi)),
                records=records,
                timing_method=data["timing_method"],
                op_iters=int(data.get("op_iters", 1)),
                flop_formulas=data.get("flop_formulas", "torch.utils.flop_counter"),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ProfileError(f"malformed op work: {type(err).__name__} {err}; regenerate the profile") from None
