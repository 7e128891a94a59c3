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
from srifty.cloud.iteration import fifo_end_s, group_computes, iteration_times_s
from srifty.cloud.network import IntraLink, LinkSetup, allreduce_phases_s, drain_time_s, fair_share_finish_s
from srifty.cloud.stragglers import StragglerFit
from srifty.sim import simulate_allreduce
from srifty.vocab import bus_bytes, make_config

PARAMS = CloudParams()
NET = LinkSetup(n_nodes=8, streams_per_node=1, net_bytes_per_s=2e9, net_hop_latency_s=30e-6, intra=())


def alone_s(size: float, setup: LinkSetup = NET) -> float:
    latency, data = allreduce_phases_s([size], setup, PARAMS)
    return float(latency[0] + data[0])


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


def test_a_message_one_byte_past_the_mtu_pays_for_a_second_packet() -> None:
    edge = 2 * PARAMS.payload_bytes  # a 2-node ring sends half the buffer per step
    two = LinkSetup(2, 1, 2e9, 30e-6, ())
    below, at, above = (alone_s(s, two) for s in (edge - 4, edge, edge + 4))
    assert above - at > 50 * (at - below) > 0


def test_small_messages_use_a_tree_large_ones_a_ring() -> None:
    def setup(n: int) -> LinkSetup:
        return LinkSetup(n, 1, 2e9, 30e-6, ())

    assert alone_s(4, setup(64)) / alone_s(4, setup(4)) < 4  # latency grows like log2(N), not N
    assert alone_s(2**28, setup(64)) / alone_s(2**28, setup(4)) < 1.5  # bandwidth-optimal ring


def test_gpus_in_one_vm_reduce_over_nvlink_before_the_network() -> None:
    v100 = IntraLink(gpus=4, bytes_per_s=120e9, hop_latency_s=4e-6)
    one_vm = LinkSetup(1, 4, 1.25e9, 30e-6, (v100,))
    four_vms = LinkSetup(4, 1, 1.25e9, 30e-6, ())
    two_vms = LinkSetup(2, 4, 1.25e9, 30e-6, (v100,))
    assert alone_s(2**26, one_vm) * 20 < alone_s(2**26, four_vms)
    assert alone_s(2**26, two_vms) < alone_s(2**26, LinkSetup(8, 1, 1.25e9, 30e-6, ()))


def test_concurrent_transfers_below_the_cap_disagree_with_srifty_as_documented() -> None:
    size = 2**18
    latency, data = allreduce_phases_s([size, size], NET, PARAMS)
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
    # (almost) the last bucket's readiness plus the whole stream behind it, far above compute.
    vgg, vgg_compute = iteration_s("vgg16", 2, 1)
    assert vgg > 3 * vgg_compute


def test_the_stream_is_slower_than_srifty_s_fair_sharing_when_buckets_queue() -> None:
    """srifty's simulator lets concurrent transfers run side by side below a cap; the truth's one NCCL stream
    runs them one after another, latency included: with many buckets ready at once the truth is slower."""
    size, n = 2**20, 16
    latency, data = allreduce_phases_s([size] * n, NET, PARAMS)
    truth = float(fifo_end_s(np.zeros((1, n)), (latency + data)[None, :])[0])
    moved = bus_bytes([size] * n, 8)
    busbw = moved / (latency + data)
    srifty = simulate_allreduce(np.zeros(n), moved, busbw, cap_bytes_per_s=float(busbw.sum()) * 2).end_s
    assert truth > 5 * srifty
