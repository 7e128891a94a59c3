"""Age-decayed weights, allocation-grouped folds and MAPE."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.network.errors import NetModelError
from srifty.network.tuning import decay_weights, grouped_folds, mape

DAY_S = 86400.0


def test_decay_halves_per_half_life_from_the_newest_row() -> None:
    stamps = np.array([0.0, 10 * DAY_S, 20 * DAY_S, 30 * DAY_S])
    w = decay_weights(stamps, half_life_s=10 * DAY_S)
    assert w.tolist() == pytest.approx([0.125, 0.25, 0.5, 1.0])


def test_decay_with_explicit_reference_and_future_rows() -> None:
    w = decay_weights(np.array([0.0, 5.0, 20.0]), half_life_s=5.0, reference_s=10.0)
    assert w.tolist() == pytest.approx([0.25, 0.5, 1.0])


def test_no_half_life_means_equal_weights() -> None:
    assert decay_weights(np.array([1.0, 1e9]), None).tolist() == [1.0, 1.0]


def test_bad_half_life_and_timestamps_are_clear() -> None:
    with pytest.raises(NetModelError, match="positive number of seconds"):
        decay_weights(np.array([1.0]), 0.0)
    with pytest.raises(NetModelError, match="no valid timestamp_s"):
        decay_weights(np.array([1.0, np.nan]), 10.0)


@given(
    ages=st.lists(st.floats(0, 1e8, allow_nan=False), min_size=2, max_size=30),
    half=st.floats(1.0, 1e7, allow_nan=False),
)
def test_decay_is_monotone_in_age_and_in_unit_interval(ages: list[float], half: float) -> None:
    stamps = 1e9 - np.array(ages)
    w = decay_weights(stamps, half)
    assert ((w >= 0) & (w <= 1)).all()  # very old rows may underflow to weight 0
    assert w[int(np.argmin(ages))] == 1.0
    order = np.argsort(ages)
    assert (np.diff(w[order]) <= 1e-15).all()


@settings(max_examples=60, deadline=None)
@given(
    groups=st.lists(st.integers(0, 12), min_size=2, max_size=200).filter(lambda g: len(set(g)) >= 2),
    n_folds=st.integers(2, 8),
    seed=st.integers(0, 2**16),
)
def test_grouped_folds_never_leak_an_allocation(groups: list[int], n_folds: int, seed: int) -> None:
    labels = np.array([f"alloc-{g}" for g in groups])
    folds = grouped_folds(labels, n_folds, np.random.default_rng(seed))
    assert len(folds) == min(n_folds, len(set(groups)))
    tested = np.concatenate([test for _, test in folds])
    assert sorted(tested.tolist()) == list(range(len(groups)))  # each row is tested exactly once
    for train, test in folds:
        assert len(test) > 0 and len(train) > 0
        assert set(labels[train]).isdisjoint(labels[test])
        assert len(np.intersect1d(train, test)) == 0


def test_grouped_folds_need_two_allocations() -> None:
    with pytest.raises(NetModelError, match="at least 2 allocations"):
        grouped_folds(["a", "a", "a"], 5, np.random.default_rng(0))


def test_grouped_folds_are_seeded() -> None:
    labels = [str(i % 7) for i in range(70)]
    a = grouped_folds(labels, 3, np.random.default_rng(1))
    b = grouped_folds(labels, 3, np.random.default_rng(1))
    assert all((x[1] == y[1]).all() for x, y in zip(a, b, strict=True))


def test_mape() -> None:
    assert mape([100.0, 200.0], [110.0, 150.0]) == pytest.approx((0.1 + 0.25) / 2)
    assert mape([100.0, 200.0], [110.0, 150.0], weights=[1.0, 0.0]) == pytest.approx(0.1)


def test_decay_counts_age_from_the_newest_row_of_each_group() -> None:
    stamps = np.array([0.0, 10 * DAY_S, 0.0, 5 * DAY_S])
    w = decay_weights(stamps, 10 * DAY_S, groups=["p5", "p5", "g4dn", "g4dn"])
    # p5's old row is a half-life older than p5's newest; g4dn's rows are compared with g4dn's newest only
    assert w.tolist() == pytest.approx([0.5, 1.0, 0.5**0.5, 1.0])
