"""The Paleo baseline: analytical per-layer times from op counts alone, and its allreduce bandwidth."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from srifty.catalog import load_catalog
from srifty.errors import ProfileError, SriftyError
from srifty.plan.methods.paleo import paleo_profile
from srifty.plan.methods.paleo_net import PaleoBandwidthModel
from tests.factories import synthetic_profile, synthetic_work

T4 = load_catalog().gpu_specs["T4"]


def test_paleo_times_are_flops_over_peak_plus_bytes_over_bandwidth() -> None:
    work = synthetic_work(n_small=50)
    p = synthetic_profile(gpu="T4", work=work)
    est = paleo_profile(p, "T4")
    b = np.array([8.0, 64.0, 300.0])
    mm = work.records[0]  # forward: one matrix product (the 50 view ops carry no FLOPs: left out)
    fw = (work.flops_at([mm], b)[0] / T4.fp32_flops_per_s + work.bytes_at([mm], b)[0] / T4.mem_bw_bytes_per_s) * 1e3
    np.testing.assert_allclose(est.predict_ms("fw", b), fw, rtol=1e-9)
    np.testing.assert_allclose(est.predict_ms("bw", b), 0.0, atol=1e-12)  # bandwidth-only op: not a Paleo layer
    update = 2 * p.n_params / T4.fp32_flops_per_s + 3 * p.param_bytes / T4.mem_bw_bytes_per_s
    np.testing.assert_allclose(est.predict_ms("step", b), update * 1e3, rtol=1e-9)
    np.testing.assert_allclose(est.predict_ms("iter", b), fw + update * 1e3, rtol=1e-9)
    with_memory_ops = paleo_profile(p, "T4", include_memory_bound_ops=True)
    assert float(with_memory_ops.predict_ms("bw", 64)) > 0
    half = paleo_profile(p, "T4", ppp_comp=0.5)
    np.testing.assert_allclose(half.predict_ms("fw", b), 2 * fw, rtol=1e-9)


def test_paleo_uses_no_measured_time_and_has_no_spread() -> None:
    work = synthetic_work()
    slow = replace(work, records=tuple(replace(r, time_s=(9.0, 99.0)) for r in work.records))
    a = paleo_profile(synthetic_profile(gpu="T4", work=work, cv=0.1), "V100")
    b = paleo_profile(synthetic_profile(gpu="T4", work=slow, fw=(50.0, 9.0)), "V100")
    np.testing.assert_allclose(a.predict_ms("iter", [1, 64, 512]), b.predict_ms("iter", [1, 64, 512]), rtol=1e-12)
    assert a.spread_scale == 0.0 and float(a.cv("iter", 64)) == 0.0
    assert a.estimate is not None and a.estimate.method == "paleo" and a.estimated_from.startswith("paleo")


def test_paleo_needs_op_counts() -> None:
    with pytest.raises(ProfileError, match="Paleo needs them"):
        paleo_profile(synthetic_profile(gpu="T4"), "T4")
    with pytest.raises(ProfileError, match="ppp_comp"):
        paleo_profile(synthetic_profile(gpu="T4", work=synthetic_work()), "T4", ppp_comp=0.0)


def frame(**columns):  # type: ignore[no-untyped-def]
    return pd.DataFrame(columns)


def test_ring_alone_gives_the_link_bandwidth_and_tree_alone_its_textbook_bus_bandwidth() -> None:
    rows = frame(size_bytes=[1e8, 1e8], world_size=[8, 5], n_nodes=[8, 5], rated_network_gbps=[25.0, 25.0])
    link = 25e9 / 8
    ring = PaleoBandwidthModel(schemes=("ring",)).predict_busbw_bytes_per_s(rows)
    np.testing.assert_allclose(ring, link, rtol=1e-12)
    tree = PaleoBandwidthModel(schemes=("tree",)).predict_busbw_bytes_per_s(rows)
    n, height = np.array([8.0, 5.0]), np.array([3.0, 3.0])
    np.testing.assert_allclose(tree, link * (n - 1) / (n * height), rtol=1e-12)


def test_default_averages_tree_and_ring_times() -> None:
    rows = frame(size_bytes=[4e6], world_size=[16], n_nodes=[4], gpus_per_node=[4], rated_network_gbps=[10.0])
    model = PaleoBandwidthModel()
    link = 10e9 / 8
    t_ring, t_tree = 2 * 15 / 16 * 4e6 / link, 2 * 4 * 4e6 / link
    assert model.predict_time_s(rows)[0] == pytest.approx((t_ring + t_tree) / 2)
    assert model.predict_busbw_bytes_per_s(rows)[0] == pytest.approx(2 * 4e6 * 15 / (16 * (t_ring + t_tree) / 2))


def test_link_choice_network_between_vms_gpu_link_within_one() -> None:
    model = PaleoBandwidthModel(schemes=("ring",), default_network_gbps=10.0)
    rows = {
        "size_bytes": np.array([1e6, 1e6, 1e6, 1e6]),
        "world_size": np.array([8, 8, 4, 8]),
        "n_nodes": np.array([1, 1, 2, 2]),
        "gpus_per_node": np.array([8, 8, 2, 4]),
        "rated_network_gbps": np.array([100.0, 100.0, math.nan, 50.0]),
        "gpu": ["V100", "T4", "T4", "T4"],
    }
    busbw = model.predict_busbw_bytes_per_s(rows)
    # NVLink's 300 GB/s is bidirectional: 150 per direction. T4's PCIe 3: 16 GB/s. Unrated network: default.
    np.testing.assert_allclose(busbw, [150e9, 16e9, 10e9 / 8, 50e9 / 8], rtol=1e-12)


def test_minimal_frames_and_bad_input() -> None:
    model = PaleoBandwidthModel()
    only = {"size_bytes": np.array([1e6, 1e6]), "world_size": np.array([4, 1])}
    busbw = model.predict_busbw_bytes_per_s(only)  # no n_nodes: one GPU per node, default network
    assert busbw[0] > 0 and busbw[1] == pytest.approx(16e9)  # one worker: its own (PCIe) link, no division by 0
    with pytest.raises(SriftyError, match="unknown Paleo allreduce scheme 'star'"):
        PaleoBandwidthModel(schemes=("star",))
    with pytest.raises(SriftyError, match="world_size >= 1"):
        model.predict_busbw_bytes_per_s({"size_bytes": np.array([1.0]), "world_size": np.array([0])})
