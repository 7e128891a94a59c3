"""Compute/communication interference: the measured record, the sharing model, the overlap simulation and the
simulator's use of them (synthetic values; the measurement itself is in test_profiler.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.compute.interference import InterferenceMeasurement, InterferenceRepetition, OverlapFactors
from srifty.errors import ProfileError
from srifty.sim import SimOptions, Simulator, simulate_allreduce
from srifty.sim.overlap import simulate_overlap
from srifty.vocab import make_config
from tests.factories import ConstantBusBandwidth, instance, synthetic_profile

#: A capped CPU: backward alone uses the whole quota (0.3 cores), loopback communication too, and while
#: they compete each holds half (both twice as slow).
CAPPED = InterferenceRepetition(
    bwd_alone_ms=300.0,
    bwd_alone_cores=0.3,
    comm_alone_ms=100.0,
    comm_alone_cores=0.3,
    bwd_with_comm_ms=600.0,
    comm_with_compute_ms=200.0,
    both_cores=0.3,
    ddp_bwd_ms=400.0,
    ddp_end_ms=420.0,
)
BUCKETS = (1_000_000, 3_000_000)


def measurement(*reps: InterferenceRepetition, quota: float | None = 0.3) -> InterferenceMeasurement:
    return InterferenceMeasurement("test", 8, BUCKETS, float(sum(BUCKETS)), "outside", quota, 1, reps or (CAPPED,))


def test_the_factors_are_the_medians_of_the_measured_slowdowns() -> None:
    m = measurement(CAPPED, dataclasses.replace(CAPPED, bwd_with_comm_ms=660.0), CAPPED)
    factors = m.factors()
    assert factors.bwd_slowdown == pytest.approx(2.0) and factors.comm_slowdown == pytest.approx(2.0)
    assert m.bwd_slowdown.low == pytest.approx(2.0) and m.bwd_slowdown.high == pytest.approx(2.2)
    assert factors.rates(True, True) == (0.5, 0.5)
    assert factors.rates(True, False) == factors.rates(False, True) == (1.0, 1.0)


def test_a_speed_up_under_contention_is_noise_and_counts_as_none() -> None:
    faster = dataclasses.replace(CAPPED, bwd_with_comm_ms=290.0, comm_with_compute_ms=90.0)
    assert measurement(faster).factors() == OverlapFactors(1.0, 1.0)
    with pytest.raises(ProfileError, match="at least 1"):
        OverlapFactors(0.9, 1.0)


def test_the_record_round_trips_and_refuses_bad_values() -> None:
    m = measurement(CAPPED, CAPPED)
    assert InterferenceMeasurement.from_dict(m.to_dict()) == m
    assert "x2.00 [2.00-2.00]" in m.summary() and "CPU quota 0.3 cores" in m.summary()
    with pytest.raises(ProfileError, match="malformed interference"):
        InterferenceMeasurement.from_dict({"method": "x"})
    with pytest.raises(ProfileError, match="at least one repetition"):
        InterferenceMeasurement("t", 8, BUCKETS, 1.0, "p", None, 1, ())
    with pytest.raises(ProfileError, match="positive"):
        measurement(dataclasses.replace(CAPPED, comm_alone_ms=0.0))


def test_a_gpu_measurement_says_its_exchange_was_gloos_host_staged_one() -> None:
    from srifty.compute.measure.interference import GPU_METHOD_NOTE, METHOD

    cpu = measurement(CAPPED, CAPPED)
    gpu = dataclasses.replace(cpu, method=METHOD + GPU_METHOD_NOTE)
    assert not cpu.host_staged and "NCCL" not in cpu.summary()
    assert gpu.host_staged and "staged through host memory, not NCCL's" in gpu.summary()


NO_CONTENTION = OverlapFactors(1.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 6),
    t_bwd=st.floats(0.01, 2.0),
    busbw=st.floats(1e7, 1e10),
    seed=st.integers(0, 100),
    mode=st.sampled_from(["fair_share", "sequential"]),
)
def test_without_contention_it_is_the_papers_overlap(n, t_bwd, busbw, seed, mode) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    fracs = np.sort(rng.random(n))
    sizes = rng.uniform(1e5, 1e8, n)
    rates = np.full(n, busbw)
    trace = simulate_overlap(fracs, sizes, rates, 1e12, t_bwd, NO_CONTENTION, mode)
    paper = simulate_allreduce(fracs * t_bwd, sizes, rates, 1e12, mode)
    assert trace.bwd_end_s == pytest.approx(t_bwd)
    assert trace.pe_end_s == pytest.approx(paper.end_s, rel=1e-9)


def test_halving_both_while_they_overlap_adds_them_up() -> None:
    # Each twice as slow while the other runs (two halves of one device): the work adds up, t_bwd + t_comm.
    sharing = OverlapFactors(2.0, 2.0)
    trace = simulate_overlap([0.0, 0.0], [5e7, 5e7], [1e8, 1e8], 1e12, 0.6, sharing, "sequential")
    assert trace.end_s == pytest.approx(0.6 + 1.0)
    assert trace.pe_end_s == pytest.approx(1.6) and trace.bwd_end_s == pytest.approx(1.2)


def test_a_slowed_backward_delays_the_buckets() -> None:
    sharing = OverlapFactors(2.0, 2.0)
    # The first bucket slows backward, so the second (ready at 60% of the work) starts later than 0.6 s.
    trace = simulate_overlap([0.2, 0.6], [2e7, 1e6], [1e8, 1e8], 1e12, 1.0, sharing, "sequential")
    free = simulate_overlap([0.2, 0.6], [2e7, 1e6], [1e8, 1e8], 1e12, 1.0, NO_CONTENTION, "sequential")
    assert trace.bwd_end_s > 1.0 and trace.end_s > free.end_s


def _profile_with(interference: InterferenceMeasurement | None):  # type: ignore[no-untyped-def]
    return synthetic_profile(cv=0.0, bwd=(10.0, 0.0), param_mib=(20.0,) * 4, gpu=None).with_changes(
        interference=interference
    )


def test_the_simulator_uses_a_measured_interference_and_says_so() -> None:
    config = make_config([(instance("cpu.vm", gpu="cpu"), 2, 32)])
    net = ConstantBusBandwidth(1e9)
    plain = Simulator({"cpu": _profile_with(None)}, net, SimOptions(iters=20)).simulate(
        config, np.random.default_rng(0)
    )
    measured = _profile_with(measurement())
    used = Simulator({"cpu": measured}, net, SimOptions(iters=20)).simulate(config, np.random.default_rng(0))
    off = Simulator({"cpu": measured}, net, SimOptions(iters=20, interference=False)).simulate(
        config, np.random.default_rng(0)
    )
    assert (
        plain.iteration_model.startswith("perfect overlap") and "no interference measurement" in plain.iteration_model
    )
    assert used.iteration_model.startswith("measured interference") and "x2.00" in used.iteration_model
    assert "interference turned off" in off.iteration_model
    assert off.iter_mean_s == pytest.approx(plain.iter_mean_s)
    assert used.iter_mean_s > plain.iter_mean_s
    assert used.iter_mean_s >= used.fw_mean_s + used.bwd_mean_s + used.step_mean_s - 1e-12


def test_a_heterogeneous_exchange_waits_for_the_type_its_own_backward_slows_most() -> None:
    """The allreduce is collective: a type with less compute whose exchange its backward slows x4 (a smaller
    CPU quota) finishes after the type with more compute but no interference, and the iteration waits for it."""
    none = measurement(dataclasses.replace(CAPPED, bwd_with_comm_ms=300.0, comm_with_compute_ms=100.0))
    strong = measurement(dataclasses.replace(CAPPED, bwd_with_comm_ms=300.0, comm_with_compute_ms=400.0))
    base = synthetic_profile(cv=0.0, fw=(0.0, 20.0), bwd=(0.0, 200.0), param_mib=(80.0,) * 4, gpu=None)
    big, small = instance("big.vm", gpu="cpu"), instance("small.vm", gpu="cpu")
    config = make_config([(big, 1, 32), (small, 1, 16)])  # big computes twice as long: the slowest group
    net = ConstantBusBandwidth(1e9)

    def simulate(small_record: InterferenceMeasurement | None):  # type: ignore[no-untyped-def]
        profiles = {
            "big.vm": base.with_changes(interference=none),
            "small.vm": base.with_changes(interference=small_record),
        }
        return Simulator(profiles, net, SimOptions(iters=20)).simulate(config, np.random.default_rng(0))

    slowest_only = simulate(None)
    both = simulate(strong)
    assert slowest_only.slowest_group == both.slowest_group == "1xbig.vm@32"
    assert "waits for every type" not in slowest_only.iteration_model
    assert "waits for every type" in both.iteration_model and "1xsmall.vm@16: backward x1.00" in both.iteration_model
    assert both.iter_mean_s > slowest_only.iter_mean_s * 1.2
    # The small type's own finish, alone: its forward, then its exchange at a quarter of the rate throughout.
    alone = Simulator({"cpu": base.with_changes(interference=strong)}, net, SimOptions(iters=20)).simulate(
        make_config([(instance("cpu.vm", gpu="cpu"), 2, 16)]), np.random.default_rng(0)
    )
    assert both.iter_mean_s - both.step_mean_s >= alone.iter_mean_s - alone.step_mean_s - 1e-9


def test_the_quota_is_read_up_the_hierarchy_and_the_peer_moves_above_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from srifty.compute.measure.cpu_quota import cpu_quota_cores, leave_cpu_quota

    group = tmp_path / "cpu" / "emulated-vm" / "inner"
    group.mkdir(parents=True)
    for folder, quota in ((tmp_path / "cpu", -1), (group.parent, 30000), (group, -1)):
        (folder / "cpu.cfs_quota_us").write_text(str(quota))
        (folder / "cpu.cfs_period_us").write_text("100000")
    proc = "3:cpuset:/\n2:cpu,cpuacct:/emulated-vm/inner\n1:name=systemd:/\n"
    assert cpu_quota_cores(tmp_path, proc) == pytest.approx(0.3)
    assert leave_cpu_quota(tmp_path, proc).startswith("outside the profiled process's CPU quota")
    assert (tmp_path / "cpu" / "cgroup.procs").read_text().strip().isdigit()  # moved to the root group
    assert cpu_quota_cores(tmp_path, "2:cpu:/\n") is None
    assert leave_cpu_quota(tmp_path, "2:cpu:/\n") == "outside any CPU quota (none set)"
    assert leave_cpu_quota(tmp_path, "1:name=systemd:/\n").startswith("no cgroup cpu controller")


def test_an_emulated_vms_quota_group_carries_the_largest_weight(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """srifty run's cpu= groups outweigh other processes, so a busy machine does not take an emulated VM's cores
    (the quota still caps it); checked on a fake cgroup v1 tree."""
    from srifty.runtime import cpu_quota

    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    monkeypatch.setattr(cpu_quota, "CGROUP_FS", tmp_path)
    group = cpu_quota.QuotaGroups("run-1").cap("10.0.0.2", 0.3)
    # 0.3 cores as 3 ms in every 10 ms: short periods, so a rank that waited on the network does not then
    # compute at a full core (a 100 ms period let it; see srifty.runtime.cpu_quota)
    assert (group / "cpu.cfs_quota_us").read_text() == "3000"
    assert (group / "cpu.cfs_period_us").read_text() == "10000"
    assert cpu_quota.quota_window_us(0.02) == (1000, 50000)  # the kernel's 1 ms least quota, a longer period
    assert cpu_quota.quota_window_us(4.0) == (40000, 10000)
    assert (group / "cpu.shares").read_text() == str(cpu_quota.WEIGHT_V1) == "262144"
