"""The emulated network and execution truth: their mechanisms, and the physics they are expected to show.

The probe's concurrent transfers share a work-conserving link (max-min fair); a training iteration runs its
DDP buckets one after another on one NCCL stream as soon as every rank has them ready, overlapping backward.
Where srifty's simulator differs (fair sharing below a cap), a test says so; none asserts that the two agree,
which would only show that the judge copies the judged.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.cloud import CloudParams, EmulatedCloud
from srifty.cloud.allocation import Allocation, GroupDraw
from srifty.cloud.fabrics import load_network_fit
from srifty.cloud.iteration import fifo_end_s, group_computes, iteration_times_s
from srifty.cloud.network import LinkSetup, allreduce_phases_s, drain_time_s, fair_share_finish_s
from srifty.cloud.stragglers import StragglerFit
from srifty.sim import simulate_allreduce
from srifty.vocab import Config, ConfigGroup, bus_bytes, busbw_bytes_per_s, make_config

FIT = load_network_fit()
NET = LinkSetup(8, 8, 1, FIT.fabrics["tcp"], FIT.fabrics["nvlink"], 6.25e9, float("inf"))


def alone_s(size: float, setup: LinkSetup = NET) -> float:
    latency, data = allreduce_phases_s([size], setup)
    return float(latency[0] + data[0])


def quiet(config: Config, spread: float = 1.0) -> Allocation:
    """Every VM at its median link, the allocation at the tables' bandwidth; not spread by default."""
    counts: dict[str, int] = {}
    for g in config.groups:
        key = f"{g.instance.name}/{g.market}"
        counts[key] = counts.get(key, 0) + g.count
    groups = tuple(GroupDraw(k, np.ones(n), np.ones(n)) for k, n in counts.items())
    return Allocation("quiet", 0, 1.0, 1.0, spread, groups)


def busbw_gbytes_per_s(cloud: EmulatedCloud, config: Config, size: int, **draws: float) -> float:
    setup = cloud.link_setup(config, quiet(config, **draws))
    return float(busbw_bytes_per_s(size, config.world_size, alone_s(size, setup))) / 1e9


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 5.0), st.floats(1e-4, 3.0)),
        min_size=1,
        max_size=12,
    )
)
def test_max_min_fair_sharing_is_work_conserving(transfers: list[tuple[float, float]]) -> None:
    arrivals, works = np.array(transfers).T
    finish = fair_share_finish_s(arrivals, works)
    assert float(finish.max()) == pytest.approx(float(drain_time_s(arrivals, works)), rel=1e-9, abs=1e-12)
    assert np.all(finish >= arrivals + works - 1e-9)


def test_the_truth_reproduces_the_public_tables_it_was_fitted_on() -> None:
    """Two p5.48xlarge and two p4d.24xlarge at 1 GiB, as the issue measured them (the old truth: 41 and 18 GB/s
    against 437 and 42.5 measured): within the fit's reported error."""
    cloud = EmulatedCloud(["resnet50"], seed=0)
    p5 = make_config([(cloud.instance("p5.48xlarge"), 2, 1)])
    p4d = make_config([(cloud.instance("p4d.24xlarge"), 2, 1)])
    assert busbw_gbytes_per_s(cloud, p5, 2**30) == pytest.approx(437, rel=0.25)
    assert busbw_gbytes_per_s(cloud, p4d, 2**30) == pytest.approx(43.4, rel=0.35)
    assert busbw_gbytes_per_s(cloud, p5, 8) < 0.01  # small messages: latency, tens of microseconds


def test_a_table_sweeping_several_node_counts_is_fitted_at_each_of_them() -> None:
    """The testbed's tables sweep 2, 4, 6 and 8 VMs: each point is predicted at its own node count, and the
    sweeps of one table weigh, and are held out, as that one table."""
    import io

    import pandas as pd

    from srifty.cloud.netfit import TESTBED_MIN_BYTES, _text, load_tables, predict_table

    rows = pd.read_csv(io.StringIO(_text("allreduce_testbed.csv")))
    rows = rows[(rows["table_id"] == "TB_g4dn.8xlarge") & (rows["size_bytes"] >= TESTBED_MIN_BYTES)]
    sweeps = [t for t in load_tables() if t.table_id == "TB_g4dn.8xlarge"]
    assert sorted(t.n_nodes for t in sweeps) == sorted(rows["n_nodes"].unique()) == [2, 4, 6, 8]
    for t in sweeps:
        mine = rows[rows["n_nodes"] == t.n_nodes]
        assert list(t.sizes_bytes) == list(mine["size_bytes"]) and list(t.times_s) == list(mine["time_s"])
    fit = load_network_fit()
    assert fit.table_mape["TB_g4dn.8xlarge"] < 0.15 and "TB_g4dn.8xlarge" in fit.held_out
    # eight VMs take longer than two for the same message (more ring steps), measured and fitted
    eight = next(t for t in sweeps if t.n_nodes == 8)
    two = next(t for t in sweeps if t.n_nodes == 2)
    assert np.all(eight.times_s > two.times_s)
    fitted_eight, fitted_two = (predict_table(fit.fabrics, fit.groups, t) for t in (eight, two))
    assert np.all(fitted_eight > fitted_two)
    assert np.all(np.abs(fitted_eight / eight.times_s - 1) < 0.15)


def test_small_messages_take_a_low_latency_protocol_and_large_ones_the_full_link() -> None:
    sizes = 2.0 ** np.arange(2, 32)
    latency, data = allreduce_phases_s(sizes, NET)
    total = latency + data
    assert np.all(np.diff(total) > 0)  # a larger message never finishes sooner
    assert latency[0] < latency[-1]  # Simple's latency is larger than LL's: the switch points
    moved = bus_bytes(sizes[-1], 8)
    assert moved / total[-1] > 0.8 * NET.fabric.efficiency * NET.net_bytes_per_s * 8 / 7 * 7 / 8


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["g4dn.xlarge", "g4dn.12xlarge", "p3.8xlarge", "p4d.24xlarge", "p5.48xlarge", "g5.12xlarge"]),
    st.sampled_from(["g4dn.8xlarge", "p3.2xlarge", "p5.4xlarge", "p3.16xlarge"]),
    st.integers(1, 40),
    st.integers(0, 40),
    st.floats(4, 2**31),
)
def test_more_vms_never_make_an_allreduce_shorter(first: str, second: str, n: int, more: int, size: float) -> None:
    """What the judge's search bounds rely on: adding VMs (of the same or another type) never shortens one."""
    cloud = EmulatedCloud(["resnet50"], seed=0)
    a, b = cloud.instance(first), cloud.instance(second)
    small = Config((ConfigGroup(a, n, 1, "spot"),), "use1-az4")
    large = Config((ConfigGroup(a, n, 1, "spot"), ConfigGroup(b, more, 1, "spot")), "use1-az4") if more else small
    bigger = Config((ConfigGroup(a, n + more, 1, "spot"),), "use1-az4")
    for draws in ({}, {"spread": 0.0}):
        base = cloud.link_setup(small, quiet(small, **draws))
        t0 = alone_s(size, base) if base is not None else 0.0
        for config in (large, bigger):
            setup = cloud.link_setup(config, quiet(config, **draws))
            assert (alone_s(size, setup) if setup is not None else 0.0) >= t0 * (1 - 1e-12)


def test_gpus_in_one_vm_reduce_over_nvlink_faster_than_across_vms() -> None:
    cloud = EmulatedCloud(["resnet50"], seed=0)
    one = make_config([(cloud.instance("p3.8xlarge"), 1, 1)])
    four = make_config([(cloud.instance("p3.2xlarge"), 4, 1)])
    assert busbw_gbytes_per_s(cloud, one, 2**28) > 20 * busbw_gbytes_per_s(cloud, four, 2**28)


def test_past_a_rack_the_spine_is_oversubscribed_and_placement_spreads_some_allocations() -> None:
    """The issue measured the old truth's g4dn.8xlarge at 2.83 GB/s on 16 VMs and 2.70 on 64: barely any
    contention. Past a rack (32 GPUs) the TCP spine is oversubscribed 2:1."""
    cloud = EmulatedCloud(["resnet50"], seed=0)
    t4 = cloud.instance("g4dn.8xlarge")
    sixteen, sixty_four = (make_config([(t4, n, 1, "spot")]) for n in (16, 64))
    inside, beyond = (busbw_gbytes_per_s(cloud, c, 2**28) for c in (sixteen, sixty_four))
    assert beyond < 0.7 * inside
    assert busbw_gbytes_per_s(cloud, sixteen, 2**28, spread=0.0) == pytest.approx(inside / 1.5, rel=0.05)
    p4d = make_config([(cloud.instance("p4d.24xlarge"), 2, 1, "spot")])  # EFA: a cluster placement group
    assert busbw_gbytes_per_s(cloud, p4d, 2**28, spread=0.0) == pytest.approx(busbw_gbytes_per_s(cloud, p4d, 2**28))


def test_an_on_demand_fleet_larger_than_a_zone_holds_spans_two_zones() -> None:
    cloud = EmulatedCloud(["resnet50"], seed=0)
    t4 = cloud.instance("g4dn.2xlarge")
    within, beyond = (make_config([(t4, n, 1, "on_demand")]) for n in (16, 17))
    zoned = Config(beyond.groups, "use1-az4")
    one = busbw_gbytes_per_s(cloud, within, 2**20)
    assert busbw_gbytes_per_s(cloud, beyond, 2**20) < 0.5 * one  # a quarter-millisecond every step
    assert busbw_gbytes_per_s(cloud, zoned, 2**20) == pytest.approx(one, rel=0.1)


def test_concurrent_transfers_below_the_cap_disagree_with_srifty_as_documented() -> None:
    size = 2**16
    latency, data = allreduce_phases_s([size, size], NET)
    truth = float(drain_time_s(latency, data))
    moved = bus_bytes([size, size], 8)
    busbw = moved / (latency + data)
    cap = float(bus_bytes(2**29, 8) / alone_s(2**29))
    assert busbw.sum() < cap  # srifty's rule: each transfer runs at its own bus bandwidth
    srifty = simulate_allreduce([0.0, 0.0], moved, busbw, cap).end_s
    assert srifty == pytest.approx(alone_s(size), rel=1e-9)
    assert truth > 1.2 * srifty


QUIET = CloudParams(
    compute_spatial_sigma=0.0,
    network_temporal_sigma=0.0,
    ready_run_sigma=0.0,
    launch_skew_mean_s=1e-12,
    collective_launch_s=0.0,
)
STEADY = StragglerFit(jitter_sigma=0.0, p_enter=0.0, p_stay=0.0, threshold=0.0, excess_shape=0.0, excess_scale=0.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.0, 3.0)), min_size=1, max_size=20))
def test_one_stream_runs_its_allreduces_one_after_another(ops: list[tuple[float, float]]) -> None:
    enqueue, duration = (np.array(x) for x in zip(*ops, strict=True))
    end = 0.0
    for e, d in zip(enqueue, duration, strict=True):
        end = max(end, e) + d
    assert float(fifo_end_s(enqueue[None, :], duration[None, :])[0]) == pytest.approx(end, rel=1e-12, abs=1e-12)


def iteration_s(model: str, vms: int, batch: int, params: CloudParams = QUIET) -> tuple[float, float]:
    """``(one iteration of vms × g4dn.8xlarge on a quiet truth, the same model's compute alone)``."""
    cloud = EmulatedCloud([model], seed=0, params=params)
    config = make_config([(cloud.instance("g4dn.8xlarge"), vms, batch)])
    allocation = cloud.allocate(config, np.random.default_rng(0))
    groups = group_computes(config, [cloud.truth("T4")])
    setup = cloud.link_setup(config, allocation)
    times = iteration_times_s(groups, cloud.gradients(), setup, allocation, STEADY, 3, np.random.default_rng(1), params)
    return float(times.mean()), float(sum(cloud.truth("T4").phases_ms(batch))) / 1000


def test_one_gpu_runs_its_compute_alone() -> None:
    alone, compute = iteration_s("resnet50", 1, 64)
    assert alone == pytest.approx(compute, rel=1e-3)


def test_gradients_exchanged_during_backward_are_hidden_until_the_network_is_the_bottleneck() -> None:
    # ResNet-50 at batch 128 on 2 g4dn.8xlarge: its 100 MB of gradients mostly overlap backward.
    two, compute = iteration_s("resnet50", 2, 128)
    assert compute < two < 1.6 * compute
    # VGG-16 at batch 1: 553 MB over a 50 Gbit/s link cannot hide behind a few ms of compute; the iteration is
    # (almost) the last bucket's readiness plus the whole stream behind it, far above compute, and longer than
    # the exchange would take at the link's full rated rate.
    vgg, vgg_compute = iteration_s("vgg16", 2, 1)
    assert vgg > 2 * vgg_compute and vgg > 553e6 / (50e9 / 8)


def test_the_stream_is_slower_than_srifty_s_fair_sharing_when_buckets_queue() -> None:
    """srifty's simulator lets concurrent transfers run side by side below a cap; the truth's one NCCL stream
    runs them one after another, latency included: with many buckets ready at once the truth is slower."""
    size, n = 2**20, 16
    latency, data = allreduce_phases_s([size] * n, NET)
    truth = float(fifo_end_s(np.zeros((1, n)), (latency + data)[None, :])[0])
    moved = bus_bytes([size] * n, 8)
    busbw = moved / (latency + data)
    srifty = simulate_allreduce(np.zeros(n), moved, busbw, cap_bytes_per_s=float(busbw.sum()) * 2).end_s
    assert truth > 5 * srifty
