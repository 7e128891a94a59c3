"""The anchor sweep's knapsack: offers never needed are left out of it, with the same answer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.plan import Candidate
from srifty.plan.solvers import _min_weight_counts, cheapest_counts, needed_offers
from tests.factories import instance

# Few sizes and few prices, so that offers share sizes and tie on price (where leaving one out could change
# which of several equally cheap answers comes back).
offers = st.lists(
    st.tuples(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]), st.integers(0, 8), st.sampled_from([1.0, 2.0, 3.0])),
    min_size=1,
    max_size=14,
)


def _candidate(i: int, quota: int, price: float) -> Candidate:
    return Candidate(instance(f"t{i}", price=price), "on_demand", quota, price, (1,), 1, 1)


@settings(max_examples=300, deadline=None)
@given(offers=offers, total=st.sampled_from([8, 24, 64, 96, 128, 256, 1024]))
def test_leaving_out_the_offers_never_needed_returns_the_same_counts(
    offers: list[tuple[int, int, float]], total: int
) -> None:
    sizes = [s for s, _, _ in offers]
    cands = [_candidate(i, q, p) for i, (_, q, p) in enumerate(offers)]
    # the knapsack itself, every offer in it (min_weight_counts leaves the unneeded ones out first)
    every = _min_weight_counts(tuple(sizes), tuple(q for _, q, _ in offers), tuple(p for _, _, p in offers), total)
    assert cheapest_counts(cands, sizes, total) == (None if every is None else list(every))


def test_an_offer_is_left_out_only_behind_offers_of_its_size_that_cost_no_more_with_quota_enough() -> None:
    # total 64 takes at most 4 VMs of 16 samples: the first offer (quota 4, $1) covers them
    sizes, quotas, prices = [16, 16, 16, 32, 16], [4, 8, 2, 8, 8], [1.0, 2.0, 1.0, 5.0, 0.5]
    assert needed_offers(sizes, quotas, prices, 64) == [0, 3, 4]  # the $2 and the second $1: out
    # in reverse, the $0.5 offer (quota 8) comes first and covers every other offer of 16 samples
    assert needed_offers(sizes[::-1], quotas[::-1], prices[::-1], 64) == [0, 1]
    # a cheaper offer after a dearer one does not push it out
    assert needed_offers([16, 16], [8, 8], [2.0, 1.0], 64) == [0, 1]
    # a cheaper offer with too little quota does not push one out
    assert needed_offers([16, 16], [3, 8], [1.0, 2.0], 64) == [0, 1]


def test_a_remembered_program_hands_each_caller_counts_of_its_own() -> None:
    """Programs are remembered whole; a caller that changes the counts it got changes no later answer."""
    from srifty.plan.solvers import min_weight_counts

    first = min_weight_counts([4, 8], [3, 2], [1.0, 1.5], 16)
    assert first is not None and sum(n * s for n, s in zip(first, [4, 8], strict=True)) == 16
    expected = list(first)
    first[0] += 5
    assert min_weight_counts([4, 8], [3, 2], [1.0, 1.5], 16) == expected
    assert min_weight_counts((4, 8), (3, 2), (1, 1.5), 16) == expected  # any sequences, ints as weights
