"""Profile a model too large to run here by counting it: the whole training iteration on PyTorch's ``meta``
device, where every op runs on shapes alone (no arithmetic, no memory), so a 8 B-parameter model at 2,048
tokens is counted in seconds on a laptop.

What is counted, at two batch sizes (as :func:`~srifty.compute.measure.opcount.record_work` records a real
run): every ATen op of forward, backward and optimizer step with its FLOPs and bytes (the same recorder and
formulas); each parameter and when its gradient becomes ready, as a fraction of the backward's counted cost
(FLOPs at a reference GPU's peak plus bytes at its memory bandwidth, roofline-style: nothing is timed); and the
memory the iteration holds, from torch's tensor-level tracker (``MemTracker``, which sees the storages a real
run would allocate) in the forward-and-backward and in the step.

What is not: any time. The result (:func:`count_profile`) is a source for the calibrated GPU model
(:func:`srifty.compute.gpu_estimate.calibrated_profile`), which prices a CPU profile from its op counts alone
too; it is marked ``meta`` and is never planned with itself.

Attention is counted as FlashAttention runs it on a GPU (causal, no padding; see :func:`_flash_attention`).
Under ``bf16``/``fp16`` the model computes in that type throughout (as FSDP's mixed precision gathers and
computes, ``param_dtype``), while its parameters are counted as fp32 master weights, as FSDP keeps them.
Adam's step reads its step count with ``.item()``, which meta tensors cannot answer; it is answered ``1``
(the count changes no op's shape). Needs torch.
"""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any
from unittest import mock

import torch
from torch.utils.module_tracker import ModuleTracker

from srifty import __version__
from srifty.catalog import load_catalog
from srifty.compute.buckets import assign_buckets
from srifty.compute.latency import LatencyModel
from srifty.compute.measure.opcount import OpRecorder, merge_records, step_by_phase
from srifty.compute.measure.workloads import build_workload, call_model
from srifty.compute.memory import fit_memory_model
from srifty.compute.numerics import NumericSettings
from srifty.compute.profile import DeviceInfo, ParamInfo, Profile
from srifty.compute.work import OpWork
from srifty.errors import ProfileError

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
#: The GPU whose datasheet weighs FLOPs against bytes for the gradient-ready timeline.
REFERENCE_GPU = "H100"
FP32_BYTES = 4


class _MetaTrainer:
    """One model on the meta device, its optimizer, and synthetic batches there."""

    is_cuda = False

    def __init__(self, name: str, seq_len: int, precision: str, optimizer: str) -> None:
        with torch.device("meta"):
            self.workload = build_workload(name, seq_len=seq_len)
        self.device = torch.device("meta")
        self.model = self.workload.model.to(DTYPES[precision]).train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        if optimizer == "adam":
            self.optimizer: torch.optim.Optimizer = torch.optim.AdamW(params, lr=1e-4, foreach=False)
        elif optimizer == "sgd":
            self.optimizer = torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=False)
        else:
            raise ProfileError(f"unknown optimizer '{optimizer}'; use sgd or adam")

    def batch(self, size: int) -> tuple[Any, Any]:
        with torch.device("meta"):
            return self.workload.make_batch(size)

    def forward_loss(self, inputs: Any, target: Any) -> torch.Tensor:
        return self.workload.loss_fn(call_model(self.model, inputs), target)


def _flash_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """Scaled dot-product attention as a GPU trains an LLM: FlashAttention's kernel (causal, no padding), with
    grouped key/value heads repeated. On meta tensors ``F.scaled_dot_product_attention`` would fall back to the
    math path, which materialises the score matrix a GPU never holds."""
    if key.shape[1] != query.shape[1]:
        repeat = query.shape[1] // key.shape[1]
        key, value = key.repeat_interleave(repeat, dim=1), value.repeat_interleave(repeat, dim=1)
    causal = is_causal or attn_mask is not None
    out = torch.ops.aten._scaled_dot_product_flash_attention(query, key, value, dropout_p, causal, False, scale=scale)
    return out[0]


def _counting() -> Any:
    """Adam's step count answered (see :func:`_adam_on_meta`) and attention as FlashAttention."""
    from contextlib import ExitStack

    stack = ExitStack()
    stack.enter_context(_adam_on_meta())
    stack.enter_context(mock.patch.object(torch.nn.functional, "scaled_dot_product_attention", _flash_attention))
    return stack


def _adam_on_meta() -> Any:
    """Answer Adam's ``.item()`` of its step count with 1 (see the module docstring)."""
    from torch.optim import adam

    original = adam._get_value

    def value(x: Any) -> Any:
        return 1.0 if isinstance(x, torch.Tensor) and x.device.type == "meta" else original(x)

    return mock.patch.object(adam, "_get_value", value)


def _iteration(trainer: _MetaTrainer, batch: int, weigh: Any) -> tuple[list[Any], dict[int, float]]:
    """One counted iteration: its ops, and each parameter's gradient-ready point (cost of backward so far)."""
    inputs, target = trainer.batch(batch)
    named = [p for p in trainer.model.parameters() if p.requires_grad]
    ready: dict[int, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with ModuleTracker() as tracker, OpRecorder(False, tracker) as recorder:
            handles = []
            for index, param in enumerate(named):

                def hook(_p: torch.Tensor, index: int = index) -> None:
                    ready[index] = sum(weigh(op) for op in recorder.ops if op.phase == "bw")

                handles.append(param.register_post_accumulate_grad_hook(hook))
            try:
                trainer.optimizer.zero_grad(set_to_none=True)
                with _counting():
                    step_by_phase(recorder, trainer, inputs, target)
            finally:
                for handle in handles:
                    handle.remove()
    total = sum(weigh(op) for op in recorder.ops if op.phase == "bw")
    return recorder.finish(), {i: (v / total if total > 0 else 1.0) for i, v in ready.items()}


def _peaks(trainer: _MetaTrainer, batch: int) -> tuple[float, float]:
    """Bytes held at the peak of forward-and-backward and of the step (``MemTracker`` on meta storages)."""
    from torch.distributed._tools.mem_tracker import MemTracker

    inputs, target = trainer.batch(batch)
    trainer.optimizer.zero_grad(set_to_none=True)
    peaks = []
    for phase in ("fwbw", "step"):
        tracker = MemTracker()
        tracker.track_external(trainer.model, trainer.optimizer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            with tracker, _counting():
                if phase == "fwbw":
                    trainer.forward_loss(inputs, target).backward()
                else:
                    trainer.optimizer.step()
        snapshot = tracker.get_tracker_snapshot("peak")
        peaks.append(float(sum(stats.get("Total", 0) for stats in snapshot.values())))
    return peaks[0], peaks[1]


def count_profile(
    name: str,
    seq_len: int,
    precision: str = "bf16",
    optimizer: str = "adam",
    batches: tuple[int, int] = (2, 4),
    checkpointing: bool = True,
) -> Profile:
    """Count ``name`` at ``seq_len`` tokens (see the module docstring): a profile of device kind ``meta`` whose
    op counts, parameters, gradient timeline and memory model are a calibrated estimate's source. With
    ``checkpointing``, the iteration is counted again with every block checkpointed: its forward-and-backward
    memory per sample, and its backward's counted cost over the plain one (``checkpointing_bwd_slowdown``,
    a roofline ratio on the reference GPU, not a measurement).

    Raises:
        ProfileError: an unknown model, precision or optimizer, or an op sequence that differs between the
            two batch sizes.
    """
    if precision not in DTYPES:
        raise ProfileError(f"unknown precision '{precision}'; use fp32, bf16 or fp16")
    lo, hi = batches
    trainer = _MetaTrainer(name, seq_len, precision, optimizer)
    gpu = load_catalog().gpu_spec(REFERENCE_GPU)
    peak = gpu.tensor16_flops_per_s if precision != "fp32" and gpu.tensor16_flops_per_s else gpu.fp32_flops_per_s

    def weigh(op: Any) -> float:
        return float(op.flops) / peak + float(op.bytes) / gpu.mem_bw_bytes_per_s

    _iteration(trainer, lo, weigh)  # creates the optimizer's state, so both counted steps see it
    ops_lo, _ = _iteration(trainer, lo, weigh)
    ops_hi, ready = _iteration(trainer, hi, weigh)
    for op in (*ops_lo, *ops_hi):
        op.time_s = 0.0
    work = OpWork((lo, hi), merge_records(ops_lo, ops_hi), "counted on meta tensors (not timed)").without_times()
    named = [(n, p) for n, p in trainer.model.named_parameters() if p.requires_grad]
    params = tuple(
        ParamInfo(n, p.numel(), p.numel() * FP32_BYTES, "float32", float(min(max(ready.get(i, 1.0), 0.0), 1.0)))
        for i, (n, p) in enumerate(named)
    )
    order = tuple(sorted(range(len(params)), key=lambda i: (params[i].ready_frac, i)))
    points = {b: _peaks(trainer, b) for b in (lo, hi)}
    n_params = sum(p.numel for p in params)
    # the tracker counted the parameters and the optimizer's state in the compute dtype; a run keeps fp32
    # master parameters and fp32 state (FSDP's mixed precision, PyTorch's optimizers)
    counted_state = sum(float(p.numel()) * p.element_size() for _, p in named)
    for state in trainer.optimizer.state.values():
        counted_state += sum(float(t.numel()) * t.element_size() for t in state.values() if torch.is_tensor(t))
    per_param = FP32_BYTES + {"adam": 8.0, "sgd": 4.0}[optimizer]
    master = per_param * n_params - counted_state
    forward = [[b, points[b][0] + master] for b in (lo, hi)]
    memory = fit_memory_model([lo, hi], [max(points[b]) + master for b in (lo, hi)])
    extra: dict[str, Any] = {"seq_len": seq_len, "forward_memory_points": forward, "counted_on": "meta"}
    if checkpointing:
        extra.update(_checkpointed(trainer, params, (lo, hi), weigh, ops_hi))
    return Profile(
        model=trainer.workload.name,
        model_kind=trainer.workload.kind,
        input_description=trainer.workload.input_description,
        precision=precision,
        optimizer=optimizer,
        n_params=n_params,
        param_bytes=n_params * FP32_BYTES,
        device=DeviceInfo("meta", "PyTorch meta tensors (counted, nothing run)", None, 0, 0, torch.__version__),
        samples=(),
        latency={phase: _unknown() for phase in ("fw", "bw", "step", "iter")},
        memory=memory,
        memory_points=tuple((b, max(points[b]) + master) for b in (lo, hi)),
        max_batch=hi,
        max_batch_limited_by="counted",
        params=params,
        ready_order=order,
        timeline_batch=hi,
        bucket_cap_mb=None,
        buckets=tuple(
            assign_buckets(
                order, [p.size_bytes for p in params], [p.ready_frac for p in params], None, ["float32"] * len(params)
            )
        ),
        warmup_iters=0,
        timed_iters=0,
        timing_method="none (counted on meta tensors)",
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        srifty_version=__version__,
        extra=extra,
        work=work,
        numerics=NumericSettings(True, False, "highest", {"bf16": "bfloat16", "fp16": "float16"}.get(precision)),
        notes=f"COUNTED on PyTorch's meta device at batches {lo} and {hi}: op counts, parameters, gradient "
        f"timeline (roofline cost on {REFERENCE_GPU}) and memory; no time was measured",
    )


def _checkpointed(
    trainer: _MetaTrainer, params: tuple[ParamInfo, ...], batches: tuple[int, int], weigh: Any, plain: list[Any]
) -> dict[str, Any]:
    """The counted iteration with every block checkpointed (it stays so): per-sample memory and backward cost."""
    from torch.distributed._composable import checkpoint

    from srifty.compute.sharding import sharding_units

    for unit in sharding_units(params):
        if not unit.is_root:
            checkpoint(trainer.model.get_submodule(unit.key))
    lo, hi = batches
    points = {b: _peaks(trainer, b)[0] for b in (lo, hi)}
    ops, _ = _iteration(trainer, hi, weigh)
    cost = lambda run: sum(weigh(op) for op in run if op.phase == "bw")  # noqa: E731
    return {
        "checkpointed_forward_memory_points": [[b, points[b]] for b in (lo, hi)],
        "checkpointed_per_sample_bytes": (points[hi] - points[lo]) / (hi - lo),
        "checkpointing_bwd_slowdown": cost(ops) / max(cost(plain), 1e-30),
        "checkpointing_batch": hi,
        "checkpointing_slowdown_source": "counted: roofline cost on the reference GPU, not measured",
    }


def _unknown() -> LatencyModel:
    """A placeholder latency curve (0 ms): a counted profile has no times; it is only ever an estimate's source."""
    return LatencyModel((1.0, 2.0), (0.0, 0.0), None, (), ())
