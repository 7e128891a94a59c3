"""Estimate a model's profile on a GPU nobody measured, from a measured profile, op by op.

For each phase ``p`` (``fw``, ``bw``, ``step``) and batch ``B``, the source's measured latency ``t_p(B)``
splits into a fixed *overhead* ``o_p`` (host work between ops: Python, autograd, launches; kept as
measured) and the ops' own times ``τ_i(B)`` (recorded op by op at two batch sizes, linear in between and
rescaled so that ``o_p + Σ τ_i(B) = t_p(B)`` exactly). On the target::

    t'_p(B) = o_p + Σ_i n_i · max(τ_i(B)/n_i · r_i(B), min(τ_i(B)/n_i, ℓ))

where ``n_i`` is the number of identical ops in record ``i``, ``r_i`` the ratio of the op's roofline time
on target and source (:func:`srifty.compute.roofline.roofline_ratio`), and ``ℓ`` the least time one op
takes on the target (``launch_floor_s``, default 5 µs on a GPU, an assumed kernel-launch latency; an op
already faster than ``ℓ`` on the source keeps its measured time). The iteration is scaled by the ratio
of the sums of its phases. Estimating a device from itself changes nothing (every ``r_i`` is 1).

Memory: the largest batch comes from the source's memory model and the target's memory (the source's
own largest batch when the source is the same GPU type). The estimate carries the source's spread,
widened by ``spread_scale = source.spread_scale · (1 + 0.25 · d)``, where ``d`` is the roofline distance
between the two devices (:meth:`DevicePeaks.log_distance`); the factor is a heuristic, not calibrated.

Pure numpy.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from srifty import __version__
from srifty.catalog import Catalog, GpuSpec, load_catalog
from srifty.compute.latency import LatencyModel, _isotonic
from srifty.compute.profile import PHASES, DeviceInfo, EstimateInfo, Profile
from srifty.compute.roofline import DevicePeaks, gpu_peaks, roofline_ratio
from srifty.compute.sharding import gpu_options, max_batch_for, memory_inputs
from srifty.compute.work import WORK_PHASES, OpWork
from srifty.errors import CatalogError, ProfileError, did_you_mean

GPU_LAUNCH_FLOOR_S = 5e-6
SPREAD_PER_LOG_DISTANCE = 0.25
GPU_MAX_BATCH_CAP = 8192
MS_PER_S = 1000.0

ROOFLINE_ASSUMPTIONS = (
    "each op's measured time scaled by the ratio of its roofline time max(FLOPs/peak, bytes/bandwidth) on "
    "target and source; datasheet peaks for GPUs (FP32 for fp32 ops, no TF32), measured ceilings for CPUs; "
    "host overhead between ops kept as measured; at least the launch floor per op; largest batch from the "
    "memory model"
)


def resolve_gpu(gpu: GpuSpec | str, catalog: Catalog | None = None) -> GpuSpec:
    """The datasheet record of ``gpu`` (a name, matched case-insensitively, or a :class:`GpuSpec`).

    Raises:
        CatalogError: no datasheet row for that name (with the closest names).
    """
    if isinstance(gpu, GpuSpec):
        return gpu
    specs = (catalog or load_catalog()).gpu_specs
    by_lower = {name.lower(): spec for name, spec in specs.items()}
    if gpu.strip().lower() in by_lower:
        return by_lower[gpu.strip().lower()]
    raise CatalogError(
        f"no datasheet figures for GPU '{gpu}'.{did_you_mean(gpu, specs)} Known: {', '.join(sorted(specs))}."
    )


def source_peaks(profile: Profile, catalog: Catalog | None = None) -> DevicePeaks:
    """Roofline ceilings of the device ``profile`` was measured on: recorded in the profile, or the datasheet.

    Raises:
        ProfileError: a CPU profile without measured ceilings (schema 1, or made with op counting off).
    """
    d = profile.device
    if d.peak_flops_per_s and d.mem_bw_bytes_per_s:
        return DevicePeaks(
            label=d.label,
            flops_per_s=d.peak_flops_per_s,
            tensor16_flops_per_s=d.peak_tensor16_flops_per_s,
            mem_bw_bytes_per_s=d.mem_bw_bytes_per_s,
            source=d.peaks_source or "measured",
        )
    if d.gpu:
        return gpu_peaks(resolve_gpu(d.gpu, catalog))
    raise ProfileError(
        f"the profile of {profile.model} on {d.label} records no roofline ceilings for its device; profile it "
        "again with this srifty (`srifty profile --model ...`), which measures them."
    )


def _check_usable(profile: Profile, need_times: bool = True) -> OpWork:
    """The op counts of a measured profile (with per-op times when ``need_times``).

    Raises:
        ProfileError: the profile is an estimate, or has no (timed) op counts.
    """
    if profile.is_estimate:
        raise ProfileError(
            f"the profile of {profile.model} for {profile.device.label} is itself an estimate (from "
            f"{profile.estimated_from}); estimate from the measured profile it came from."
        )
    usable = profile.work is not None and (profile.work.has_times if need_times else bool(profile.work.records))
    if profile.work is None or not usable:
        raise ProfileError(
            f"the profile of {profile.model} on {profile.device.label} has no per-op work counts (schema 1, or "
            "profiled with --no-op-counts); profile it again with `srifty profile --model ...`."
        )
    return profile.work


def target_max_batch(source: Profile, spec: GpuSpec) -> tuple[int, str]:
    """Largest batch on ``spec`` and what limits it.

    Raises:
        ProfileError: not even a batch of 1 fits by the memory model.
    """
    if source.device.gpu == spec.name and not source.is_estimate:
        return source.max_batch, source.max_batch_limited_by
    fits = source.memory.max_batch(spec.memory_bytes)
    if fits < 1:
        # It may still fit sharded: the model state spread over many GPUs, the activations of the local batch
        # and one block's gathered parameters each GPU's own (srifty.compute.sharding).
        fits = max_batch_for(memory_inputs(source), gpu_options("fsdp", 1 << 16), spec.memory_bytes)
        if fits >= 1:
            return min(fits, GPU_MAX_BATCH_CAP), "gpu_memory (memory model, sharded)"
        need = source.memory.peak_bytes(1) / 2**30
        raise ProfileError(
            f"{source.model} does not fit on a {spec.name} ({spec.memory_bytes / 2**30:.0f} GiB) even at batch 1, "
            f"sharded or not: its memory model needs {need:.1f} GiB plus the GPU's reserve unsharded."
        )
    if fits >= GPU_MAX_BATCH_CAP:
        return GPU_MAX_BATCH_CAP, "max_batch_cap"
    return fits, "gpu_memory (memory model)"


def batch_grid(models: Sequence[LatencyModel], max_batch: int) -> NDArray[np.float64]:
    """Where an estimated curve is evaluated: the source curves' vertices, powers of two, and ``max_batch``."""
    points = {float(x) for m in models for x in m.vertices_batch}
    points |= {float(2**k) for k in range(int(np.log2(max(max_batch, 1))) + 1)} | {float(max_batch)}
    return np.asarray(sorted(points), dtype=float)


def curve(batches: NDArray[np.float64], values_ms: NDArray[np.float64], keep: set[float]) -> LatencyModel:
    """A :class:`LatencyModel` through ``(batches, values_ms)`` made non-decreasing; points not in ``keep`` that
    lie on the line through their neighbours are dropped, so an unchanged curve keeps its own vertices."""
    ys = _isotonic(np.maximum(np.asarray(values_ms, dtype=float), 0.0))
    xs = np.asarray(batches, dtype=float)
    kept = [0]
    for i in range(1, len(xs) - 1):
        x0, y0 = xs[kept[-1]], ys[kept[-1]]
        line = y0 + (ys[i + 1] - y0) * (xs[i] - x0) / (xs[i + 1] - x0)
        if xs[i] in keep or abs(ys[i] - line) > 1e-9 * max(abs(ys[i]), 1e-12):
            kept.append(i)
    if len(xs) > 1:
        kept.append(len(xs) - 1)
    return LatencyModel(tuple(float(xs[i]) for i in kept), tuple(float(ys[i]) for i in kept), None, (), ())


def phase_estimate_ms(
    source: Profile,
    phase: str,
    batches: NDArray[np.float64],
    src: DevicePeaks,
    tgt: DevicePeaks,
    launch_floor_s: float,
) -> NDArray[np.float64]:
    """``t'_p(B)`` at each batch (see the module docstring) for one phase of ``fw``, ``bw``, ``step``."""
    work = _check_usable(source)
    measured = source.predict_ms(phase, batches)
    records = work.select(phase)
    if not records:
        return measured
    counts = np.asarray([r.count for r in records], dtype=float)[:, None]
    tau = work.time_s_at(records, batches) * MS_PER_S
    at_work = np.asarray(sorted(set(work.batches)), dtype=float)
    gaps = source.predict_ms(phase, at_work) - (work.time_s_at(records, at_work) * MS_PER_S).sum(axis=0)
    overhead = np.minimum(max(float(gaps.min()), 0.0), measured)
    total = tau.sum(axis=0)
    scale = np.divide(measured - overhead, total, out=np.zeros_like(total), where=total > 0)
    each = tau * scale / counts
    ratio = roofline_ratio(
        work.flops_at(records, batches), work.bytes_at(records, batches), [r.dtype for r in records], src, tgt
    )
    floor = np.minimum(each, launch_floor_s * MS_PER_S)
    estimated = overhead + (np.maximum(each * ratio, floor) * counts).sum(axis=0)
    return np.where(total > 0, estimated, measured)


def _iteration(measured: dict[str, NDArray[np.float64]], estimated: dict[str, NDArray[np.float64]]) -> NDArray:
    """The iteration scales as the sum of its phases: ``t'_iter = t_iter · Σ t'_p / Σ t_p``.

    The iteration is fitted on its own, so beyond the probes its line may drift from the sum of the phase
    lines; a ratio keeps that drift proportional instead of carrying it across devices in milliseconds.
    """
    phases_src = sum(measured[p] for p in WORK_PHASES)
    phases_tgt = sum(estimated[p] for p in WORK_PHASES)
    ratio = np.divide(phases_tgt, phases_src, out=np.ones_like(phases_tgt), where=phases_src > 0)
    return measured["iter"] * ratio


def spread_scale_for(source: Profile, src: DevicePeaks, tgt: DevicePeaks) -> float:
    """``source.spread_scale · (1 + 0.25 · d)``; 1× the source's when the rooflines are equal."""
    return source.spread_scale * (1.0 + SPREAD_PER_LOG_DISTANCE * src.log_distance(tgt))


def estimated_device(spec: GpuSpec, source: Profile) -> DeviceInfo:
    """The device record of an estimate: the catalog GPU with its datasheet ceilings, nothing measured."""
    return DeviceInfo(
        kind="cuda",
        name=f"{spec.name} (estimated, not measured)",
        gpu=spec.name,
        threads=0,
        memory_bytes=spec.memory_bytes,
        torch_version=source.device.torch_version,
        cuda_version=None,
        peak_flops_per_s=spec.fp32_flops_per_s,
        peak_tensor16_flops_per_s=spec.tensor16_flops_per_s,
        mem_bw_bytes_per_s=spec.mem_bw_bytes_per_s,
        peaks_source="datasheet",
    )


def estimate_profile(
    source: Profile,
    gpu: GpuSpec | str,
    *,
    catalog: Catalog | None = None,
    launch_floor_s: float = GPU_LAUNCH_FLOOR_S,
    reason: str | None = None,
) -> Profile:
    """Predict ``source``'s profile on ``gpu`` by roofline scaling, op by op (see the module docstring).

    Args:
        source: a measured profile with per-op work counts (schema 2).
        gpu: the target, a catalog GPU name (``"T4"``) or its :class:`GpuSpec`.
        catalog: where to look names up (default: the bundled catalog).
        launch_floor_s: least time of one op on the target, in seconds.
        reason: why this source was chosen (recorded in the estimate; see :func:`choose_source`).

    Returns:
        A new profile marked ``estimated_from`` the source's device, with no samples of its own.

    Raises:
        CatalogError: unknown GPU name.
        ProfileError: the source is an estimate, lacks op counts or ceilings, or the model does not fit.
    """
    if launch_floor_s < 0:
        raise ProfileError(f"launch_floor_s must be non-negative, got {launch_floor_s}")
    spec = resolve_gpu(gpu, catalog)
    work = _check_usable(source)
    src, tgt = source_peaks(source, catalog), gpu_peaks(spec)
    max_batch, limited_by = target_max_batch(source, spec)
    grid = batch_grid([source.latency[p] for p in PHASES], max_batch)
    measured = {p: source.predict_ms(p, grid) for p in PHASES}
    estimated = {p: phase_estimate_ms(source, p, grid, src, tgt, launch_floor_s) for p in WORK_PHASES}
    estimated["iter"] = _iteration(measured, estimated)
    latency = {p: curve(grid, estimated[p], set(source.latency[p].vertices_batch)) for p in PHASES}
    why = reason or f"the only source given: {source.device.label}"
    info = EstimateInfo(
        method="roofline",
        source_device=source.device.label,
        source_device_name=source.device.name,
        source_created_at=source.created_at,
        reason=why,
        launch_floor_s=launch_floor_s,
        assumptions=ROOFLINE_ASSUMPTIONS,
    )
    spread = spread_scale_for(source, src, tgt)
    return assemble_estimate(source, spec, latency, max_batch, limited_by, info, spread, work)


def assemble_estimate(
    source: Profile,
    spec: GpuSpec,
    latency: dict[str, LatencyModel],
    max_batch: int,
    limited_by: str,
    info: EstimateInfo,
    spread_scale: float,
    work: OpWork,
) -> Profile:
    """The estimated profile: the source's model, memory model and timeline, the estimate's curves."""
    return source.derive(
        device=estimated_device(spec, source),
        samples=(),
        latency=latency,
        memory_points=(),
        max_batch=max_batch,
        max_batch_limited_by=limited_by,
        warmup_iters=0,
        timed_iters=0,
        timing_method="none (estimated)",
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        srifty_version=__version__,
        notes=f"ESTIMATE for {spec.name} ({info.method}), not a measurement: {info.reason}",
        work=work.without_times(),
        estimated_from=f"paleo ({info.source_device} op counts)" if info.method == "paleo" else info.source_device,
        spread_scale=spread_scale,
        estimate=info,
        spread_points=source.spread() if info.method == "roofline" else (),
    )


def measure_command(p: Profile) -> str:
    """The one command that would measure ``p`` for real, on a VM with its GPU (for tables of estimates)."""
    extra = p.extra or {}
    parts = [f"srifty profile --model {p.model} --device cuda --precision {p.precision} --optimizer {p.optimizer}"]
    if p.model_kind == "hf" and extra.get("seq_len"):
        parts.append(f"--seq-len {extra['seq_len']}")
    if p.model_kind == "torchvision" and extra.get("image_size"):
        parts.append(f"--image-size {extra['image_size']}")
    return " ".join(parts)


@dataclass(frozen=True)
class SourceChoice:
    """Which profile to estimate a GPU from, and why.

    Attributes:
        profile: the chosen profile.
        reason: one sentence, for tables and the estimate record.
        measured_on_target: the chosen profile was measured on the target GPU itself (nothing to estimate).
        distance: roofline distance from the chosen source to the target (0 when measured on it).
    """

    profile: Profile
    reason: str
    measured_on_target: bool
    distance: float


def choose_source(profiles: Sequence[Profile], gpu: GpuSpec | str, catalog: Catalog | None = None) -> SourceChoice:
    """The profile closest to ``gpu``: one measured on it; else the measured GPU profile with the nearest
    roofline (``|ln ΔFLOP/s| + |ln Δbandwidth|``); a CPU profile only when no GPU profile has op counts.

    GPU sources come first because a GPU-to-GPU ratio compares like with like (datasheet peaks on both
    sides, the same kind of kernels); a CPU source is far away on every axis.

    Raises:
        ProfileError: no profiles, profiles of different models, or none usable (each one's reason listed).
        CatalogError: unknown GPU name.
    """
    spec = resolve_gpu(gpu, catalog)
    if not profiles:
        raise ProfileError(f"no profiles given to estimate {spec.name} from; pass at least one measured profile.")
    models = sorted({p.model for p in profiles})
    if len(models) > 1:
        raise ProfileError(f"the profiles are of different models ({', '.join(models)}); pass profiles of one model.")
    measured = [p for p in profiles if not p.is_estimate]
    on_target = sorted((p for p in measured if p.device.gpu == spec.name), key=lambda p: p.created_at)
    if on_target:
        return SourceChoice(on_target[-1], f"measured on {spec.name}", True, 0.0)
    tgt = gpu_peaks(spec)
    usable: list[tuple[tuple[int, float, str], Profile, float]] = []
    rejected: list[str] = []
    for p in profiles:
        try:
            _check_usable(p)
            d = source_peaks(p, catalog).log_distance(tgt)
        except (ProfileError, CatalogError) as err:
            rejected.append(str(err))
            continue
        usable.append(((0 if p.device.kind == "cuda" else 1, d, p.created_at), p, d))
    if not usable:
        raise ProfileError(f"no profile can be the source of an estimate for {spec.name}: " + " ".join(rejected))
    usable.sort(key=lambda item: (item[0][0], item[0][1], item[0][2]))
    _, best, distance = usable[0]
    if len(usable) == 1:
        why = f"the only measured profile with op counts ({best.device.label}, roofline distance {distance:.2f})"
    else:
        others = ", ".join(f"{p.device.label} {d:.2f}" for _, p, d in usable[1:])
        kind = "GPU sources before CPU, then " if any(k[0] == 1 for k, _, _ in usable) else ""
        why = (
            f"closest of {len(usable)} measured profiles ({kind}smallest roofline distance): "
            f"{best.device.label} {distance:.2f}; others {others}"
        )
    return SourceChoice(best, why, False, distance)


def pick_source(profiles: Sequence[Profile], gpu: GpuSpec | str, catalog: Catalog | None = None) -> Profile:
    """The profile :func:`choose_source` picks (its ``reason`` is in :class:`SourceChoice`)."""
    return choose_source(profiles, gpu, catalog).profile


def estimate_from(profiles: Sequence[Profile], gpu: GpuSpec | str, catalog: Catalog | None = None) -> Profile:
    """The measured profile of ``gpu`` if one is given, else an estimate from the closest source."""
    choice = choose_source(profiles, gpu, catalog)
    if choice.measured_on_target:
        return choice.profile
    return estimate_profile(choice.profile, gpu, catalog=catalog, reason=choice.reason)
