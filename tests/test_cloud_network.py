"""The emulated network truth: its mechanisms, and how it differs from srifty's own simulator.

Documented differences (``srifty.cloud.network``): srifty runs each concurrent transfer at its alone bus
bandwidth (latency included) until the sum exceeds a cap, then shares the cap; the truth overlaps the
transfers' latency parts and shares only their data parts, fairly, on a work-conserving link. Given the
truth's own alone bandwidths and compute curves, srifty agrees exactly with one transfer at a time; with
overlapping transfers they differ (below the cap the truth is slower). srifty's simulator is therefore
not the truth in disguise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.cloud import CloudParams, EmulatedCloud
from srifty.cloud.network import IntraLink, LinkSetup, allreduce_phases_s, drain_time_s, fair_share_finish_s
from srifty.compute import Profile
from srifty.sim import SimOptions, Simulator, simulate_allreduce
from srifty.vocab import bus_bytes, make_config
from tests.factories import cloud_source_profile

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


class AloneBusBandwidth:
    """An oracle bandwidth model: the truth's own bus bandwidth of one transfer alone, in ``setup``."""

    def __init__(self, setup: LinkSetup) -> None:
        self.setup = setup

    def predict_busbw_bytes_per_s(self, frame: pd.DataFrame) -> np.ndarray:
        sizes = frame["size_bytes"].to_numpy(dtype=float)
        latency, data = allreduce_phases_s(sizes, self.setup, PARAMS)
        return bus_bytes(sizes, int(frame["world_size"].iloc[0])) / (latency + data)


def truth_and_srifty_iteration_s(
    param_mib: tuple[float, ...], bucket_cap_mb: float, batch: int = 64
) -> tuple[float, float]:
    """Mean iteration time on a noiseless truth, and srifty's prediction from that truth's own curves and
    alone bandwidths (perfect knowledge of everything but the sharing)."""
    source = cloud_source_profile(param_mib=param_mib, bucket_cap_mb=bucket_cap_mb)
    quiet = CloudParams(compute_spatial_sigma=0.0, compute_temporal_sigma=0.0, network_temporal_sigma=0.0)
    cloud = EmulatedCloud({"synthetic": [source]}, seed=0, params=quiet)
    config = make_config([(cloud.instance("g4dn.8xlarge"), 8, batch)])
    allocation = cloud.allocate(config, np.random.default_rng(0))
    truth_s = float(cloud.iteration_times_s(config, allocation, 5, np.random.default_rng(1)).mean())
    truth = cloud.truth("T4")
    curves = {p: truth.curves[p].scaled(truth.factor) for p in ("fw", "bw", "step")}
    curves["iter"] = curves["fw"]
    known: Profile = source.with_changes(
        latency=curves, samples=(), device=cloud.profile("g4dn.8xlarge", np.random.default_rng(2)).device
    )
    setup = cloud.link_setup(config, allocation)
    assert setup is not None
    sim = Simulator({"T4": known}, AloneBusBandwidth(setup), SimOptions(iters=5, spread_scale=0.0))
    return truth_s, sim.simulate(config, np.random.default_rng(3)).iter_mean_s


def test_srifty_matches_the_truth_with_one_transfer_and_not_when_transfers_overlap() -> None:
    one_truth, one_srifty = truth_and_srifty_iteration_s((24.0,), 25.0)
    assert one_srifty == pytest.approx(one_truth, rel=1e-6)
    # Four 2 MiB buckets overlap at batch 1: srifty slows a running transfer's latency share too when a
    # second one starts; the truth overlaps latencies and shares only the data parts.
    overlap_truth, overlap_srifty = truth_and_srifty_iteration_s((2.0,) * 4, 2.0, batch=1)
    assert abs(overlap_truth / overlap_srifty - 1.0) > 0.02
