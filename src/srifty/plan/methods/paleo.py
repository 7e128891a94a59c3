"""Paleo (Qi, Sparks and Talwalkar, ICLR 2017): a purely analytical latency model, the planner's baseline.

Paleo predicts each layer's time from its work alone, with no measurement: ``FLOPs / (peak · PPP)`` to
compute plus ``bytes / (bandwidth · PPP)`` to read inputs and weights and write outputs, summed
(``TalwalkarLab/paleo``, ``paleo/profilers/flops_profiler.py``: ``_estimate_comp_time`` and
``_estimate_comm_time``; PPP, the "platform percent of peak", defaults to 1.0 in
``paleo/profilers/base.py``). The weight update reads weights and updates and writes weights:
``2·n_params`` FLOPs and ``3·param_bytes`` bytes (``profile_apply_updates`` there). Paleo models
convolution, inner-product, pooling and dropout layers and leaves out bias and activation; here the layers
are the ops that carry FLOPs in torch's flop counter (convolutions, matrix products, attention), so
normalisation, activation and pooling are left out unless ``include_memory_bound_ops``.

This module takes the per-op counts of a profile (never its times) and returns an analytical
:class:`~srifty.compute.profile.Profile` for a GPU. Paleo has no variance model, so the profile's spread
is zero. Its allreduce model is :class:`srifty.plan.methods.paleo_net.PaleoBandwidthModel`. Pure numpy.
"""

from __future__ import annotations

import numpy as np

from srifty.catalog import Catalog, GpuSpec
from srifty.compute import (
    EstimateInfo,
    LatencyModel,
    Profile,
    assemble_estimate,
    batch_grid,
    curve,
    gpu_peaks,
    resolve_gpu,
    target_max_batch,
)
from srifty.errors import ProfileError

PALEO_ASSUMPTIONS = (
    "Paleo: per layer FLOPs/(peak*ppp) + bytes/(bandwidth*ppp), summed; weight update 2*params FLOPs and "
    "3*param bytes; datasheet peaks (FP32 for fp32 ops); no launch overhead, no measurement, no variance; "
    "largest batch from srifty's memory model"
)


def paleo_profile(
    profile: Profile,
    gpu: GpuSpec | str,
    *,
    catalog: Catalog | None = None,
    ppp_comp: float = 1.0,
    include_memory_bound_ops: bool = False,
) -> Profile:
    """Paleo's prediction of ``profile``'s model on ``gpu``, from the profile's op counts alone.

    Args:
        profile: any profile with op counts (measured or estimated; its times are not used).
        gpu: a catalog GPU name or :class:`GpuSpec`.
        catalog: where to look names up.
        ppp_comp: Paleo's platform percent of peak (1.0 in Paleo's defaults), applied to compute and memory.
        include_memory_bound_ops: also count ops without FLOPs (normalisation, activation, pooling) as
            memory traffic; Paleo itself leaves bias and activation out.

    Raises:
        ProfileError: no op counts, a bad ``ppp_comp``, or the model does not fit on the GPU.
        CatalogError: unknown GPU name.
    """
    if not 0 < ppp_comp <= 1:
        raise ProfileError(f"ppp_comp is a fraction of peak in (0, 1], got {ppp_comp}")
    if profile.work is None:
        raise ProfileError(
            f"the profile of {profile.model} has no per-op counts (schema 1, or profiled with --no-op-counts); "
            "Paleo needs them: profile it again with `srifty profile --model ...`."
        )
    work = profile.work
    spec = resolve_gpu(gpu, catalog)
    peaks = gpu_peaks(spec)
    max_batch, limited_by = target_max_batch(profile, spec)
    grid = batch_grid([], max_batch)
    times_ms: dict[str, np.ndarray] = {}
    for phase in ("fw", "bw"):
        records = [r for r in work.select(phase) if include_memory_bound_ops or r.flops[1] > 0]
        if not records:
            times_ms[phase] = np.zeros_like(grid)
            continue
        ceilings = np.asarray([peaks.flops_ceiling(r.dtype) for r in records])[:, None]
        compute_s = work.flops_at(records, grid) / (ceilings * ppp_comp)
        memory_s = work.bytes_at(records, grid) / (peaks.mem_bw_bytes_per_s * ppp_comp)
        times_ms[phase] = 1000.0 * (compute_s + memory_s).sum(axis=0)
    update_s = 2.0 * profile.n_params / (peaks.flops_per_s * ppp_comp) + 3.0 * profile.param_bytes / (
        peaks.mem_bw_bytes_per_s * ppp_comp
    )
    times_ms["step"] = np.full_like(grid, 1000.0 * update_s)
    times_ms["iter"] = times_ms["fw"] + times_ms["bw"] + times_ms["step"]
    latency: dict[str, LatencyModel] = {p: curve(grid, v, set()) for p, v in times_ms.items()}
    info = EstimateInfo(
        method="paleo",
        source_device=profile.device.label,
        source_device_name=profile.device.name,
        source_created_at=profile.created_at,
        reason=f"analytical (Paleo, ppp={ppp_comp:g}) from the op counts of the {profile.device.label} profile",
        launch_floor_s=0.0,
        assumptions=PALEO_ASSUMPTIONS,
    )
    return assemble_estimate(profile, spec, latency, max_batch, limited_by, info, 0.0, work.without_times())
