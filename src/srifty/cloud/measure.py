"""What srifty can learn about the emulated cloud: compute profiles and allreduce probe rows (EMULATED).

Both are *measurements of the emulated truth*, made as srifty would make them on real VMs, so the
pipeline has to learn everything it knows:

* :func:`measure_profile` profiles one GPU of one VM: the largest batch by doubling and bisection (a
  batch beyond the truth's memory limit "fails"), up to ``n_probes`` batches chosen by srifty's own
  :func:`~srifty.compute.fit_latency_curve`, ``timed_iters`` noisy iterations each, and srifty's own
  piecewise-linear fits. The gradient timeline, bucket map, memory model and op counts are copied from
  the source profile (they do not depend on the device).
* :func:`probe_rows` is the paper's grid probe: allreduces of every size, node count and concurrency,
  repeated, in the probe-row schema of :mod:`srifty.vocab.probes`, so ``BandwidthModel().fit`` and
  ``AlphaBetaModel().fit`` read them as they read real probes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np

from srifty import __version__
from srifty.catalog import GpuSpec, InstanceType
from srifty.cloud.compute import ComputeTruth
from srifty.cloud.network import LinkSetup, allreduce_phases_s
from srifty.cloud.params import CloudParams
from srifty.compute import PhaseSamples, Profile, fit_latency_curve, fit_piecewise_linear
from srifty.compute.latency import default_candidates
from srifty.compute.memory import find_max_batch
from srifty.compute.profile import PHASES, DeviceInfo
from srifty.vocab.busbw import algbw_bytes_per_s, busbw_bytes_per_s
from srifty.vocab.probes import probe_frame

GPU_MAX_BATCH_CAP = 8192
#: Probe rows carry this epoch as their clock (the emulated cloud never reads the wall clock).
EMULATED_EPOCH_S = 1.8e9


def measure_profile(
    truth: ComputeTruth,
    source: Profile,
    instance: InstanceType,
    spec: GpuSpec,
    spatial_factor: float,
    rng: np.random.Generator,
    label: str,
    n_probes: int = 4,
    timed_iters: int = 20,
) -> Profile:
    """Profile ``truth`` on one GPU of one VM of ``instance`` whose speed factor is ``spatial_factor``.

    Returns a profile marked as measured on the emulated cloud (``label`` names it), not on hardware.
    """
    cap = GPU_MAX_BATCH_CAP
    max_batch = find_max_batch(lambda b: b <= truth.max_batch, cap)
    samples: dict[int, PhaseSamples] = {}

    def measure(batch: int) -> float:
        x = spatial_factor * truth.temporal_factors(rng, (timed_iters,))
        fw, bwd, st = (truth.mean_ms(p, batch)[()] * x for p in ("fw", "bw", "step"))
        it = fw + bwd + st
        samples[batch] = PhaseSamples(
            batch,
            tuple(float(v) for v in fw),
            tuple(float(v) for v in bwd),
            tuple(float(v) for v in st),
            tuple(float(v) for v in it),
            source.memory.peak_bytes(batch),
        )
        return samples[batch].robust_mean_ms("iter")

    candidates = default_candidates(max_batch)
    if candidates[-1] != max_batch:
        candidates.append(max_batch)
    latency = {"iter": fit_latency_curve(measure, max_batch, n_probes, candidates, flat_floor=True)}
    batches = sorted(samples)
    for phase in PHASES[:-1]:
        values = [samples[b].robust_mean_ms(phase) for b in batches]
        latency[phase] = fit_piecewise_linear(batches, values, flat_floor=True)  # a GPU: srifty's GPU fit
    device = DeviceInfo(
        kind="cuda",
        name=f"{spec.name} on {instance.name}, {label}",
        gpu=spec.name,
        threads=0,
        memory_bytes=spec.memory_bytes,
        torch_version="emulated",
        peak_flops_per_s=spec.fp32_flops_per_s,
        peak_tensor16_flops_per_s=spec.tensor16_flops_per_s,
        mem_bw_bytes_per_s=spec.mem_bw_bytes_per_s,
        peaks_source="datasheet",
    )
    return source.derive(
        device=device,
        samples=tuple(samples[b] for b in batches),
        latency=latency,
        memory_points=tuple((b, float(samples[b].peak_bytes or 0.0)) for b in batches),
        max_batch=max_batch,
        max_batch_limited_by="max_batch_cap" if max_batch == cap else "gpu_memory",
        warmup_iters=0,
        timed_iters=timed_iters,
        timing_method="emulated cloud: true per-iteration times of one VM",
        created_at=dt.datetime.fromtimestamp(EMULATED_EPOCH_S, dt.UTC).isoformat(timespec="seconds"),
        srifty_version=__version__,
        notes=f"EMULATED: measured on {label}, not on real hardware",
        work=None if source.work is None else source.work.without_times(),
        extra={**dict(source.extra), "emulated_cloud": label, "instance_type": instance.name},
    )


def probe_rows(
    instance: InstanceType,
    setups: Sequence[tuple[int, LinkSetup | None]],
    sizes_bytes: Sequence[int],
    concurrency: Sequence[int],
    repeats: int,
    allocation_id: str,
    zone: str,
    rng: np.random.Generator,
    params: CloudParams,
    label: str,
    clock_s: float,
) -> list[dict[str, Any]]:
    """Probe rows of one allocation: for each ``(n_nodes, setup)``, size, concurrency and repeat, ``k``
    concurrent allreduces started together; the row's time is when all ``k`` have finished (work-conserving
    sharing: latency plus ``k`` data parts), as ``srifty probe`` times a round."""
    sizes = np.asarray(sizes_bytes, dtype=float)
    gpus = instance.gpus_per_vm
    rows: list[dict[str, Any]] = []
    for n_nodes, setup in setups:
        world = n_nodes * gpus
        if setup is None or world < 2:
            continue
        latency_s, data_s = allreduce_phases_s(sizes, setup, params)
        for k in concurrency:
            for repeat in range(repeats):
                noise = rng.lognormal(0.0, params.network_temporal_sigma, size=len(sizes))
                jitter = rng.lognormal(0.0, params.probe_jitter_sigma, size=len(sizes))
                times = (latency_s + k * data_s * noise) * jitter
                for size, time_s in zip(sizes_bytes, times, strict=True):
                    clock_s += float(time_s) + 1e-3
                    rows.append(
                        _row(
                            instance,
                            size,
                            world,
                            n_nodes,
                            k,
                            repeat,
                            float(time_s),
                            allocation_id,
                            zone,
                            label,
                            clock_s,
                        )
                    )
    return rows


def _row(
    instance: InstanceType,
    size: int,
    world: int,
    n_nodes: int,
    k: int,
    repeat: int,
    time_s: float,
    allocation_id: str,
    zone: str,
    label: str,
    clock_s: float,
) -> dict[str, Any]:
    return {
        "busbw_bytes_per_s": float(busbw_bytes_per_s(size, world, time_s)),
        "algbw_bytes_per_s": float(algbw_bytes_per_s(size, time_s)),
        "time_s": time_s,
        "measured_time_s": time_s,
        "size_bytes": int(size),
        "world_size": world,
        "n_nodes": n_nodes,
        "gpus_per_node": instance.gpus_per_vm,
        "n_concurrent": k,
        "repeat": repeat,
        "inner_iters": 1,
        "backend": "emulated-nccl",
        "device": "emulated",
        "dtype": "float32",
        "cloud": instance.cloud,
        "region": instance.region,
        "zone": zone,
        "instance_type": instance.name,
        "gpu": instance.gpu_name,
        "cpu": "emulated",
        "rated_network_gbps": float("nan") if instance.rated_network_gbps is None else instance.rated_network_gbps,
        "allocation_id": allocation_id,
        "run_id": allocation_id,
        "host": "emulated-vm-0",
        "timestamp_s": clock_s,
        "emulated": True,
        "emulation_scale": 1.0,
        "shaped_gbps": float("nan"),
        "slowest_link_gbps": float("nan"),
        "intra_node_shaped_gbps": float("nan"),
        "rate_variation": 0.0,
        "testbed_name": label,
    }


def rows_to_frame(rows: Sequence[dict[str, Any]]) -> Any:
    """Probe rows as a frame in the schema's column order and dtypes."""
    return probe_frame(rows)
