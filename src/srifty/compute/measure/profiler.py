"""Measure a real PyTorch model: largest batch, per-phase latency, memory, the gradient timeline, and the
per-op work counts and device ceilings that cross-GPU estimates need.

Timing uses CUDA events on a GPU and ``time.perf_counter`` on a CPU, with warm-up iterations discarded
and every timed iteration kept. Needs torch (imported by the caller of this module only).
"""

from __future__ import annotations

import datetime as dt
import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from srifty import __version__
from srifty.compute.buckets import Bucket
from srifty.compute.interference import InterferenceMeasurement
from srifty.compute.measure.device import available_memory_bytes, catalog_gpu_name, cpu_model_name
from srifty.compute.measure.interference import measure_interference
from srifty.compute.measure.machine import current_machine
from srifty.compute.measure.opcount import record_work
from srifty.compute.measure.peaks import MeasuredPeaks, measure_peaks
from srifty.compute.measure.workloads import SampleSpec, Workload, build_workload, call_model, to_device
from srifty.compute.memory import find_max_batch, fit_memory_model
from srifty.compute.numerics import NumericSettings
from srifty.compute.probing import param_buckets, probe_latency
from srifty.compute.profile import DeviceInfo, ParamInfo, PhaseSamples, Profile
from srifty.compute.work import OpWork
from srifty.errors import ProfileError

# Reported as (stage, done, total); the CLI draws it as a progress bar.
ProgressFn = Callable[[str, int, int], None]

CPU_DEFAULT_MAX_BATCH = 64
GPU_DEFAULT_MAX_BATCH = 8192
#: Doublings of the batch past the probed ones that ``--checkpointing`` may measure to leave the plateau.
CHECKPOINTED_EXTRA_PROBES = 3


@dataclass(frozen=True)
class ProfileOptions:
    """How to profile.

    Attributes:
        device: ``"cpu"`` or ``"cuda"`` (or ``"cuda:N"``).
        precision: ``"fp32"``, or ``"bf16"``/``"fp16"`` autocast for forward and loss (fp16 without a
            gradient scaler: the timing is the same, the numerics are not a recipe).
        max_probes: batch sizes measured for the latency model (the paper uses 4).
        warmup_iters: iterations discarded at each batch size.
        timed_iters: iterations kept at each batch size, per round.
        rounds: passes over the probed batch sizes, each timing every one of them again after its warm-up
            (:func:`srifty.compute.probing.probe_latency`); more rounds spread a shared machine's slow spells
            over all batches.
        memory_limit_bytes: CPU only: largest peak memory allowed (default: 80% of available memory).
        max_batch_cap: never search beyond this batch (default 64 on CPU, 8192 on GPU).
        bucket_cap_mb: DDP ``bucket_cap_mb`` for the bucket map; ``None`` means DDP's default.
        threads: CPU intra-op threads (default: torch's choice).
        optimizer: ``"sgd"`` (momentum 0.9) or ``"adam"``.
        seq_len: tokens per sample for ``hf:`` models.
        image_size: pixels per side for torchvision models (default: the model's native size).
        seed: seeds weights and synthetic data.
        count_ops: record per-op FLOPs, bytes and times (one instrumented iteration at each of two batch
            sizes) and the device's roofline ceilings, which cross-GPU estimates need.
        op_iters: instrumented iterations per batch size for the op counts (per-op median time).
        peak_seconds: about how long each ceiling measurement runs on a CPU (matmul, copy).
        input_shape: for a ``package.module:function`` that returns a bare ``nn.Module``: one input
            sample's shape (without the batch).
        input_vocab: with ``input_shape``: inputs are token ids below this, not floats.
        interference: measure how backward and the allreduce of the model's DDP buckets slow each other
            (gloo with a loopback peer process, host-staged on a GPU; see
            :mod:`srifty.compute.measure.interference`).
        interference_reps: repetitions of that measurement (their spread is recorded).
        checkpointing: also measure memory and backward time with activation checkpointing of every block
            (the units FSDP shards, :func:`srifty.compute.sharding.sharding_units`), at two probed batches
            and, where their peaks sit on the end-of-backward plateau, at larger ones
            (:func:`measure_checkpointing`).
    """

    device: str = "cpu"
    precision: str = "fp32"
    max_probes: int = 4
    warmup_iters: int = 2
    timed_iters: int = 5
    rounds: int = 1
    memory_limit_bytes: int | None = None
    max_batch_cap: int | None = None
    bucket_cap_mb: float | None = None
    threads: int | None = None
    optimizer: str = "sgd"
    seq_len: int = 128
    image_size: int | None = None
    seed: int = 0
    count_ops: bool = True
    op_iters: int = 1
    peak_seconds: float = 0.5
    input_shape: tuple[int, ...] | None = None
    input_vocab: int | None = None
    interference: bool = True
    interference_reps: int = 3
    checkpointing: bool = False


PRECISIONS = ("fp32", "bf16", "fp16")
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class _Trainer:
    """One model, optimizer and device; runs and times training iterations."""

    def __init__(self, workload: Workload, options: ProfileOptions) -> None:
        self.workload = workload
        self.options = options
        self.device = torch.device(options.device)
        self.is_cuda = self.device.type == "cuda"
        self.model = workload.model.to(self.device).train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        if not params:
            raise ProfileError(f"{workload.name} has no trainable parameters")
        if options.optimizer == "adam":
            self.optimizer: torch.optim.Optimizer = torch.optim.Adam(params, lr=1e-4)
        elif options.optimizer == "sgd":
            self.optimizer = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
        else:
            raise ProfileError(f"unknown optimizer '{options.optimizer}'; use sgd or adam")
        self._batches: dict[int, tuple[Any, Any]] = {}

    def batch(self, size: int) -> tuple[Any, Any]:
        """A synthetic batch of ``size`` on the device, made once and reused (only the last one is kept)."""
        if size not in self._batches:
            self._batches.clear()
            inputs, target = self.workload.make_batch(size)
            self._batches[size] = (to_device(inputs, self.device), to_device(target, self.device))
        return self._batches[size]

    def forward_loss(self, inputs: Any, target: Any) -> torch.Tensor:
        dtype = AUTOCAST_DTYPES.get(self.options.precision)
        if dtype is not None:
            with torch.autocast(device_type=self.device.type, dtype=dtype):
                return self.workload.loss_fn(call_model(self.model, inputs), target)
        return self.workload.loss_fn(call_model(self.model, inputs), target)

    def iteration(self, size: int) -> tuple[float, float, float, float]:
        """One training iteration at batch ``size``: ``(fw_ms, bw_ms, step_ms, iter_ms)``."""
        inputs, target = self.batch(size)
        if self.is_cuda:
            events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
            events[0].record()
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.forward_loss(inputs, target)
            events[1].record()
            loss.backward()
            events[2].record()
            self.optimizer.step()
            events[3].record()
            torch.cuda.synchronize(self.device)
            fw, bwd, st = (events[i].elapsed_time(events[i + 1]) for i in range(3))
            return fw, bwd, st, events[0].elapsed_time(events[3])
        t0 = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.forward_loss(inputs, target)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        self.optimizer.step()
        t3 = time.perf_counter()
        ms = 1000.0
        return (t1 - t0) * ms, (t2 - t1) * ms, (t3 - t2) * ms, (t3 - t0) * ms

    def peak_bytes(self, size: int) -> float:
        """Peak memory of one iteration at ``size`` (see :meth:`phase_peaks`)."""
        return max(self.phase_peaks(size))

    def phase_peaks(self, size: int) -> tuple[float, float]:
        """Peak memory of one iteration at ``size``: ``(forward and backward, optimizer step)``, in bytes.

        On a GPU, the CUDA allocator's peak counter, reset between the phases. On a CPU, the CPU allocator's
        own counter as the profiler reports it (``profile_memory``: every allocation and free, with its
        time): the bytes alive when the iteration starts (parameters, buffers, optimizer state, the batch;
        gradients are set to ``None`` first) plus the most the counter rose above that in each phase.
        """
        self.optimizer.zero_grad(set_to_none=True)
        inputs, target = self.batch(size)
        if self.is_cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.forward_loss(inputs, target).backward()
            torch.cuda.synchronize(self.device)
            forward = float(torch.cuda.max_memory_allocated(self.device))
            torch.cuda.reset_peak_memory_stats(self.device)
            self.optimizer.step()
            torch.cuda.synchronize(self.device)
            return forward, float(torch.cuda.max_memory_allocated(self.device))
        from srifty.compute.measure.memevents import allocator_phase_peaks

        alive = live_bytes([*self.model.parameters(), *self.model.buffers(), *_tensors((inputs, target))])
        alive += live_bytes(_tensors(list(self.optimizer.state.values())))

        def forward_backward() -> None:
            self.forward_loss(inputs, target).backward()

        peaks = allocator_phase_peaks({"forward": forward_backward, "step": self.optimizer.step})
        return alive + peaks["forward"], alive + peaks["step"]

    def checkpointed_walk_peaks(self, size: int, blocks: Sequence[torch.nn.Module]) -> tuple[float, float, list[float]]:
        """The forward-and-backward peak of :meth:`phase_peaks` at ``size`` (no optimizer step), in bytes, split
        where backward reaches each of ``blocks`` (in model order; backward runs them last to first), in one
        pass: ``(the turn: up to where backward reaches the last block, i.e. forward, the loss and the head's
        backward; the blocks' backward: from there on; each block's own stretch, in model order: block ``k``'s
        from where backward reaches it to where it reaches block ``k − 1``, block 0's to the end)``. The last
        part is empty where backward did not reach every block (the blocks' backward then ``0`` if it reached
        none)."""
        segments = self._backward_segment_peaks(size, blocks)
        stretches = segments[1:]
        per_block = stretches[::-1] if len(stretches) == len(blocks) else []
        return segments[0], max(stretches, default=0.0), per_block

    def _backward_segment_peaks(self, size: int, modules: Sequence[torch.nn.Module]) -> list[float]:
        """One forward-and-backward at ``size`` (no optimizer step), its peak in bytes split where backward
        reaches each of ``modules``: the peak before the first is reached, then each stretch from one to the next
        reached (the last: to the end)."""
        self.optimizer.zero_grad(set_to_none=True)
        inputs, target = self.batch(size)
        if self.is_cuda:
            ends: list[float] = []

            def at_module(module: torch.nn.Module, grad_output: object) -> None:
                torch.cuda.synchronize(self.device)
                ends.append(float(torch.cuda.max_memory_allocated(self.device)))
                torch.cuda.reset_peak_memory_stats(self.device)

            handles = [m.register_full_backward_pre_hook(at_module) for m in modules]
            try:
                torch.cuda.synchronize(self.device)
                torch.cuda.reset_peak_memory_stats(self.device)
                self.forward_loss(inputs, target).backward()
                torch.cuda.synchronize(self.device)
            finally:
                for handle in handles:
                    handle.remove()
            return [*ends, float(torch.cuda.max_memory_allocated(self.device))]
        from srifty.compute.measure.memevents import allocator_phase_peaks, mark

        alive = live_bytes([*self.model.parameters(), *self.model.buffers(), *_tensors((inputs, target))])
        alive += live_bytes(_tensors(list(self.optimizer.state.values())))
        handles = [m.register_full_backward_pre_hook(lambda module, grad_output: mark()) for m in modules]
        try:
            peaks = allocator_phase_peaks({"fwbw": lambda: self.forward_loss(inputs, target).backward()})
        finally:
            for handle in handles:
                handle.remove()
        if "fwbw.before_mark" not in peaks:
            return [alive + peaks["fwbw"]]
        marks = sorted(int(k.removeprefix("fwbw.mark")) for k in peaks if k.startswith("fwbw.mark"))
        return [alive + peaks["fwbw.before_mark"], *(alive + peaks[f"fwbw.mark{i}"] for i in marks)]

    def release(self) -> None:
        """Drop cached batches and gradients, and return freed GPU memory to the allocator's pool."""
        self._batches.clear()
        self.optimizer.zero_grad(set_to_none=True)
        gc.collect()
        if self.is_cuda:
            torch.cuda.empty_cache()


def _tensors(obj: Any) -> list[torch.Tensor]:
    """Every tensor in nested tuples, lists and dicts."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    if isinstance(obj, list | tuple):
        return [t for v in obj for t in _tensors(v)]
    return []


def live_bytes(tensors: list[torch.Tensor]) -> float:
    """Bytes of the distinct storages behind ``tensors`` (views of one storage count once)."""
    seen: dict[int, int] = {}
    for tensor in tensors:
        storage = tensor.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return float(sum(seen.values()))


def first_iteration(trainer: _Trainer, workload: Workload, options: ProfileOptions) -> None:
    """One training iteration at a batch of 1; a model that cannot train on its inputs is the user's to fix,
    so its own exception becomes a :class:`ProfileError` that names the model, its input and what to change.

    Raises:
        ProfileError: the model raised, or ran out of memory on one sample.
    """
    try:
        trainer.iteration(1)
    except ProfileError:
        raise  # srifty's own, already clear
    except Exception as err:
        if _is_oom(err):
            raise ProfileError(
                f"not even a batch of 1 of {workload.name} fits in memory on {options.device}; use a larger "
                "device or a smaller model"
            ) from None
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise ProfileError(
            f"{workload.name} could not train on a batch of 1 ({workload.input_description}): "
            f"{type(err).__name__}: {first}. Check the input options (--image-size, --seq-len, --input-shape, "
            "--input-vocab) and --precision against what the model expects; srifty profiles from a batch of 1 "
            "up, so the model must train on one sample (batch normalisation needs more than one value per "
            "channel: at a small --image-size a CNN's last feature map can shrink to 1x1)"
        ) from None


def _is_oom(err: BaseException) -> bool:
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in str(err).lower()


def device_ceilings(options: ProfileOptions) -> MeasuredPeaks:
    """Roofline ceilings of the profiling device: the catalog's datasheet figures for a known GPU, else
    measured (a CPU, or a GPU the catalog does not list)."""
    device = torch.device(options.device)
    if device.type == "cuda":
        from srifty.catalog import load_catalog

        index = device.index if device.index is not None else torch.cuda.current_device()
        gpu = catalog_gpu_name(torch.cuda.get_device_properties(index).name)
        spec = load_catalog().gpu_specs.get(gpu) if gpu else None
        if spec is not None:
            return MeasuredPeaks(spec.fp32_flops_per_s, spec.tensor16_flops_per_s, spec.mem_bw_bytes_per_s, "datasheet")
    half = AUTOCAST_DTYPES.get(options.precision)
    return measure_peaks(options.device, half=half is not None, seconds=options.peak_seconds, half_dtype=half)


def _device_info(options: ProfileOptions, memory_limit: int, peaks: MeasuredPeaks | None) -> DeviceInfo:
    device = torch.device(options.device)
    ceilings: dict[str, Any] = {
        "peak_flops_per_s": None if peaks is None else peaks.flops_per_s,
        "peak_tensor16_flops_per_s": None if peaks is None else peaks.tensor16_flops_per_s,
        "mem_bw_bytes_per_s": None if peaks is None else peaks.mem_bw_bytes_per_s,
        "peaks_source": None if peaks is None else peaks.description,
    }
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        return DeviceInfo(
            kind="cuda",
            name=props.name,
            gpu=catalog_gpu_name(props.name),
            threads=torch.get_num_threads(),
            memory_bytes=int(props.total_memory),
            torch_version=torch.__version__,
            cuda_version=torch.version.cuda,
            **ceilings,
        )
    return DeviceInfo(
        kind="cpu",
        name=cpu_model_name(),
        gpu=None,
        threads=torch.get_num_threads(),
        memory_bytes=memory_limit,
        torch_version=torch.__version__,
        **ceilings,
    )


def numeric_settings(precision: str) -> NumericSettings:
    """The numeric settings this process runs under: TF32 switches, matmul precision, autocast dtype."""
    return NumericSettings(
        cudnn_allow_tf32=bool(torch.backends.cudnn.allow_tf32),
        matmul_allow_tf32=bool(torch.backends.cuda.matmul.allow_tf32),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        autocast_dtype={"bf16": "bfloat16", "fp16": "float16"}.get(precision),
    )


def work_batches(probed: list[int]) -> tuple[int, int]:
    """The two batch sizes op counts are recorded at: the largest probe and the largest probe at most half
    of it (so the pair spans a factor of two or more), else the smallest probe."""
    hi = max(probed)
    below = [b for b in probed if b <= hi // 2]
    return (max(below) if below else min(probed)), hi


def record_op_work(trainer: _Trainer, probed: list[int], options: ProfileOptions) -> tuple[OpWork | None, str]:
    """Per-op counts at two probed batch sizes, or ``None`` and the reason when they cannot be paired."""
    try:
        return record_work(trainer, work_batches(probed), options.op_iters), ""
    except ProfileError as err:
        return None, f"op counts not recorded: {err}"


def measure_interference_of(
    trainer: _Trainer, probed: list[int], buckets: list[Bucket], options: ProfileOptions, report: ProgressFn
) -> tuple[InterferenceMeasurement | None, str]:
    """The interference measurement at the smaller op-count batch (see :func:`work_batches`), or ``None``
    and why not (turned off, a bucket-less model, the exchange failed)."""
    if not options.interference:
        return None, "interference not measured (--no-interference)"
    if not buckets:
        return None, "interference not measured: no gradients to exchange"
    report("interference", 0, 1)
    try:
        measured = measure_interference(trainer, work_batches(probed)[0], buckets, options.interference_reps)
    except (RuntimeError, OSError) as err:  # gloo or its store failed: the rest of the profile stands
        first = str(err).splitlines()[0] if str(err) else ""
        return None, f"interference not measured: the loopback exchange failed ({type(err).__name__}: {first})"
    finally:
        report("interference", 1, 1)
    return measured, ""


def _check_device(options: ProfileOptions) -> None:
    kind = options.device.split(":")[0]
    if kind not in ("cpu", "cuda"):
        raise ProfileError(f"unknown device '{options.device}' (--device); use cpu or cuda")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ProfileError("--device cuda was asked for, but torch sees no CUDA GPU here; use --device cpu")
    if options.precision not in PRECISIONS:
        raise ProfileError(f"unknown precision '{options.precision}' (--precision); use fp32, bf16 or fp16")
    if options.timed_iters < 2:
        raise ProfileError("timed_iters (--iters) must be at least 2, so the spread can be measured")
    if options.rounds < 1:
        raise ProfileError(f"rounds (--rounds) must be at least 1, got {options.rounds}")
    if options.op_iters < 1:
        raise ProfileError(f"op_iters (--op-iters) must be at least 1, got {options.op_iters}")
    if options.interference_reps < 1:
        raise ProfileError(f"--interference-reps must be at least 1, got {options.interference_reps}")
    _check_sizes(options)


def _check_sizes(options: ProfileOptions) -> None:
    """Counts and sizes the profiler would otherwise take as they come (a zero, a negative or a NaN), each
    named by its command-line option, before anything is built or measured."""
    at_least = [
        ("--max-probes (max_probes)", options.max_probes, 2),
        ("--warmup (warmup_iters)", options.warmup_iters, 0),
        ("--max-batch (max_batch_cap)", options.max_batch_cap, 1),
        ("--threads", options.threads, 1),
        ("--seq-len (seq_len)", options.seq_len, 1),
        ("--image-size (image_size)", options.image_size, 1),
        ("--memory-limit (memory_limit_bytes)", options.memory_limit_bytes, 1),
    ]
    for name, value, low in at_least:
        if value is not None and value < low:
            raise ProfileError(f"{name} must be at least {low}, got {value}.")
    cap = options.bucket_cap_mb
    if cap is not None and not (math.isfinite(cap) and cap > 0):
        raise ProfileError(f"--bucket-cap-mb must be a positive number of MiB (DDP's default is 25), got {cap}.")
    if options.optimizer not in ("sgd", "adam"):
        raise ProfileError(f"unknown optimizer '{options.optimizer}'; use sgd or adam")


def profile_model(name: str, options: ProfileOptions, progress: ProgressFn | None = None) -> Profile:
    """Profile model ``name`` on ``options.device`` and return the :class:`Profile`.

    Steps: find the largest batch that fits (OOM search on a GPU, measured peak memory against a limit on a
    CPU); choose up to ``max_probes`` batch sizes with :func:`fit_latency_curve` and time each; fit
    forward, backward, step and iteration models on the same batches; fit the memory model; record the
    gradient-ready timeline in a separate iteration and map it to DDP buckets; unless ``count_ops`` is off,
    record per-op FLOPs, bytes and times at two probed batch sizes and the device's roofline ceilings.
    """
    _check_device(options)
    report = progress or (lambda stage, done, total: None)
    if options.threads:
        torch.set_num_threads(options.threads)
    sample = None if options.input_shape is None else SampleSpec(options.input_shape, options.input_vocab)
    workload = build_workload(
        name, seq_len=options.seq_len, image_size=options.image_size, seed=options.seed, sample=sample
    )
    trainer = _Trainer(workload, options)
    is_cuda = trainer.is_cuda
    memory_limit = options.memory_limit_bytes or int(0.8 * available_memory_bytes())
    cap = options.max_batch_cap or (GPU_DEFAULT_MAX_BATCH if is_cuda else CPU_DEFAULT_MAX_BATCH)
    memory_points: dict[int, float] = {}
    forward_points: dict[int, float] = {}
    search_steps = [0]

    def fits(batch: int) -> bool:
        search_steps[0] += 1
        report("max batch", search_steps[0], max(search_steps[0], 2 * cap.bit_length()))
        out_of_memory = False
        try:
            forward, step = trainer.phase_peaks(batch)
        except (torch.OutOfMemoryError, RuntimeError) as err:
            if not _is_oom(err):
                raise
            out_of_memory = True
        if out_of_memory:
            # Released outside the except block: the traceback there still holds the failed step's tensors.
            trainer.release()
            return False
        memory_points[batch] = peak = max(forward, step)
        forward_points[batch] = forward
        return is_cuda or peak <= memory_limit

    first_iteration(trainer, workload, options)  # creates optimizer state, so every measurement below sees it
    max_batch = find_max_batch(fits, cap)
    report("max batch", search_steps[0], search_steps[0])
    trainer.release()
    limited_by = "max_batch_cap" if max_batch == cap else ("gpu_memory" if is_cuda else "memory_limit")

    total_iters = options.max_probes * (options.warmup_iters + options.timed_iters) * options.rounds
    probed = 0

    def measure(batch: int) -> PhaseSamples:
        nonlocal probed
        rows: list[tuple[float, float, float, float]] = []
        for i in range(options.warmup_iters + options.timed_iters):
            result = trainer.iteration(batch)
            if i >= options.warmup_iters:
                rows.append(result)
            report("latency", probed * (options.warmup_iters + options.timed_iters) + i + 1, total_iters)
        probed += 1
        fw, bwd, st, it = (tuple(r[k] for r in rows) for k in range(4))
        return PhaseSamples(batch, fw, bwd, st, it, memory_points.get(batch))

    # A GPU's small batches sit on a latency-bound floor (host-bound kernel issue); a CPU's curve rises.
    samples, latency = probe_latency(
        measure, max_batch, options.max_probes, flat_floor=trainer.is_cuda, rounds=options.rounds
    )
    batches = [s.batch for s in samples]
    memory = fit_memory_model(list(memory_points), list(memory_points.values()))

    report("timeline", 0, 1)
    timeline_batch = batches[-1]
    params, ready_order = record_timeline(trainer, timeline_batch)
    report("timeline", 1, 1)
    buckets = param_buckets(params, ready_order, options.bucket_cap_mb)
    interference, interference_note = measure_interference_of(trainer, batches, buckets, options, report)
    extra: dict[str, Any] = {"seq_len": options.seq_len, "image_size": options.image_size, "seed": options.seed}
    extra["forward_memory_points"] = [[b, forward_points[b]] for b in sorted(forward_points)]
    work, note = None, ""
    peaks = None
    if options.count_ops:
        report("op counts", 0, 2)
        work, note = record_op_work(trainer, batches, options)
        report("op counts", 1, 2)
        peaks = device_ceilings(options)
        report("op counts", 2, 2)
    device = _device_info(options, memory_limit, peaks)
    if options.checkpointing:  # last: it leaves the blocks checkpointed
        report("checkpointing", 0, 1)
        ceiling = None if is_cuda else float(memory_limit)
        extra.update(measure_checkpointing(trainer, params, batches, options, forward_points, ceiling))
        report("checkpointing", 1, 1)
    trainer.release()
    return Profile(
        model=workload.name,
        model_kind=workload.kind,
        input_description=workload.input_description,
        precision=options.precision,
        optimizer=options.optimizer,
        n_params=sum(p.numel for p in params),
        param_bytes=sum(p.size_bytes for p in params),
        device=device,
        samples=samples,
        latency=latency,
        memory=memory,
        memory_points=tuple(sorted(memory_points.items())),
        max_batch=max_batch,
        max_batch_limited_by=limited_by,
        params=params,
        ready_order=ready_order,
        timeline_batch=timeline_batch,
        bucket_cap_mb=options.bucket_cap_mb,
        buckets=tuple(buckets),
        warmup_iters=options.warmup_iters,
        timed_iters=options.timed_iters * options.rounds,  # iterations kept per batch, every round
        timing_method="cuda_events" if is_cuda else "perf_counter",
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        srifty_version=__version__,
        extra=extra,
        work=work,
        numerics=numeric_settings(options.precision),
        notes="; ".join(n for n in (note, interference_note) if n),
        machine=current_machine(),
        interference=interference,
    )


def measure_checkpointing(
    trainer: _Trainer,
    params: tuple[ParamInfo, ...],
    probed: list[int],
    options: ProfileOptions,
    plain_points: dict[int, float],
    ceiling_bytes: float | None,
) -> dict[str, Any]:
    """Forward-and-backward peak memory with every block checkpointed (``torch.distributed._composable.
    checkpoint``, which keeps parameter names), and backward time at the larger of two probed batches: the
    per-sample activation bytes and the backward's slowdown the memory model and the simulator use.

    The peak is measured apart before and after backward reaches the last block
    (:meth:`_Trainer.checkpointed_walk_peaks`): the *turn* (forward, the loss and the head's backward: every block's
    checkpointed input and the head's activations) and the *blocks' backward* (the inputs not yet consumed and one
    recomputed block's activations), which grow by different amounts a sample (a wide vocabulary's logits against a
    narrow block's activations) and which the memory model prices at different moments. The blocks' backward ends on
    the plateau ``2·P·p + P·o`` (every gradient held), where its peak sits at small batches whatever the batch. Each
    block's own stretch of the walk is measured in the same pass (from where backward reaches it to where it
    reaches the block before), for the memory model to price each block's moment with what that
    moment holds. The peaks are measured at the two probed batches of :func:`work_batches`, then at doubled batches
    (at most :data:`CHECKPOINTED_EXTRA_PROBES`) until two of the blocks' peaks lie above it, and its slope is
    :func:`~srifty.compute.sharding.memory_line`'s. The turn holds no block's gradient: its slope is the line
    through all its peaks. A doubled batch is measured only where the plain forward-and-backward line through
    ``plain_points`` (an upper bound: checkpointing only frees activations) stays within ``ceiling_bytes`` (the
    CPU's memory limit; ``None`` on a GPU, where an out of memory ends the doubling instead).

    Runs last: the blocks stay checkpointed. Raises:
        ProfileError: the model has no repeated blocks to checkpoint.
    """
    from torch.distributed._composable import checkpoint

    from srifty.compute.sharding import (
        above_plateau,
        memory_line,
        optimizer_state_bytes,
        plateau_bytes,
        sharding_units,
    )

    blocks = [u.key for u in sharding_units(params) if not u.is_root]
    if not blocks:
        raise ProfileError(
            f"{trainer.workload.name} has no repeated blocks (numbered submodules) to checkpoint; drop --checkpointing"
        )
    lo, hi = work_batches(probed)
    if lo == hi:
        raise ProfileError("--checkpointing needs two probed batch sizes; raise the memory limit or --max-batch")

    def backward_ms(batch: int) -> float:
        rows = [trainer.iteration(batch) for _ in range(options.warmup_iters + options.timed_iters)]
        return float(sorted(r[1] for r in rows[options.warmup_iters :])[len(rows[options.warmup_iters :]) // 2])

    plain_ms = backward_ms(hi)
    for key in blocks:
        checkpoint(trainer.model.get_submodule(key))
    param_bytes = float(sum(p.size_bytes for p in params))
    plateau = plateau_bytes(param_bytes, optimizer_state_bytes(options.optimizer) * sum(p.numel for p in params))
    plain = memory_line(sorted(plain_points.items()), plateau)
    modules = [trainer.model.get_submodule(key) for key in blocks]
    turn: dict[int, float] = {}
    walk: dict[int, float] = {}
    per_block: dict[int, list[float]] = {}

    def measure(batch: int) -> None:
        turn[batch], walk[batch], peaks = trainer.checkpointed_walk_peaks(batch, modules)
        if peaks:
            per_block[batch] = peaks

    for b in (lo, hi):
        measure(b)
    batch = hi
    for _ in range(CHECKPOINTED_EXTRA_PROBES):
        if len(above_plateau(sorted(walk.items()), plateau)) >= 2:
            break
        batch *= 2
        if ceiling_bytes is not None and plain[0] + plain[1] * batch > ceiling_bytes:
            break
        try:
            measure(batch)
        except (torch.OutOfMemoryError, RuntimeError) as err:
            if not _is_oom(err):
                raise
        if batch not in walk:  # out of memory: released outside the except block, whose traceback holds it
            trainer.release()
            break
    return {
        "checkpointed_forward_memory_points": [[b, max(turn[b], walk[b])] for b in sorted(walk)],
        "checkpointed_turn_memory_points": [[b, turn[b]] for b in sorted(turn)],
        "checkpointed_blocks_memory_points": [[b, walk[b]] for b in sorted(walk)],
        # per batch, the peak while backward runs each block (model order), where every block's was measured
        "checkpointed_block_walk_points": [[b, per_block[b]] for b in sorted(per_block)],
        # the blocks' backward ends on the plateau; the turn holds no block's gradient yet, so no plateau
        "checkpointed_per_sample_bytes": memory_line(sorted(walk.items()), plateau)[1],
        "checkpointed_turn_per_sample_bytes": memory_line(sorted(turn.items()), 0.0)[1],
        "checkpointing_bwd_slowdown": backward_ms(hi) / max(plain_ms, 1e-9),
        "checkpointing_batch": hi,
    }


def record_timeline(trainer: _Trainer, batch: int) -> tuple[tuple[ParamInfo, ...], tuple[int, ...]]:
    """When each parameter's gradient is ready, as a fraction of one backward pass (its own iteration).

    Uses ``register_post_accumulate_grad_hook``, the point where DDP's reducer sees a gradient ready.
    Returns the parameters in model order and the parameter indices in ready order.
    """
    named = [(n, p) for n, p in trainer.model.named_parameters() if p.requires_grad]
    inputs, target = trainer.batch(batch)
    trainer.optimizer.zero_grad(set_to_none=True)
    loss = trainer.forward_loss(inputs, target)
    marks: list[tuple[int, Any]] = []
    handles = []
    for index, (_, param) in enumerate(named):

        def hook(_p: torch.Tensor, index: int = index) -> None:
            if trainer.is_cuda:
                event = torch.cuda.Event(enable_timing=True)
                event.record()
                marks.append((index, event))
            else:
                marks.append((index, time.perf_counter()))

        handles.append(param.register_post_accumulate_grad_hook(hook))
    try:
        if trainer.is_cuda:
            start: Any = torch.cuda.Event(enable_timing=True)
            end: Any = torch.cuda.Event(enable_timing=True)
            start.record()
            loss.backward()
            end.record()
            torch.cuda.synchronize(trainer.device)
            total = start.elapsed_time(end)
            offsets = {i: start.elapsed_time(e) for i, e in marks}
        else:
            start = time.perf_counter()
            loss.backward()
            end = time.perf_counter()
            total = end - start
            offsets = {i: t - start for i, t in marks}
    finally:
        for handle in handles:
            handle.remove()
    trainer.optimizer.zero_grad(set_to_none=True)
    ready_order = tuple(i for i, _ in marks)
    if sorted(ready_order) != list(range(len(named))):
        # Parameters without a gradient in this graph are ready at the very end (DDP would find them unused).
        ready_order = ready_order + tuple(i for i in range(len(named)) if i not in offsets)
    params = tuple(
        ParamInfo(
            name=n,
            numel=p.numel(),
            size_bytes=p.numel() * p.element_size(),
            dtype=str(p.dtype).replace("torch.", ""),
            ready_frac=min(max(offsets.get(i, total) / total, 0.0), 1.0) if total > 0 else 1.0,
        )
        for i, (n, p) in enumerate(named)
    )
    return params, ready_order
