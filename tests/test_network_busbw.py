"""Bus bandwidth arithmetic against hand computations, sizes, the MTU split."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from srifty.network.errors import ProbeError
from srifty.vocab import busbw_bytes_per_s, is_small_message
from srifty.vocab.busbw import (
    algbw_bytes_per_s,
    allreduce_time_s,
    parse_size_bytes,
    ring_bytes_factor,
    size_sweep_bytes,
)


def test_busbw_matches_a_hand_computation() -> None:
    # 1 MiB over 4 ranks in 10 ms: each rank moves 2·3/4·1048576 = 1572864 B, so 157286400 B/s.
    assert busbw_bytes_per_s(1_048_576, 4, 0.01) == pytest.approx(157_286_400.0, rel=1e-12)
    # 2 ranks: busbw equals algbw (2·1/2 = 1).
    assert busbw_bytes_per_s(1000, 2, 0.5) == pytest.approx(algbw_bytes_per_s(1000, 0.5)) == 2000.0
    # 8 ranks, 256 MiB in 1.5 s: 2·7/8·268435456/1.5 = 313174698.67 B/s.
    assert busbw_bytes_per_s(268_435_456, 8, 1.5) == pytest.approx(313_174_698.666, rel=1e-9)


def test_busbw_is_vectorised() -> None:
    sizes = np.array([4, 1024, 2**20])
    out = busbw_bytes_per_s(sizes, np.array([2, 4, 8]), np.array([1e-3, 1e-3, 1e-2]))
    assert out.shape == (3,)
    assert out[2] == pytest.approx(2 * 2**20 * 7 / (8 * 1e-2))
    assert ring_bytes_factor(1) == 0.0


@given(
    size=st.integers(4, 2**30),
    n=st.integers(2, 1024),
    t=st.floats(1e-7, 1e3, allow_nan=False, allow_infinity=False),
)
def test_time_and_busbw_are_inverse(size: int, n: int, t: float) -> None:
    assert allreduce_time_s(size, n, busbw_bytes_per_s(size, n, t)) == pytest.approx(t, rel=1e-9)


def test_single_rank_needs_no_time() -> None:
    assert allreduce_time_s(1024, 1, 1e9) == 0.0


def test_mtu_split_puts_the_mtu_itself_with_small_messages() -> None:
    sizes = np.array([4, 9000, 9001, 9002, 2**20])
    assert is_small_message(sizes).tolist() == [True, True, True, False, False]
    assert is_small_message(sizes, mtu_bytes=1500).tolist() == [True, False, False, False, False]


def test_default_sweep_covers_4b_to_512mib() -> None:
    sizes = size_sweep_bytes()
    assert sizes[0] == 4 and sizes[-1] == 512 * 2**20 and len(sizes) == 28
    assert size_sweep_bytes(4, 100, 4) == [4, 16, 64, 100]


@pytest.mark.parametrize(
    ("args", "message"),
    [((3, 64, 2), "multiple of the 4-byte"), ((64, 4, 2), "exceeds the maximum"), ((4, 64, 1), "≥ 2")],
)
def test_bad_sweeps_are_clear(args: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ProbeError, match=message):
        size_sweep_bytes(*args)


def test_parse_size() -> None:
    assert [parse_size_bytes(t) for t in ("4", "4B", "64KiB", "32M", "1GiB")] == [4, 4, 65536, 2**25, 2**30]
    with pytest.raises(ProbeError, match="64KiB"):
        parse_size_bytes("lots")
