"""Synthetic values for tests that must not depend on measurements: profiles, bandwidth models, types."""

from __future__ import annotations

import numpy as np

from srifty.catalog import InstanceType
from srifty.compute import LatencyModel, MemoryModel, PhaseSamples, Profile
from srifty.compute.buckets import assign_buckets
from srifty.compute.profile import DeviceInfo, ParamInfo


def line(alpha_ms: float, beta_ms: float) -> LatencyModel:
    """t(B) = alpha·B + beta over 1..1024."""
    return LatencyModel((1.0, 1024.0), (alpha_ms + beta_ms, alpha_ms * 1024 + beta_ms), None, (), ())


def synthetic_profile(
    fw: tuple[float, float] = (1.0, 2.0),
    bw: tuple[float, float] = (2.0, 4.0),
    step: tuple[float, float] = (0.0, 1.0),
    cv: float = 0.0,
    param_mib: tuple[float, ...] = (4.0, 4.0, 8.0, 8.0),
    gpu: str | None = "T4",
    bucket_cap_mb: float | None = 5.0,
    model: str = "synthetic",
    estimated_from: str | None = None,
) -> Profile:
    """A profile with linear phases ``(alpha_ms, beta_ms)``, a relative spread ``cv`` and given parameters.

    Parameters become ready evenly through backward, last parameter first (as in a real network).
    """
    n = len(param_mib)
    params = tuple(
        ParamInfo(f"p{i}", int(m * 2**18), int(m * 2**20), "float32", (n - i) / n) for i, m in enumerate(param_mib)
    )
    order = tuple(range(n - 1, -1, -1))
    models = {"fw": line(*fw), "bw": line(*bw), "step": line(*step)}
    models["iter"] = line(fw[0] + bw[0] + step[0], fw[1] + bw[1] + step[1])
    samples = []
    for batch in (8, 64):
        jitter = np.array([1 - cv, 1 + cv])
        vals = {ph: tuple(float(models[ph].predict_ms(batch)[()]) * jitter) for ph in models}
        samples.append(PhaseSamples(batch, vals["fw"], vals["bw"], vals["step"], vals["iter"], None))
    buckets = assign_buckets(order, [p.size_bytes for p in params], [p.ready_frac for p in params], bucket_cap_mb)
    return Profile(
        model=model,
        model_kind="factory",
        input_description="synthetic",
        precision="fp32",
        optimizer="sgd",
        n_params=sum(p.numel for p in params),
        param_bytes=sum(p.size_bytes for p in params),
        device=DeviceInfo("cuda" if gpu else "cpu", gpu or "cpu", gpu, 1, 16 << 30, "test"),
        samples=tuple(samples),
        latency=models,
        memory=MemoryModel(1 << 30, 1 << 20),
        memory_points=((1, float(1 << 30)), (2, float((1 << 30) + (1 << 20)))),
        max_batch=1024,
        max_batch_limited_by="gpu_memory",
        params=params,
        ready_order=order,
        timeline_batch=64,
        bucket_cap_mb=bucket_cap_mb,
        buckets=tuple(buckets),
        warmup_iters=1,
        timed_iters=2,
        timing_method="synthetic",
        created_at="2026-01-01T00:00:00+00:00",
        srifty_version="test",
        estimated_from=estimated_from,
    )


class ConstantBusBandwidth:
    """Bus bandwidth independent of size: ``busbw_bytes_per_s`` for every row."""

    def __init__(self, busbw_bytes_per_s: float) -> None:
        self.busbw = busbw_bytes_per_s

    def predict_busbw_bytes_per_s(self, frame) -> np.ndarray:  # type: ignore[no-untyped-def]
        return np.full(len(frame), self.busbw)


def instance(
    name: str = "test.gpu", gpu: str = "T4", gpus: int = 1, gbps: float | None = 25.0, price: float = 1.0
) -> InstanceType:
    """A catalog-like VM type."""
    return InstanceType(
        name=name,
        cloud="aws",
        region="test-1",
        zones=("test-1a",),
        gpu_name=gpu,
        gpus_per_vm=gpus,
        gpu_memory_bytes=16 << 30,
        vcpus=8.0,
        ram_bytes=64 << 30,
        on_demand_usd_per_hour=price,
        spot_usd_per_hour_by_zone=(("test-1a", price / 3),),
        rated_network_gbps=gbps,
        gpu=None,
    )
