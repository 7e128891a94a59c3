"""Finding the host that slows a synchronous job down, from the workers' own compute times."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.runtime.stragglers import find_stragglers


def test_the_host_several_times_slower_than_the_others_is_found() -> None:
    found = find_stragglers({"a": [0.05, 0.051, 0.049], "b": [0.05, 0.052, 0.05], "c": [0.21, 0.2, 0.22]})
    assert [s.host for s in found] == ["c"]
    assert found[0].ratio == pytest.approx(0.21 / 0.05, rel=1e-6)  # medians: a 0.05, b 0.05, c 0.21
    assert "4.2x" in found[0].describe()


def test_two_hosts_the_slower_one_is_found_and_equal_hosts_give_none() -> None:
    assert [s.host for s in find_stragglers({"a": [1.0] * 3, "b": [3.0] * 3})] == ["b"]
    assert find_stragglers({"a": [1.0] * 3, "b": [1.2] * 3, "c": [0.9] * 3}) == []


def test_too_few_samples_or_hosts_judge_nothing() -> None:
    assert find_stragglers({"a": [0.05] * 3, "b": [1.0, 1.0]}) == []
    assert find_stragglers({"a": [1.0] * 10}) == []
    with pytest.raises(ValueError, match="above 1"):
        find_stragglers({"a": [1.0] * 3}, factor=1.0)


@settings(max_examples=100, deadline=None)
@given(
    base=st.floats(1e-4, 10.0),
    noise=st.lists(st.floats(0.9, 1.1), min_size=12, max_size=12),
    slow=st.floats(2.0, 50.0),
    hosts=st.integers(2, 6),
    which=st.integers(0, 5),
)
def test_one_host_slowed_by_2x_or_more_is_the_only_one_found(
    base: float, noise: list[float], slow: float, hosts: int, which: int
) -> None:
    """Within ±10% noise no host is found; one host slowed 2x or more is found, and only it."""
    names = [f"h{i}" for i in range(hosts)]
    even = {n: [base * noise[(i + k) % 12] for k in range(4)] for i, n in enumerate(names)}
    assert find_stragglers(even) == []
    target = names[which % hosts]
    slowed = {n: [v * slow for v in vs] if n == target else vs for n, vs in even.items()}
    assert [s.host for s in find_stragglers(slowed)] == [target]
