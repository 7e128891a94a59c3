"""Synthetic values for tests that must not depend on measurements: profiles, bandwidth models, types."""

from __future__ import annotations

import numpy as np

from srifty.catalog import InstanceType
from srifty.compute import LatencyModel, MemoryModel, OpRecord, OpWork, PhaseSamples, Profile
from srifty.compute.buckets import assign_buckets
from srifty.compute.profile import DeviceInfo, ParamInfo


def line(alpha_ms: float, beta_ms: float) -> LatencyModel:
    """t(B) = alpha·B + beta over 1..1024."""
    return LatencyModel((1.0, 1024.0), (alpha_ms + beta_ms, alpha_ms * 1024 + beta_ms), None, (), ())


def synthetic_profile(
    fw: tuple[float, float] = (1.0, 2.0),
    bwd: tuple[float, float] = (2.0, 4.0),
    step: tuple[float, float] = (0.0, 1.0),
    cv: float = 0.0,
    param_mib: tuple[float, ...] = (4.0, 4.0, 8.0, 8.0),
    gpu: str | None = "T4",
    bucket_cap_mb: float | None = 5.0,
    model: str = "synthetic",
    estimated_from: str | None = None,
    work: OpWork | None = None,
    peaks: tuple[float, float] | None = None,
    created_at: str = "2026-01-01T00:00:00+00:00",
) -> Profile:
    """A profile with linear phases ``(alpha_ms, beta_ms)``, a relative spread ``cv`` and given parameters.

    Parameters become ready evenly through backward, last parameter first (as in a real network).
    ``peaks`` (FLOP/s, bytes/s) records measured roofline ceilings in the device record (a CPU needs them).
    """
    n = len(param_mib)
    params = tuple(
        ParamInfo(f"p{i}", int(m * 2**18), int(m * 2**20), "float32", (n - i) / n) for i, m in enumerate(param_mib)
    )
    order = tuple(range(n - 1, -1, -1))
    models = {"fw": line(*fw), "bw": line(*bwd), "step": line(*step)}
    models["iter"] = line(fw[0] + bwd[0] + step[0], fw[1] + bwd[1] + step[1])
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
        device=DeviceInfo(
            "cuda" if gpu else "cpu",
            gpu or "cpu",
            gpu,
            1,
            16 << 30,
            "test",
            peak_flops_per_s=None if peaks is None else peaks[0],
            mem_bw_bytes_per_s=None if peaks is None else peaks[1],
            peaks_source=None if peaks is None else "measured",
        ),
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
        created_at=created_at,
        srifty_version="test",
        estimated_from=estimated_from,
        work=work,
    )


class ConstantBusBandwidth:
    """Bus bandwidth independent of size: ``busbw_bytes_per_s`` for every row."""

    def __init__(self, busbw_bytes_per_s: float) -> None:
        self.busbw = busbw_bytes_per_s

    def predict_busbw_bytes_per_s(self, frame) -> np.ndarray:  # type: ignore[no-untyped-def]
        return np.full(len(frame), self.busbw)


def instance(
    name: str = "test.gpu",
    gpu: str = "T4",
    gpus: int = 1,
    gbps: float | None = 25.0,
    price: float | None = 1.0,
    spot: dict[str, float] | None = None,
) -> InstanceType:
    """A catalog-like VM type in region ``test-1``: on-demand at ``price`` (``None``: spot only), spot at ``spot``
    per zone (default: a third of ``price`` in ``test-1a``)."""
    if spot is None:
        spot = {"test-1a": (price or 0.0) / 3}
    return InstanceType(
        name=name,
        cloud="aws",
        region="test-1",
        zones=tuple(sorted(spot)) or ("test-1a",),
        gpu_name=gpu,
        gpus_per_vm=gpus,
        gpu_memory_bytes=16 << 30,
        vcpus=8.0,
        ram_bytes=64 << 30,
        on_demand_usd_per_hour=price,
        spot_usd_per_hour_by_zone=tuple(sorted(spot.items())),
        rated_network_gbps=gbps,
        gpu=None,
    )


def synthetic_work(
    matmul_ms_per_sample: float = 1.0,
    copy_ms_per_sample: float = 1.0,
    step_ms: float = 0.5,
    n_small: int = 0,
    small_op_ms: float = 0.001,
    peaks: tuple[float, float] = (8.1e12, 320e9),
    batches: tuple[int, int] = (8, 64),
) -> OpWork:
    """Op counts whose times sit exactly on the roofline of a device with ``peaks`` (FLOP/s, bytes/s).

    Forward is one FLOP-bound matrix product, backward one bandwidth-bound op, the step one bandwidth-bound
    update; ``n_small`` tiny forward ops of ``small_op_ms`` each (no work) stand for host overhead.
    """
    flops_per_s, bytes_per_s = peaks

    def pair(per_sample_ms: float, rate: float) -> tuple[float, float]:
        return tuple(per_sample_ms * 1e-3 * rate * b for b in batches)  # type: ignore[return-value]

    def times(per_sample_ms: float) -> tuple[float, float]:
        return tuple(per_sample_ms * 1e-3 * b for b in batches)  # type: ignore[return-value]

    records = [
        OpRecord(
            "fw",
            "aten.mm.default",
            "fc",
            "float32",
            1,
            pair(matmul_ms_per_sample, flops_per_s),
            (1e3, 1e3 + 1.0),
            times(matmul_ms_per_sample),
        ),
        OpRecord(
            "bw",
            "aten.add.Tensor",
            "fc",
            "float32",
            1,
            (0.0, 0.0),
            pair(copy_ms_per_sample, bytes_per_s),
            times(copy_ms_per_sample),
        ),
        OpRecord(
            "step",
            "aten._foreach_add_.List",
            "",
            "float32",
            1,
            (0.0, 0.0),
            (step_ms * 1e-3 * bytes_per_s,) * 2,
            (step_ms * 1e-3,) * 2,
        ),
    ]
    if n_small:
        records.append(
            OpRecord(
                "fw",
                "aten.view.default",
                "fc",
                "float32",
                n_small,
                (0.0, 0.0),
                (0.0, 0.0),
                (n_small * small_op_ms * 1e-3,) * 2,
            )
        )
    return OpWork(batches=batches, records=tuple(records), timing_method="synthetic")


def cloud_source_profile(
    model: str = "synthetic", param_mib: tuple[float, ...] = (4.0, 4.0, 8.0, 8.0), bucket_cap_mb: float | None = 5.0
) -> Profile:
    """A CPU profile with op counts and measured ceilings: a source the emulated cloud can estimate GPUs from."""
    return synthetic_profile(
        bucket_cap_mb=bucket_cap_mb,
        fw=(1.0, 2.0),
        bwd=(2.0, 4.0),
        step=(0.01, 1.0),
        cv=0.02,
        param_mib=param_mib,
        gpu=None,
        model=model,
        work=synthetic_work(peaks=(1e11, 2e10)),
        peaks=(1e11, 2e10),
    )
