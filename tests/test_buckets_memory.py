"""DDP bucket assignment (pure) and the linear memory model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.compute import MemoryModel, assign_buckets, fit_memory_model
from srifty.compute.buckets import bucket_limits_bytes
from srifty.errors import ProfileError


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 8 << 20), min_size=1, max_size=60),
    cap_mb=st.one_of(st.none(), st.floats(0.01, 30.0)),
    seed=st.randoms(use_true_random=False),
)
def test_buckets_partition_parameters_in_ready_order(sizes: list[int], cap_mb: float | None, seed) -> None:  # type: ignore[no-untyped-def]
    order = list(range(len(sizes)))
    seed.shuffle(order)
    fracs = sorted(seed.random() for _ in sizes)
    ready = [0.0] * len(sizes)
    for rank, index in enumerate(order):
        ready[index] = fracs[rank]
    buckets = assign_buckets(order, sizes, ready, cap_mb)
    flat = [i for b in buckets for i in b.param_indices]
    assert flat == order
    first, later = bucket_limits_bytes(cap_mb)
    for k, bucket in enumerate(buckets):
        limit = first if k == 0 else later
        assert bucket.size_bytes == sum(sizes[i] for i in bucket.param_indices)
        if k < len(buckets) - 1:
            assert bucket.size_bytes >= limit
            assert bucket.size_bytes - sizes[bucket.param_indices[-1]] < limit
    starts = [b.start_frac for b in buckets]
    assert starts == sorted(starts)
    assert all(b.start_frac >= b.ready_frac for b in buckets)


def test_default_first_bucket_is_one_mib() -> None:
    assert bucket_limits_bytes(None) == (1 << 20, 25 << 20)
    assert bucket_limits_bytes(10) == (10 << 20, 10 << 20)


def test_memory_model_fit_and_max_batch() -> None:
    model = fit_memory_model([1, 2, 4, 8], [110.0, 120.0, 140.0, 180.0])
    assert model.per_sample_bytes == pytest.approx(10.0)
    assert model.base_bytes == pytest.approx(100.0)
    assert model.max_batch(1000.0, usable_fraction=1.0, reserve_bytes=0.0) == 90
    assert MemoryModel(2000.0, 10.0).max_batch(1000.0, usable_fraction=1.0, reserve_bytes=0.0) == 0
    assert MemoryModel.from_dict(model.to_dict()) == model


def test_memory_model_is_conservative() -> None:
    model = fit_memory_model([1, 2, 3], [10.0, 30.0, 25.0])
    assert all(model.peak_bytes(b) >= p for b, p in [(1, 10.0), (2, 30.0), (3, 25.0)])
    with pytest.raises(ProfileError, match="two or more"):
        fit_memory_model([4, 4], [1.0, 2.0])
