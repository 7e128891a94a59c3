"""Record every ATen op of a training iteration: its FLOPs, the bytes it moves, and how long it took.

A :class:`OpRecorder` (a ``TorchDispatchMode``) sees each op after autograd has recorded it, times it on
its own (``perf_counter`` on a CPU, where ops run synchronously; CUDA events on a GPU), and counts:

* **FLOPs** with the formulas of ``torch.utils.flop_counter`` (the ones ``FlopCounterMode`` uses: matrix
  products, convolutions and their backward, attention), plus the same attention formulas for the CPU's
  fused attention ops, which that registry does not list. Element-wise ops count no FLOPs: on every
  device here they are bound by memory traffic.
* **Bytes**: each distinct input tensor and each output tensor once, at most its storage's size (so an
  expanded or broadcast tensor counts once), plus tensors written in place that are not returned. View
  ops move nothing.

:func:`record_work` runs one instrumented iteration at each of two batch sizes, matches ops by position
and merges identical ones into :class:`~srifty.compute.work.OpRecord`. Needs torch.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import (
    conv_flop_count,
    flop_registry,
    get_shape,
    sdpa_backward_flop_count,
    sdpa_flop_count,
)
from torch.utils.module_tracker import ModuleTracker

from srifty.compute.work import GROUPED_CONV_FIX, GemmDims, OpRecord, OpWork
from srifty.errors import ProfileError

aten = torch.ops.aten


class Stepper(Protocol):
    """What one training step needs: the model's optimizer, and one batch's forward pass and loss."""

    optimizer: torch.optim.Optimizer

    def forward_loss(self, inputs: Any, target: Any) -> torch.Tensor: ...


class Trainer(Stepper, Protocol):
    """What recording needs of the profiler's trainer: a step, the model's device, and batches."""

    is_cuda: bool
    device: torch.device

    def batch(self, size: int) -> tuple[Any, Any]: ...


def _cpu_sdpa_flops(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
    return int(sdpa_flop_count(query.shape, key.shape, value.shape))


def _cpu_sdpa_backward_flops(grad_out: Any, query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
    return int(sdpa_backward_flop_count(grad_out.shape, query.shape, key.shape, value.shape))


def _conv_backward_flops(
    grad_out: Any,
    x: Any,
    w: Any,
    _bias: Any,
    _stride: Any,
    _padding: Any,
    _dilation: Any,
    transposed: bool,
    _output_padding: Any,
    _groups: Any,
    output_mask: Any,
    *args: Any,
    **kwargs: Any,
) -> int:
    """Each requested gradient (input, weight) of a convolution costs as many FLOPs as its forward.

    torch's own formula counts the weight gradient of a grouped convolution as if it were dense, ``groups``
    times too many (a depthwise convolution's backward came out 33x its forward with 32 groups); the
    forward formula handles groups through the weight's shape, so it is reused here.
    """
    forward = conv_flop_count(get_shape(x), get_shape(w), get_shape(grad_out), transposed)
    return int(forward * (int(bool(output_mask[0])) + int(bool(output_mask[1]))))


# Formulas that replace or add to torch's registry: convolution backward with groups (see above), and the
# CPU's fused attention kernels with torch's own SDPA formulas (the registry lists only GPU kernels).
EXTRA_FLOP_FORMULAS: dict[Any, Callable[..., int]] = {aten.convolution_backward: _conv_backward_flops}
FLOP_FORMULAS = (
    "torch.utils.flop_counter (FlopCounterMode's registry) + its SDPA formulas for CPU attention; "
    f"{GROUPED_CONV_FIX} (backward = forward FLOPs per requested gradient)"
)
for _name, _formula in (
    ("_scaled_dot_product_flash_attention_for_cpu", _cpu_sdpa_flops),
    ("_scaled_dot_product_flash_attention_for_cpu_backward", _cpu_sdpa_backward_flops),
):
    if hasattr(aten, _name):
        EXTRA_FLOP_FORMULAS[getattr(aten, _name)] = _formula


@dataclass
class RawOp:
    """One op instance as recorded (times are filled after the iteration on a GPU)."""

    phase: str
    op: str
    scope: str
    dtype: str
    flops: float
    bytes: float
    time_s: float = 0.0
    variant: str = ""
    gemms: tuple[GemmDims, ...] = ()


def _tensors(tree: Any) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(tree)
    return [x for x in leaves if isinstance(x, torch.Tensor)]


def _traffic_bytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of distinct tensors, each at most its storage's size."""
    seen: set[tuple[int, int, tuple[int, ...]]] = set()
    total = 0
    for t in tensors:
        key = (t.untyped_storage().data_ptr(), int(t.storage_offset()), tuple(int(d) for d in t.shape))
        if key in seen:
            continue
        seen.add(key)
        total += min(t.numel() * t.element_size(), t.untyped_storage().nbytes())
    return total


CONV_GROUPS_ARG = {aten.convolution.default: 8, aten.convolution_backward.default: 9}


def _variant(func: Any, args: Any) -> str:
    """``"depthwise"`` (one input channel per group) or ``"grouped"`` for a convolution with groups, else ``""``."""
    position = CONV_GROUPS_ARG.get(func)
    if position is None or len(args) <= position or int(args[position]) <= 1:
        return ""
    weight = args[1] if func is aten.convolution.default else args[2]
    return "depthwise" if int(weight.shape[1]) == 1 else "grouped"


def _prod(values: Any) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def _conv_gemms(
    x: Any, w: Any, y: Any, groups: int, transposed: bool, mask: tuple[bool, bool] | None
) -> tuple[GemmDims, ...]:
    """A convolution as implicit GEMMs (``x`` input, ``w`` weight, ``y`` output; ``mask``: which gradients a
    backward computes, ``None`` for the forward). Per group: forward ``m = N·out pixels, n = C_out/g``;
    input gradient ``m = N·in pixels, n = C_in/g``; weight gradient ``m = C_out/g, n = C_in/g·kernel``; and
    ``k`` such that each has the forward's FLOPs, as the FLOP formulas count them (``C_in/g·kernel`` for a
    stride-1 forward, fewer taps per pixel where strides or a transposed convolution skip some, ``N·out
    pixels`` for the weight gradient)."""
    kernel = _prod(w.shape[2:])
    c_in, c_out = int(x.shape[1]), int(y.shape[1])
    out_pixels = int(y.shape[0]) * _prod(y.shape[2:])
    in_pixels = int(x.shape[0]) * _prod(x.shape[2:])
    g = float(groups)
    forward_flops = 2.0 * (in_pixels if transposed else out_pixels) * _prod(w.shape)
    shapes = [(float(out_pixels), c_out / g)] if mask is None else []
    if mask is not None and mask[0]:
        shapes.append((float(in_pixels), c_in / g))
    if mask is not None and mask[1]:
        shapes.append((c_out / g, c_in / g * kernel))
    return tuple((m, n, forward_flops / (2.0 * m * n * g), g) for m, n in shapes)


def _gemms(func: Any, args: Any, out: Any) -> tuple[GemmDims, ...]:
    """The matrix products an op runs (:data:`~srifty.compute.work.GemmDims`), ``()`` for any other op."""
    packet = func.overloadpacket
    try:
        if packet is aten.convolution:
            return _conv_gemms(args[0], args[1], out, int(args[8]), bool(args[6]), None)
        if packet is aten.convolution_backward:
            mask = [bool(m) for m in args[10]]
            return _conv_gemms(args[1], args[2], args[0], int(args[9]), bool(args[7]), (mask[0], mask[1]))
        if packet in (aten.mm, aten.addmm):
            a, b = (args[0], args[1]) if packet is aten.mm else (args[1], args[2])
            return ((float(a.shape[0]), float(b.shape[1]), float(a.shape[1]), 1.0),)
        if packet in (aten.bmm, aten.baddbmm):
            a, b = (args[0], args[1]) if packet is aten.bmm else (args[1], args[2])
            return ((float(a.shape[1]), float(b.shape[2]), float(a.shape[2]), float(a.shape[0])),)
    except (AttributeError, IndexError, TypeError):
        return ()
    return ()


def _dtype_of(tensors: list[torch.Tensor]) -> str:
    for t in tensors:
        if t.is_floating_point():
            return str(t.dtype).replace("torch.", "")
    return str(tensors[0].dtype).replace("torch.", "") if tensors else "none"


class OpRecorder(TorchDispatchMode):
    """Times and counts every op dispatched while active; ``phase`` labels the ops that follow."""

    def __init__(self, is_cuda: bool, tracker: ModuleTracker | None = None) -> None:
        super().__init__()
        self.is_cuda = is_cuda
        self.tracker = tracker
        self.phase = "fw"
        self.ops: list[RawOp] = []
        self._events: list[tuple[Any, Any]] = []

    def _scope(self) -> str:
        if self.tracker is None:
            return ""
        parents = [p for p in self.tracker.parents if p != "Global"]
        return max(parents, key=lambda p: (p.count("."), p)) if parents else ""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.is_cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = func(*args, **kwargs)
            end.record()
            self._events.append((start, end))
            elapsed = 0.0
        else:
            t0 = time.perf_counter()
            out = func(*args, **kwargs)
            elapsed = time.perf_counter() - t0
        self.ops.append(self._count(func, args, kwargs, out, elapsed))
        return out

    def _count(self, func: Any, args: Any, kwargs: Any, out: Any, elapsed: float) -> RawOp:
        inputs, outputs = _tensors((args, kwargs)), _tensors(out)
        formula = EXTRA_FLOP_FORMULAS.get(func.overloadpacket) or flop_registry.get(func.overloadpacket)
        flops = float(formula(*args, **kwargs, out_val=out)) if formula is not None else 0.0
        if func.is_view:
            moved = 0
        else:
            written = [
                a
                for spec, a in zip(func._schema.arguments, args, strict=False)
                if spec.alias_info is not None and spec.alias_info.is_write
            ]
            moved = _traffic_bytes(inputs) + _traffic_bytes(outputs + _tensors(written))
        return RawOp(
            self.phase,
            str(func),
            self._scope(),
            _dtype_of(inputs + outputs),
            flops,
            float(moved),
            elapsed,
            _variant(func, args),
            _gemms(func, args, out),
        )

    def finish(self) -> list[RawOp]:
        """The recorded ops, with GPU times filled in (synchronises)."""
        if self.is_cuda and self._events:
            torch.cuda.synchronize()
            for op, (start, end) in zip(self.ops, self._events, strict=True):
                op.time_s = start.elapsed_time(end) / 1000.0
        return self.ops


def record_iteration(trainer: Trainer, batch: int) -> list[RawOp]:
    """One training iteration at ``batch`` (zero_grad, forward and loss, backward, step), op by op."""
    inputs, target = trainer.batch(batch)
    if trainer.is_cuda:
        torch.cuda.synchronize(trainer.device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the module tracker warns about some hook setups
        with ModuleTracker() as tracker, OpRecorder(trainer.is_cuda, tracker) as recorder:
            trainer.optimizer.zero_grad(set_to_none=True)
            step_by_phase(recorder, trainer, inputs, target)
    return recorder.finish()


def step_by_phase(recorder: OpRecorder, trainer: Stepper, inputs: Any, target: Any) -> None:
    """One training step on a batch: forward and loss, backward, the optimizer's step, each recorded under its
    phase (``fw``, ``bw``, ``step``)."""
    recorder.phase = "fw"
    loss = trainer.forward_loss(inputs, target)
    recorder.phase = "bw"
    loss.backward()
    recorder.phase = "step"
    trainer.optimizer.step()


def _median_times(runs: list[list[RawOp]]) -> list[RawOp]:
    first = runs[0]
    for run in runs[1:]:
        if [o.op for o in run] != [o.op for o in first]:
            raise ProfileError("the op sequence changed between identical iterations; op counts are unreliable")
    for i, op in enumerate(first):
        op.time_s = float(np.median([run[i].time_s for run in runs]))
    return first


def merge_records(lo: list[RawOp], hi: list[RawOp]) -> tuple[OpRecord, ...]:
    """Pair op instances of the two batch sizes by position and merge identical ones (first-seen order).

    Raises:
        ProfileError: the two iterations ran different op sequences (data-dependent control flow).
    """
    if [(o.phase, o.op) for o in lo] != [(o.phase, o.op) for o in hi]:
        raise ProfileError(
            f"the op sequence differs between the two batch sizes ({len(lo)} vs {len(hi)} ops); "
            "per-op counts cannot be paired"
        )
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for a, b in zip(lo, hi, strict=True):
        key = (a.phase, a.op, a.dtype, a.flops, b.flops, a.bytes, b.bytes, a.variant)
        if key not in groups:
            groups[key] = [a.scope, 0, 0.0, 0.0, tuple(zip(a.gemms, b.gemms, strict=False))]
        group = groups[key]
        group[1] += 1
        group[2] += a.time_s
        group[3] += b.time_s
    return tuple(
        OpRecord(
            phase=phase,
            op=op,
            scope=scope,
            dtype=dtype,
            count=count,
            flops=(f_lo * count, f_hi * count),
            bytes=(m_lo * count, m_hi * count),
            time_s=(t_lo, t_hi),
            variant=variant,
            gemms=gemms,
        )
        for (phase, op, dtype, f_lo, f_hi, m_lo, m_hi, variant), (scope, count, t_lo, t_hi, gemms) in groups.items()
    )


def record_work(trainer: Trainer, batches: tuple[int, int], op_iters: int = 1) -> OpWork:
    """Instrumented iterations at both batch sizes (``op_iters`` each, per-op median time) → :class:`OpWork`.

    Raises:
        ProfileError: the op sequence is not the same across iterations or batch sizes.
    """
    if op_iters < 1:
        raise ProfileError(f"op_iters must be at least 1, got {op_iters}")
    lo, hi = batches
    runs = {b: _median_times([record_iteration(trainer, b) for _ in range(op_iters)]) for b in sorted({lo, hi})}
    return OpWork(
        batches=(lo, hi),
        records=merge_records(runs[lo], runs[hi]),
        timing_method="cuda_events" if trainer.is_cuda else "perf_counter",
        op_iters=op_iters,
        flop_formulas=FLOP_FORMULAS,
    )
