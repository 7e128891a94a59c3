"""srifty's profiler, driven against the emulated cloud: a :class:`~srifty.compute.Profile` made on srifty's
side from the cloud's raw measurements, as ``srifty profile`` makes one on a real GPU.

On one GPU of one rented VM (:meth:`srifty.cloud.EmulatedCloud.profiling_session`):

1. **Largest batch**: srifty's doubling-then-bisection search (:func:`srifty.compute.memory.find_max_batch`)
   over "does one iteration at this batch fit?";
2. **Latency**: srifty's own probe placement and GPU fits (:func:`srifty.compute.fit_latency_curve`,
   :func:`srifty.compute.latency.fit_phase_model`) over batches it chooses, each timed for ``timed_iters``
   iterations;
3. **Memory**: srifty's memory model (:func:`srifty.compute.fit_memory_model`) through the peaks at the probed
   batches;
4. **Gradient timeline**: one recorded backward at the largest probed batch, bucketed by srifty's DDP bucket
   map (:func:`srifty.compute.assign_buckets`).

Op counts do not depend on the device: they come from a profile of the same model srifty already has (the
bundled CPU profile, or a given one), without its times. The cloud fits nothing and sees none of this.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import numpy as np

from srifty import __version__
from srifty.catalog import Catalog
from srifty.cloud import EMULATED_EPOCH_S, EmulatedCloud, ProfilingSession
from srifty.compute import (
    DeviceInfo,
    ParamInfo,
    PhaseSamples,
    Profile,
    find_max_batch,
    fit_memory_model,
    param_buckets,
    probe_latency,
)
from srifty.errors import ProfileError

GPU_MAX_BATCH_CAP = 8192


def profile_session(
    session: ProfilingSession,
    template: Profile,
    catalog: Catalog,
    n_probes: int = 4,
    timed_iters: int = 20,
) -> Profile:
    """Profile the session's model on its GPU (see the module docstring).

    Args:
        session: one GPU of one VM on the emulated cloud.
        template: a profile of the same model on any device: its names, input, precision and op counts (not
            its times) describe the model.
        catalog: for the GPU's datasheet ceilings (recorded as a real GPU profile records them).
        n_probes: batches timed (the paper's 4).
        timed_iters: iterations timed per batch.

    Raises:
        ProfileError: not even a batch of 1 fits.
    """
    max_batch = find_max_batch(session.fits, GPU_MAX_BATCH_CAP)
    if max_batch < 1:
        raise ProfileError(f"{session.model} does not fit one {session.gpu} even at batch 1.")

    def measure(batch: int) -> PhaseSamples:
        timed = session.time(batch, timed_iters)
        return PhaseSamples(batch, timed.fw_ms, timed.bwd_ms, timed.step_ms, timed.iter_ms, timed.peak_bytes)

    samples, latency = probe_latency(measure, max_batch, n_probes, flat_floor=True)  # a GPU: srifty's GPU fit
    batches = [s.batch for s in samples]
    points = tuple((s.batch, float(s.peak_bytes or 0.0)) for s in samples)
    memory = fit_memory_model([b for b, _ in points], [p for _, p in points]) if len(points) > 1 else template.memory
    params, ready_order = _timeline(session, batches[-1])
    spec = catalog.gpu_spec(session.gpu)
    device = DeviceInfo(
        kind="cuda",
        name=f"{session.gpu} on {session.instance.name}, {session.label}",
        gpu=session.gpu,
        threads=0,
        memory_bytes=session.memory_bytes,
        torch_version="emulated",
        peak_flops_per_s=spec.fp32_flops_per_s,
        peak_tensor16_flops_per_s=spec.tensor16_flops_per_s,
        mem_bw_bytes_per_s=spec.mem_bw_bytes_per_s,
        peaks_source="datasheet",
    )
    buckets = param_buckets(params, ready_order, template.bucket_cap_mb)
    measured = template.derive(
        device=device,
        samples=samples,
        latency=latency,
        memory_points=points,
        max_batch=max_batch,
        max_batch_limited_by="max_batch_cap" if max_batch == GPU_MAX_BATCH_CAP else "gpu_memory",
        warmup_iters=0,
        timed_iters=timed_iters,
        timing_method="emulated cloud: timed iterations of one VM's GPU",
        created_at=dt.datetime.fromtimestamp(EMULATED_EPOCH_S, dt.UTC).isoformat(timespec="seconds"),
        srifty_version=__version__,
        notes=f"EMULATED: measured on {session.label}, not on real hardware",
        work=None if template.work is None else template.work.without_times(),
        extra={**dict(template.extra), "emulated_cloud": session.label, "instance_type": session.instance.name},
    )
    # What this GPU measured replaces what the template knew of memory and the gradient timeline.
    return measured.with_changes(
        memory=memory,
        n_params=sum(p.numel for p in params),
        param_bytes=sum(p.size_bytes for p in params),
        params=params,
        ready_order=ready_order,
        timeline_batch=batches[-1],
        buckets=tuple(buckets),
    )


def _timeline(session: ProfilingSession, batch: int) -> tuple[tuple[ParamInfo, ...], tuple[int, ...]]:
    """Parameters in model order (here: the order the record names them) and their ready order."""
    record = session.gradient_timeline(batch)
    backward = max(record.backward_ms, 1e-12)
    params = tuple(
        ParamInfo(name, size // 4, size, "float32", float(np.clip(t / backward, 0.0, 1.0)))
        for name, size, t in zip(record.names, record.bytes, record.ready_ms, strict=True)
    )
    return params, tuple(range(len(params)))


def profile_gpus(
    cloud: EmulatedCloud,
    model: str,
    instance_types: list[str] | tuple[str, ...],
    seed: int,
    template: Profile,
    catalog: Catalog,
) -> dict[str, Profile]:
    """One emulated-cloud profile per GPU type among ``instance_types`` (on the first type with that GPU)."""
    from srifty.cloud import named_rng

    profiles: dict[str, Profile] = {}
    for name in instance_types:
        gpu = cloud.instance(name).gpu_name
        if gpu not in profiles:
            session = cloud.profiling_session(name, named_rng(seed, "profile", model, gpu), model=model)
            profiles[gpu] = profile_session(session, template, catalog)
    return profiles


def templates_for(models: list[str], given: Mapping[str, Profile]) -> dict[str, Profile]:
    """A profile describing each model (a given one, else the bundled one)."""
    from srifty.compute import bundled_profiles_for

    out = {}
    for model in models:
        if model in given:
            out[model] = given[model]
            continue
        found = [p for p in bundled_profiles_for(model) if not p.is_estimate]
        if not found:
            raise ProfileError(f"no profile describes '{model}'; pass one with --profiles DIR.")
        out[model] = found[0]
    return out
