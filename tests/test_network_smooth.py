"""The bandwidth model between probed sizes: knot interpolation, per-configuration residual curves, the
bridge across the MTU, intervals, and decay per instance type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.network import BandwidthModel
from srifty.network.curves import ResidualCurves
from srifty.network.intervals import LEVELS, UNCALIBRATED_WIDENING, ResidualQuantiles
from srifty.network.sizegrid import knot_sizes, smooth_predict
from srifty.network.tuning import mape
from tests.network_synth import SIZES_BYTES, synth_probes


def linear_in_log_size(m: np.ndarray) -> np.ndarray:
    return 0.5 * np.log(m[:, 0].astype(np.float64)) + m[:, 1]


def test_knots_are_the_distinct_sizes_thinned_evenly_in_log_size() -> None:
    assert knot_sizes([8, 4, 8, 16]).tolist() == [4.0, 8.0, 16.0]
    many = knot_sizes(2.0 ** np.arange(100), max_knots=10)
    assert len(many) == 10 and many[0] == 1.0 and many[-1] == 2.0**99
    assert np.allclose(np.diff(np.log2(many)), 11, atol=1)


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.floats(1.0, 2.0**34), min_size=1, max_size=30), offset=st.floats(-3, 3))
def test_smooth_predict_is_exact_on_knots_and_linear_in_log_size_between(sizes: list[float], offset: float) -> None:
    knots = np.array([4.0, 64.0, 4096.0, 2.0**20])
    x = np.column_stack([np.asarray(sizes), np.full(len(sizes), offset)]).astype(np.float32)
    value = smooth_predict(linear_in_log_size, x, 0, [knots], np.zeros(len(sizes), dtype=np.int64), flat_above=False)
    log_s = np.log(x[:, 0].astype(np.float64))
    inside = (x[:, 0] >= knots[0]) & (x[:, 0] <= knots[-1])
    # a function linear in log size is reproduced inside the knots (and its slope 0.5 is within [0, 1] outside)
    assert np.allclose(value, 0.5 * log_s + offset, atol=1e-5)
    flat = smooth_predict(linear_in_log_size, x, 0, [knots], np.zeros(len(sizes), dtype=np.int64), flat_above=True)
    above = x[:, 0] > knots[-1]
    assert np.allclose(flat[above], 0.5 * np.log(knots[-1]) + offset, atol=1e-5)
    assert np.allclose(flat[inside], value[inside])


def test_smooth_predict_clips_extrapolated_slopes_to_physical_ones() -> None:
    def steep(m: np.ndarray) -> np.ndarray:
        return 3.0 * np.log(m[:, 0].astype(np.float64))  # busbw ∝ size³ is not a physical slope

    knots = np.array([16.0, 64.0])
    x = np.array([[4.0], [32.0], [256.0]], dtype=np.float32)
    value = smooth_predict(steep, x, 0, [knots], np.zeros(3, dtype=np.int64), flat_above=False)
    assert value[0] == pytest.approx(3 * np.log(16) + 1.0 * np.log(4 / 16))  # slope clipped to 1 below
    assert value[1] == pytest.approx(3 * np.log(32))  # interpolation inside is untouched
    assert value[2] == pytest.approx(3 * np.log(64) + 1.0 * np.log(256 / 64))


def test_residual_curves_are_weighted_medians_interpolated_and_flat_outside() -> None:
    curves = ResidualCurves.fit(
        ["a", "a", "a", "a", "b"], [4, 4, 4, 16, 4], np.array([0.0, 1.0, 5.0, 2.0, 9.0]), np.array([1, 1, 1, 1, 1.0])
    )
    assert curves.curves["a"] == ((4.0, 16.0), (1.0, 2.0))
    assert curves.residual(["a", "a", "a", "a", "z"], [4, 8, 16, 1e9, 8]).tolist() == pytest.approx(
        [1.0, 1.5, 2.0, 2.0, 0.0]
    )
    heavy = ResidualCurves.fit(["a"] * 3, [4] * 3, np.array([0.0, 1.0, 5.0]), np.array([1.0, 1.0, 10.0]))
    assert heavy.curves["a"][1] == (5.0,)  # a recent (heavy) row outweighs two old ones
    assert ResidualCurves.from_json(curves.to_json()) == curves
    assert curves.known(["a", "z"]).tolist() == [True, False]


def test_residual_quantiles_borrow_and_widen_for_a_class_without_residuals() -> None:
    rng = np.random.default_rng(0)
    residuals = rng.normal(0.0, 0.1, 500)
    q = ResidualQuantiles.fit(residuals, np.ones(500), np.full(500, "probed"))
    assert q.calibrated == {"probed": True, "unprobed": False} and q.counts["unprobed"] == 0
    probed = np.array(q.quantiles["probed"])
    unprobed = np.array(q.quantiles["unprobed"])
    mid = LEVELS.index(0.5)
    assert np.allclose(unprobed - unprobed[mid], UNCALIBRATED_WIDENING * (probed - probed[mid]))
    low, high = q.at(np.array(["probed"]), [0.1, 0.9])[0]
    assert low == pytest.approx(-0.128, abs=0.02) and high == pytest.approx(0.128, abs=0.02)
    assert ResidualQuantiles.from_json(q.to_json()) == q


@pytest.fixture(scope="module")
def two_families() -> pd.DataFrame:
    frame = synth_probes(np.random.default_rng(21), n_allocations=5, ratings_gbps=(10.0, 50.0), repeats=1)
    return frame.assign(instance_type=np.where(frame["rated_network_gbps"] == 10.0, "slow.vm", "fast.vm"))


@pytest.fixture(scope="module")
def smooth_model(two_families: pd.DataFrame) -> BandwidthModel:
    return BandwidthModel(n_trials=0, n_folds=3, n_jobs=1, seed=2).fit(two_families)


def test_between_probed_sizes_the_model_is_smooth_and_close(
    smooth_model: BandwidthModel, two_families: pd.DataFrame
) -> None:
    # probed at 4·4^i; ask at every size in between, where a tree alone answers with a step
    sizes = np.geomspace(4, SIZES_BYTES[-1], 200)
    query = pd.DataFrame(
        {"size_bytes": sizes, "world_size": 4, "n_nodes": 4, "n_concurrent": 1, "rated_network_gbps": 50.0}
    ).assign(instance_type="fast.vm")
    pred = smooth_model.predict_busbw_bytes_per_s(query)
    steps = np.abs(np.diff(np.log(pred)))
    assert steps.max() < 0.15, "no jump between neighbouring sizes (1.7 % apart)"
    truth_s = 2 * 3 * 20e-6 + 2 * 3 / 4 * sizes / (50e9 / 8 * 0.8)  # synthetic ring at the mean placement
    truth = 2 * sizes * 3 / 4 / truth_s
    assert mape(truth, pred) < 0.2
    tree = BandwidthModel(n_trials=0, n_jobs=1, smooth_sizes=False, residual_curves=False, latency_baseline=False)
    stepped = tree.fit(two_families).predict_busbw_bytes_per_s(query)
    assert np.abs(np.diff(np.log(stepped))).max() > steps.max()


def test_no_jump_across_the_mtu(smooth_model: BandwidthModel) -> None:
    # probed sizes next to the MTU are 4096 and 16384; in between, the two sides' answers are joined
    sizes = np.array([4096, 6000, 9000, 9001, 9002, 12000, 16384])
    query = pd.DataFrame({"size_bytes": sizes, "world_size": 8, "n_nodes": 8, "rated_network_gbps": 10.0}).assign(
        instance_type="slow.vm"
    )
    pred = smooth_model.predict_busbw_bytes_per_s(query)
    assert (np.diff(pred) > 0).all(), "bus bandwidth keeps rising with size through the MTU"
    assert pred[3] == pytest.approx(pred[4], rel=1e-3)


def test_probed_configurations_are_probed_and_others_are_not(smooth_model: BandwidthModel) -> None:
    query = pd.DataFrame({"size_bytes": [2**20] * 3, "world_size": 4, "rated_network_gbps": [50.0, 50.0, 25.0]}).assign(
        instance_type=["fast.vm", "other.vm", "other.vm"]
    )
    assert smooth_model.familiarity(query).tolist() == ["probed", "unprobed", "unprobed"]
    low, high = smooth_model.predict_busbw_interval(query)
    width = np.log(high / low)
    assert width[1] > width[0], "a type never probed gets a wider interval"
    lines = smooth_model.explain(query)
    assert lines[0].startswith("probed: ") and "allocation" in lines[0]
    assert lines[1].startswith("not probed")


def test_intervals_cover_about_80_percent_of_new_allocations() -> None:
    frame = synth_probes(np.random.default_rng(5), n_allocations=10, ratings_gbps=(25.0,), repeats=1)
    frame = frame.assign(instance_type="one.vm")
    held_out = frame["allocation_id"].isin(["r25-a8", "r25-a9"]).to_numpy()
    model = BandwidthModel(n_trials=0, n_folds=4, n_jobs=1).fit(frame[~held_out])
    test = frame[held_out]
    low, high = model.predict_busbw_interval(test, 0.8)
    inside = ((test["busbw_bytes_per_s"] >= low) & (test["busbw_bytes_per_s"] <= high)).mean()
    assert 0.55 <= inside <= 1.0  # two allocations are a small sample of placement draws
    wide_low, wide_high = model.predict_busbw_interval(test, 0.98)
    assert (wide_low <= low).all() and (wide_high >= high).all()


def test_new_probes_of_one_type_dominate_without_erasing_another() -> None:
    rng = np.random.default_rng(8)
    old = synth_probes(rng, n_allocations=3, ratings_gbps=(50.0,), repeats=1).assign(instance_type="a.vm")
    new = synth_probes(rng, n_allocations=3, ratings_gbps=(50.0,), repeats=1).assign(instance_type="a.vm")
    other = synth_probes(rng, n_allocations=3, ratings_gbps=(10.0,), repeats=1).assign(instance_type="b.vm")
    old["busbw_bytes_per_s"] *= 0.5  # before an upgrade of a.vm's network
    new["timestamp_s"] += 200 * 86400.0
    new["allocation_id"] += "-new"
    both = pd.concat([old, new, other], ignore_index=True)
    model = BandwidthModel(n_trials=0, n_jobs=1, half_life_s=10 * 86400.0).fit(both)
    large = new[new["size_bytes"] > 2**16]
    assert mape(large["busbw_bytes_per_s"], model.predict_busbw_bytes_per_s(large)) < 0.15
    b_large = other[other["size_bytes"] > 2**16]  # b.vm was probed long before a.vm's new probes: still known
    assert mape(b_large["busbw_bytes_per_s"], model.predict_busbw_bytes_per_s(b_large)) < 0.15
