"""The windowed sums that count a search space, against their definition."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.plan.space import _shifted_window_sum


@settings(max_examples=200, deadline=None)
@given(
    ways=st.lists(st.integers(0, 10**6), min_size=1, max_size=200),
    step=st.integers(1, 40),
    count=st.integers(0, 12),
)
def test_the_shifted_window_sum_is_its_definition(ways: list[int], step: int, count: int) -> None:
    w = np.array(ways, dtype=float)
    expected = [sum(w[s - c * step] for c in range(1, count + 1) if s - c * step >= 0) for s in range(len(w))]
    assert _shifted_window_sum(w, step, count).tolist() == expected
