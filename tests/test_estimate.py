"""Cross-GPU estimates: roofline ratios, estimating a device from itself, source choice, clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from srifty.catalog import load_catalog
from srifty.compute import (
    DevicePeaks,
    choose_source,
    estimate_from,
    estimate_profile,
    gpu_peaks,
    load_profile,
    pick_source,
    roofline_ratio,
)
from srifty.errors import CatalogError, ProfileError
from tests.factories import synthetic_profile, synthetic_work

SPECS = load_catalog().gpu_specs
T4, V100 = gpu_peaks(SPECS["T4"]), gpu_peaks(SPECS["V100"])
BATCHES = np.array([1, 2, 3, 7, 8, 50, 64, 100, 333, 1000, 1024, 2048, 5000])
CPU_PEAKS = (1.5e11, 1.5e10)


def t4_profile(**kwargs):  # type: ignore[no-untyped-def]
    """A profile measured on a T4 whose op times sit on the T4's roofline."""
    return synthetic_profile(
        fw=(1.0, 2.0), bwd=(2.0, 1.0), step=(0.0, 0.5), gpu="T4", work=synthetic_work(step_ms=0.5), **kwargs
    )


# ---- roofline ratio ---------------------------------------------------------------------------------------------


def test_roofline_ratio_of_a_matmul_bound_op_is_the_flops_ratio() -> None:
    ratio = roofline_ratio([1e12], [1e6], ["float32"], T4, V100)
    assert ratio[0] == pytest.approx(8.1 / 15.7)
    half = roofline_ratio([1e12], [1e6], ["bfloat16"], T4, V100)
    assert half[0] == pytest.approx(65 / 125)  # 16-bit ops use the tensor peaks


def test_roofline_ratio_of_a_bandwidth_bound_op_is_the_bandwidth_ratio() -> None:
    ratio = roofline_ratio([0.0, 1e3], [1e9, 1e9], ["float32", "float32"], T4, V100)
    assert ratio == pytest.approx([320 / 900, 320 / 900])


def test_roofline_ratio_of_an_op_without_work_is_one() -> None:
    assert roofline_ratio([0.0], [0.0], ["float32"], T4, V100)[0] == 1.0


@given(
    flops=st.floats(0, 1e13, allow_nan=False),
    moved=st.floats(1, 1e11, allow_nan=False),
    src=st.tuples(st.floats(1e9, 1e15), st.floats(1e8, 1e13)),
    tgt=st.tuples(st.floats(1e9, 1e15), st.floats(1e8, 1e13)),
)
def test_roofline_ratio_lies_between_the_compute_and_bandwidth_ratios(flops, moved, src, tgt) -> None:  # type: ignore[no-untyped-def]
    a = DevicePeaks("a", src[0], None, src[1], "test")
    b = DevicePeaks("b", tgt[0], None, tgt[1], "test")
    r = float(roofline_ratio([flops], [moved], ["float32"], a, b)[0])
    bounds = sorted([a.flops_per_s / b.flops_per_s, a.mem_bw_bytes_per_s / b.mem_bw_bytes_per_s])
    assert bounds[0] * (1 - 1e-9) <= r <= bounds[1] * (1 + 1e-9)


# ---- estimate from itself ------------------------------------------------------------------------------------


def test_estimate_of_a_device_from_itself_gives_back_its_own_profile() -> None:
    source = t4_profile(cv=0.04)
    same = estimate_profile(source, "T4")
    for phase in ("fw", "bw", "step", "iter"):
        np.testing.assert_allclose(same.predict_ms(phase, BATCHES), source.predict_ms(phase, BATCHES), rtol=1e-9)
        np.testing.assert_allclose(same.std_ms(phase, BATCHES), source.std_ms(phase, BATCHES), rtol=1e-9)
        assert same.latency[phase].vertices_batch == source.latency[phase].vertices_batch
    assert same.spread_scale == pytest.approx(1.0)
    assert (same.max_batch, same.max_batch_limited_by) == (source.max_batch, source.max_batch_limited_by)
    assert same.memory == source.memory and same.buckets == source.buckets and same.params == source.params
    # Only the labels say it is an estimate: no samples of its own, marked with its source.
    assert same.is_estimate and same.estimated_from == "T4" and same.samples == ()
    assert same.estimate is not None and same.estimate.method == "roofline"


def test_estimate_from_itself_holds_for_a_curve_with_a_knee_and_host_overhead() -> None:
    from srifty.compute import fit_piecewise_linear

    source = t4_profile(cv=0.02)
    knee = fit_piecewise_linear([1, 8, 32, 64], [12.0, 13.0, 40.0, 75.0])
    source = source.with_changes(latency={**source.latency, "fw": knee})
    same = estimate_profile(source, "T4")
    np.testing.assert_allclose(same.predict_ms("fw", BATCHES), source.predict_ms("fw", BATCHES), rtol=1e-9)
    np.testing.assert_allclose(same.predict_ms("iter", BATCHES), source.predict_ms("iter", BATCHES), rtol=1e-9)


# ---- scaling ----------------------------------------------------------------------------------------------------


def test_compute_and_bandwidth_bound_phases_scale_by_their_ratios_and_overhead_is_kept() -> None:
    source = t4_profile()  # fw: 1 ms/sample matmul + 2 ms overhead; bw: 2 ms/sample measured, 1 ms/sample copy
    est = estimate_profile(source, "V100", launch_floor_s=0.0)
    b = np.array([64.0, 512.0])
    np.testing.assert_allclose(est.predict_ms("fw", b), 2.0 + b * 8.1 / 15.7, rtol=1e-6)
    # Backward is measured at 2 ms/sample + 1 ms but its op took 1 ms/sample: the fixed overhead is the least
    # unexplained time at the op-count batches (17 - 8 = 9 ms at batch 8); the rest is the op's, scaled.
    np.testing.assert_allclose(est.predict_ms("bw", b), 9.0 + (2.0 * b + 1.0 - 9.0) * 320 / 900, rtol=1e-6)
    np.testing.assert_allclose(est.predict_ms("step", b), 0.5 * 320 / 900, rtol=1e-6)
    phases = sum(est.predict_ms(p, b) for p in ("fw", "bw", "step"))
    np.testing.assert_allclose(est.predict_ms("iter", b), phases, rtol=1e-6)


def test_launch_floor_bounds_tiny_ops_but_never_above_their_measured_time() -> None:
    work = synthetic_work(n_small=1000, small_op_ms=0.02)  # 1000 ops of 20 µs, no work: kept as measured
    source = synthetic_profile(fw=(1.0, 22.0), gpu="T4", work=work)
    est = estimate_profile(source, "V100", launch_floor_s=5e-6)
    assert float(est.predict_ms("fw", 64)) >= 20.0  # 1000 × 20 µs of host-side ops keep their time
    fast = synthetic_profile(fw=(1.0, 2.0 + 20.0), gpu="V100", work=synthetic_work(peaks=(15.7e12, 900e9)))
    slow_to_fast = estimate_profile(fast, "H100", launch_floor_s=1.0)  # absurd floor: ops cannot speed up
    np.testing.assert_allclose(slow_to_fast.predict_ms("fw", 64), fast.predict_ms("fw", 64), rtol=1e-9)


def test_cpu_source_uses_its_measured_ceilings_and_memory_model() -> None:
    from srifty.compute import MemoryModel

    cpu = synthetic_profile(gpu=None, peaks=CPU_PEAKS, work=synthetic_work(peaks=CPU_PEAKS))
    cpu = cpu.with_changes(memory=MemoryModel(1 << 30, 64 << 20))
    est = estimate_profile(cpu, "T4", launch_floor_s=0.0)
    assert est.max_batch == cpu.memory.max_batch(SPECS["T4"].memory_bytes) == 203
    assert est.max_batch_limited_by == "gpu_memory (memory model)"
    np.testing.assert_allclose(est.predict_ms("fw", 512), 2.0 + 512 * CPU_PEAKS[0] / 8.1e12, rtol=1e-6)
    assert est.device.gpu == "T4" and est.device.peaks_source == "datasheet"


def test_spread_widens_with_roofline_distance() -> None:
    gpu_src = t4_profile(cv=0.05)
    cpu_src = synthetic_profile(gpu=None, cv=0.05, peaks=CPU_PEAKS, work=synthetic_work(peaks=CPU_PEAKS))
    from_gpu, from_cpu = estimate_profile(gpu_src, "V100"), estimate_profile(cpu_src, "V100")
    assert 1.0 < from_gpu.spread_scale < from_cpu.spread_scale
    assert float(from_gpu.cv("iter", 64)) > float(gpu_src.cv("iter", 64))


def test_estimated_profile_round_trips_without_op_times(tmp_path: Path) -> None:
    est = estimate_profile(t4_profile(), "A10G")
    back = load_profile(est.save(tmp_path / "e.json"))
    assert back == est
    assert back.work is not None and not back.work.has_times and back.estimate is not None


# ---- choosing a source ------------------------------------------------------------------------------------------


def test_choose_source_prefers_the_target_then_a_gpu_then_the_nearest_roofline() -> None:
    cpu = synthetic_profile(gpu=None, peaks=CPU_PEAKS, work=synthetic_work(peaks=CPU_PEAKS))
    v100 = synthetic_profile(gpu="V100", work=synthetic_work())
    a100 = synthetic_profile(gpu="A100", work=synthetic_work())
    choice = choose_source([cpu, a100, v100], "T4")
    assert choice.profile is v100 and "closest of 3" in choice.reason and "GPU sources before CPU" in choice.reason
    assert pick_source([cpu, a100], "T4") is a100
    assert pick_source([cpu], "T4") is cpu
    t4 = synthetic_profile(gpu="T4")
    mine = choose_source([cpu, t4], "T4")
    assert mine.measured_on_target and mine.profile is t4
    assert estimate_from([cpu, t4], "T4") is t4
    assert estimate_from([cpu, v100], "T4").estimate.source_device == "V100"  # type: ignore[union-attr]


def test_choose_source_errors_are_clear() -> None:
    with pytest.raises(ProfileError, match="no profiles given"):
        choose_source([], "T4")
    with pytest.raises(ProfileError, match="different models"):
        choose_source([synthetic_profile(model="a"), synthetic_profile(model="b")], "V100")
    old = synthetic_profile(gpu="V100")  # no op counts, like a migrated schema-1 profile
    guess = synthetic_profile(gpu="A100", work=synthetic_work(), estimated_from="cpu")
    with pytest.raises(ProfileError, match=r"no per-op work counts.*itself an estimate"):
        choose_source([old, guess], "T4")


def test_estimating_from_an_estimate_or_an_old_profile_is_refused() -> None:
    est = estimate_profile(t4_profile(), "V100")
    with pytest.raises(ProfileError, match="itself an estimate"):
        estimate_profile(est, "A10G")
    with pytest.raises(ProfileError, match="profile it again"):
        estimate_profile(synthetic_profile(gpu="T4"), "V100")
    no_ceilings = synthetic_profile(gpu=None, work=synthetic_work())
    with pytest.raises(ProfileError, match="no roofline ceilings"):
        estimate_profile(no_ceilings, "V100")


def test_unknown_gpu_names_get_did_you_mean_and_case_is_forgiven() -> None:
    with pytest.raises(CatalogError, match="Did you mean 'T4'"):
        estimate_profile(t4_profile(), "T5")
    assert estimate_profile(t4_profile(), "v100").device.gpu == "V100"


def test_model_that_does_not_fit_is_a_clear_error() -> None:
    from srifty.compute import MemoryModel

    huge = t4_profile().with_changes(memory=MemoryModel(40 * 2**30, 2**20), device=t4_profile().device)
    cpu_huge = huge.with_changes(device=synthetic_profile(gpu=None, peaks=CPU_PEAKS).device)
    with pytest.raises(ProfileError, match="does not fit on a T4"):
        estimate_profile(cpu_huge, "T4")
