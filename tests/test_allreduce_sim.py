"""The event-driven allreduce simulator: sharing rule, monotonicity, determinism, and the virtual-clock loop
equal (1e-9 relative) to the event loop it replaced."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from srifty.sim import simulate_allreduce
from srifty.sim.allreduce import _FINISH, _START
from srifty.vocab import bus_bytes

transfers = st.lists(st.tuples(st.floats(0, 1.0), st.floats(1e3, 1e9), st.floats(1e6, 1e10)), min_size=1, max_size=12)


def test_one_transfer_alone_finishes_in_size_over_busbw() -> None:
    trace = simulate_allreduce([0.25], [3e8], [1e9], cap_bytes_per_s=5e9)
    assert trace.end_s == pytest.approx(0.25 + 0.3)


def test_bus_bytes_formula() -> None:
    assert bus_bytes([100.0], 4)[0] == pytest.approx(2 * 100 * 3 / 4)
    assert bus_bytes([100.0], 1)[0] == 0.0


def test_two_concurrent_transfers_under_the_cap_run_at_full_speed() -> None:
    trace = simulate_allreduce([0.0, 0.0], [1e9, 1e9], [1e9, 1e9], cap_bytes_per_s=3e9)
    np.testing.assert_allclose(trace.finish_s, [1.0, 1.0])


def test_two_concurrent_transfers_over_the_cap_share_fairly() -> None:
    trace = simulate_allreduce([0.0, 0.0], [1e9, 1e9], [1e9, 1e9], cap_bytes_per_s=1e9)
    np.testing.assert_allclose(trace.finish_s, [2.0, 2.0])


def test_rates_are_recomputed_when_one_finishes() -> None:
    # Both share 1e9 (0.5e9 each) until the small one ends at 0.2 s; the big one then runs alone.
    trace = simulate_allreduce([0.0, 0.0], [1e8, 1e9], [1e9, 1e9], cap_bytes_per_s=1e9)
    assert trace.finish_s[0] == pytest.approx(0.2)
    assert trace.finish_s[1] == pytest.approx(0.2 + (1e9 - 1e8) / 1e9)


@settings(max_examples=200, deadline=None)
@given(
    base=transfers,
    extra=st.tuples(st.floats(0, 1.0), st.floats(1e3, 1e9), st.floats(1e6, 1e10)),
    cap=st.floats(1e6, 1e10),
)
def test_adding_a_transfer_never_makes_another_finish_earlier(base, extra, cap) -> None:  # type: ignore[no-untyped-def]
    starts, sizes, bws = map(list, zip(*base, strict=True))
    before = simulate_allreduce(starts, sizes, bws, cap)
    after = simulate_allreduce([*starts, extra[0]], [*sizes, extra[1]], [*bws, extra[2]], cap)
    assert np.all(after.finish_s[:-1] >= before.finish_s - 1e-9 * np.maximum(before.finish_s, 1.0))


@settings(max_examples=100, deadline=None)
@given(base=transfers, cap=st.floats(1e6, 1e10))
def test_each_transfer_takes_at_least_its_solo_time_and_is_deterministic(base, cap) -> None:  # type: ignore[no-untyped-def]
    starts, sizes, bws = (np.array(x) for x in zip(*base, strict=True))
    trace = simulate_allreduce(starts, sizes, bws, cap)
    solo = sizes / bws
    assert np.all(trace.finish_s - starts >= solo * (1 - 1e-9))
    again = simulate_allreduce(starts, sizes, bws, cap)
    np.testing.assert_array_equal(trace.finish_s, again.finish_s)


def test_sequential_mode_runs_one_at_a_time() -> None:
    trace = simulate_allreduce([0.0, 0.0, 5.0], [1e9, 1e9, 1e9], [1e9, 1e9, 1e9], 1e10, mode="sequential")
    np.testing.assert_allclose(trace.finish_s, [1.0, 2.0, 6.0])


def test_no_transfers_and_bad_input() -> None:
    assert simulate_allreduce([], [], [], 1.0).end_s == 0.0
    with pytest.raises(Exception, match="positive"):
        simulate_allreduce([0.0], [1.0], [0.0], 1.0)


def reference_fair_share(  # the event loop this module replaced (re-queues on every change), kept as a reference
    starts: NDArray[np.float64], sizes: NDArray[np.float64], busbw: NDArray[np.float64], cap: float
) -> NDArray[np.float64]:
    heap: list[tuple[float, int, int, int, int]] = []  # (time, priority, seq, transfer, version)
    seq = 0
    for i in np.argsort(starts, kind="stable"):
        heap.append((float(starts[i]), _START, seq, int(i), 0))
        seq += 1
    heapq.heapify(heap)
    # Plain lists: element access on numpy arrays costs more than the arithmetic in this loop.
    remaining = [float(v) for v in sizes]
    own = [float(v) for v in busbw]
    rate = [0.0] * len(remaining)
    version = [0] * len(remaining)
    finish = [0.0] * len(remaining)
    active: list[int] = []
    now = 0.0

    def reschedule() -> None:
        nonlocal seq
        aggregate = sum(own[j] for j in active)
        share = cap / len(active) if active else 0.0
        for j in active:
            new_rate = own[j] if aggregate < cap else min(own[j], share)
            if new_rate == rate[j]:
                continue  # its queued finish time still holds
            rate[j] = new_rate
            version[j] += 1
            heapq.heappush(heap, (now + remaining[j] / new_rate, _FINISH, seq, j, version[j]))
            seq += 1

    while heap:
        time, kind, _, j, ver = heapq.heappop(heap)
        if kind == _FINISH and ver != version[j]:
            continue  # superseded by a later reschedule
        elapsed = time - now
        if elapsed > 0:
            for k in active:
                remaining[k] = max(remaining[k] - rate[k] * elapsed, 0.0)
        now = max(now, time)
        if kind == _START:
            active.append(j)
        else:
            active.remove(j)
            remaining[j] = 0.0
            rate[j] = 0.0
            finish[j] = now
        reschedule()
    finish_s = np.asarray(finish)
    return finish_s


@settings(max_examples=300, deadline=None)
@given(
    base=st.lists(st.tuples(st.floats(0, 1.0), st.floats(1e3, 1e9), st.floats(1e6, 1e10)), min_size=1, max_size=40),
    cap=st.floats(1e6, 1e10),
)
def test_the_virtual_clock_gives_the_event_loops_results(base, cap) -> None:  # type: ignore[no-untyped-def]
    starts, sizes, bws = (np.array(x) for x in zip(*base, strict=True))
    got = simulate_allreduce(starts, sizes, bws, cap).finish_s
    np.testing.assert_allclose(got, reference_fair_share(starts, sizes, bws, cap), rtol=1e-9, atol=0)


def test_the_virtual_clock_on_a_ddp_sized_exchange() -> None:
    rng = np.random.default_rng(0)
    n = 120
    starts = np.sort(rng.uniform(0, 0.05, n))
    sizes = rng.uniform(1e5, 5e7, n)
    bws = rng.uniform(1e8, 3e9, n)
    for cap in (5e8, 2e9, 1e11):
        got = simulate_allreduce(starts, sizes, bws, cap).finish_s
        np.testing.assert_allclose(got, reference_fair_share(starts, sizes, bws, cap), rtol=1e-9, atol=0)
