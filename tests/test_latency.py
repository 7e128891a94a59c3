"""The latency models and their probe placements: piecewise linear with adaptive probes (a CPU, and a GPU
before issue 27: ``smooth=False``), and a GPU's smooth floor-and-line with probes spread in log batch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.compute import LatencyModel, fit_latency_curve, fit_linear, fit_piecewise_linear, latency
from srifty.compute.latency import default_candidates
from srifty.errors import ProfileError


def hockey_stick(floor_ms: float, slope: float, knee: float):  # type: ignore[no-untyped-def]
    """Flat at ``floor_ms`` up to ``knee``, then rising with ``slope`` ms per sample."""
    return lambda b: max(floor_ms, floor_ms + slope * (b - knee))


@settings(max_examples=200, deadline=None)
@given(
    floor=st.floats(0.5, 200.0),
    slope=st.floats(0.01, 20.0),
    knee_exp=st.floats(0.0, 11.0),
    max_exp=st.integers(3, 12),
)
def test_exact_recovery_of_hockey_sticks_at_candidates(
    floor: float, slope: float, knee_exp: float, max_exp: int
) -> None:
    curve = hockey_stick(floor, slope, 2.0**knee_exp)
    model = fit_latency_curve(curve, 2**max_exp, flat_floor=True, smooth=False)
    cands = default_candidates(2**max_exp)
    truth = np.array([curve(b) for b in cands])
    np.testing.assert_allclose(model.predict_ms(cands), truth, rtol=1e-9, atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    floor=st.floats(1.0, 100.0),
    slope=st.floats(0.05, 5.0),
    knee_exp=st.floats(1.0, 9.0),
    noise=st.floats(0.0, 0.02),
    seed=st.integers(0, 2**32 - 1),
)
def test_recovery_with_noise_stays_within_noise(
    floor: float, slope: float, knee_exp: float, noise: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    curve = hockey_stick(floor, slope, 2.0**knee_exp)
    model = fit_latency_curve(
        lambda b: curve(b) * (1 + rng.uniform(-noise, noise)), 1024, flat_floor=True, smooth=False
    )
    cands = default_candidates(1024)
    truth = np.array([curve(b) for b in cands])
    error = np.abs(model.predict_ms(cands) - truth)
    # At the probes the model is within the noise (plus the monotone correction) of the truth...
    probed = np.isin(cands, model.probe_batches)
    assert np.all(error[probed] <= 2 * noise * truth[probed] + 1e-9)
    # ...and elsewhere a line through two noisy probes is extrapolated, so errors scale with the noise
    # times the largest latency measured, never more, except where noise at a probe on the floor moves the
    # floor's knee before that probe (into the first interval): the model there is the chord between the
    # probes, so it is never further off than interpolating the truth between the probes.
    probe_truth = np.array([curve(b) for b in model.probe_batches])
    chord_gap = np.abs(np.interp(cands, model.probe_batches, probe_truth) - truth)
    assert np.all(error <= 6 * noise * truth.max() + chord_gap + 1e-9)


def test_a_floor_knee_moved_by_noise_is_no_worse_than_the_chord() -> None:
    """The case hypothesis found: the second probe (batch 2) on the floor, 4e-5 relative noise."""
    rng = np.random.default_rng(1)
    curve = hockey_stick(1.0, 0.0625, 2.0**1.25)
    model = fit_latency_curve(lambda b: curve(b) * (1 + rng.uniform(-4e-5, 4e-5)), 1024, flat_floor=True, smooth=False)
    cands = default_candidates(1024)
    truth = np.array([curve(b) for b in cands])
    error = np.abs(model.predict_ms(cands) - truth)
    chord = np.interp(cands, model.probe_batches, [curve(b) for b in model.probe_batches])
    assert np.all(error <= np.abs(chord - truth) + 6 * 4e-5 * truth.max() + 1e-9)
    assert np.all(error[np.isin(cands, model.probe_batches)] <= 2 * 4e-5 * 64.9)


@settings(max_examples=100, deadline=None)
@given(
    ys=st.lists(st.floats(0.1, 1e4), min_size=2, max_size=10),
    queries=st.lists(st.floats(0.5, 5000.0), min_size=2, max_size=20),
)
def test_predictions_are_monotone_and_non_negative(ys: list[float], queries: list[float]) -> None:
    batches = [2**i for i in range(len(ys))]
    model = fit_piecewise_linear(batches, ys)
    q = np.sort(np.asarray(queries))
    pred = model.predict_ms(q)
    assert np.all(pred >= 0)
    assert np.all(np.diff(pred) >= -1e-9)


@settings(max_examples=100, deadline=None)
@given(max_exp=st.integers(0, 13), n_probes=st.integers(2, 8))
def test_measure_is_called_at_most_n_probes_times_never_twice(max_exp: int, n_probes: int) -> None:
    calls: list[int] = []

    def measure(batch: int) -> float:
        calls.append(batch)
        return 1.0 + 0.1 * batch

    fit_latency_curve(measure, 2**max_exp, n_probes=n_probes)
    assert len(calls) <= n_probes
    assert len(calls) == len(set(calls))
    assert all(1 <= b <= 2**max_exp for b in calls)


def test_knee_is_found_between_probes() -> None:
    model = fit_latency_curve(hockey_stick(10.0, 0.5, 40.0), 512, flat_floor=True, smooth=False)
    assert model.knee_batch == pytest.approx(40.0)
    assert len(model.probe_batches) == 4


def test_linear_curve_has_no_knee_and_extrapolates() -> None:
    model = fit_latency_curve(lambda b: 2.0 + 0.25 * b, 256)
    assert model.knee_batch is None
    assert model.predict_ms([512])[0] == pytest.approx(2.0 + 0.25 * 512)


def test_custom_candidates_and_segments() -> None:
    model = fit_latency_curve(lambda b: 5.0 + b, 100, candidates=[3, 10, 30, 100])
    assert set(model.probe_batches) == {3, 10, 30, 100}
    for _lo, _hi, alpha, beta in model.segments():
        assert alpha == pytest.approx(1.0) and beta == pytest.approx(5.0)


def test_round_trip_and_scaling() -> None:
    model = fit_latency_curve(hockey_stick(3.0, 0.2, 16.0), 128)
    again = LatencyModel.from_dict(model.to_dict())
    assert again == model
    np.testing.assert_allclose(model.scaled(2.0).predict_ms([1, 64]), 2 * model.predict_ms([1, 64]))


def test_linear_baseline_through_all_points() -> None:
    line = fit_linear([1, 2, 4, 8], [1.0, 2.0, 4.0, 8.0])
    np.testing.assert_allclose(line.predict_ms([16]), [16.0])


def test_bad_inputs_are_clear() -> None:
    with pytest.raises(ProfileError, match="at least 2"):
        fit_latency_curve(lambda b: 1.0, 8, n_probes=1)
    with pytest.raises(ProfileError, match="positive and distinct"):
        fit_piecewise_linear([1, 1], [1.0, 2.0])
    with pytest.raises(ProfileError, match="max_batch must be at least 1"):
        default_candidates(0)


def test_a_cpu_curve_rising_from_the_smallest_batch_is_not_taken_for_a_floor() -> None:
    """A convex CPU curve (cache effects) puts the smallest probe far above the large-batch line; without a
    floor expected the model keeps the chord instead of a flat segment."""
    curve = {1: 120.0, 2: 190.0, 4: 315.0, 8: 534.0, 16: 989.0, 32: 3206.0, 64: 8109.0}
    cpu = fit_latency_curve(lambda b: curve[b], 64)
    gpu = fit_latency_curve(lambda b: curve[b], 64, flat_floor=True, smooth=False)
    probes = sorted(cpu.probe_batches)
    inner = [b for b in curve if probes[0] < b < probes[1]]
    assert inner and all(float(cpu.predict_ms(b)) > curve[probes[0]] * 1.2 for b in inner)
    assert all(float(gpu.predict_ms(b)) == pytest.approx(curve[probes[0]]) for b in inner[:1])


def test_the_fourth_probe_goes_nearest_the_knee_on_a_log_scale() -> None:
    # floor 10 ms, then 0.1 ms per sample through the origin: the floor meets the line at 100
    model = fit_latency_curve(lambda b: max(10.0, 0.1 * b), 1024, flat_floor=True, smooth=False)
    assert sorted(model.probe_batches) == [1, 128, 512, 1024]
    assert model.knee_batch == pytest.approx(100.0)


def smooth_floor_line(floor: float, intercept: float, slope: float):  # type: ignore[no-untyped-def]
    """The GPU model's own family: a smooth maximum of a floor and a line."""
    q = latency.FLOOR_LINE_Q
    return lambda b: (floor**q + (intercept + slope * b) ** q) ** (1 / q)


@settings(max_examples=60, deadline=None)
@given(
    floor=st.floats(0.5, 200.0),
    intercept=st.floats(0.01, 50.0),
    slope=st.floats(0.001, 5.0),
    max_exp=st.integers(4, 12),
)
def test_a_gpu_curve_of_the_models_family_is_recovered_from_four_spread_probes(  # type: ignore[no-untyped-def]
    floor, intercept, slope, max_exp
) -> None:
    curve = smooth_floor_line(floor, intercept, slope)
    model = fit_latency_curve(curve, 2**max_exp, flat_floor=True)
    cands = default_candidates(2**max_exp)
    assert sorted(model.probe_batches) == latency.spread_probes(cands, 4) and len(model.probe_batches) == 4
    truth = np.array([curve(b) for b in cands])
    np.testing.assert_allclose(model.predict_ms(cands), truth, rtol=2e-3)
    assert np.all(np.diff(model.predict_ms(np.geomspace(0.5, 2 ** (max_exp + 1), 200))) >= -1e-9)


def test_gpu_probes_are_spread_in_log_batch_and_the_knee_is_where_the_line_meets_the_floor() -> None:
    assert latency.spread_probes(default_candidates(1024), 4) == [1, 8, 128, 1024]
    assert latency.spread_probes([1, 2, 4], 4) == [1, 2, 4]
    model = fit_latency_curve(smooth_floor_line(10.0, 1.0, 0.1), 1024, flat_floor=True)
    assert model.knee_batch == pytest.approx(90.0, rel=0.01)
    with pytest.raises(ProfileError, match="at least 3 points"):
        latency.fit_floor_line([1, 2], [1.0, 2.0])
    phase = latency.fit_phase_model([1, 8, 128, 1024], [10.0, 10.1, 15.0, 103.0], flat_floor=True)
    assert phase.probe_batches == (1, 8, 128, 1024) and len(phase.vertices_batch) > 4
