"""The shared vocabulary: the transfer columns a bandwidth model is asked about are probe-row columns."""

from __future__ import annotations

import numpy as np
import pytest

from srifty.errors import ArtifactError
from srifty.vocab import PROBE_COLUMNS, TRANSFER_COLUMNS, bus_bytes, ring_bytes_factor, transfer_frame


def test_transfer_columns_are_probe_columns_with_the_same_meaning() -> None:
    assert set(TRANSFER_COLUMNS) <= set(PROBE_COLUMNS)


def test_transfer_frame_takes_exactly_the_transfer_columns() -> None:
    frame = transfer_frame({name: [1] for name in reversed(TRANSFER_COLUMNS)})
    assert tuple(frame.columns) == TRANSFER_COLUMNS
    with pytest.raises(ArtifactError, match="world_size"):
        transfer_frame({name: [1] for name in TRANSFER_COLUMNS if name != "world_size"})
    with pytest.raises(ArtifactError, match="nodes"):
        transfer_frame({**{name: [1] for name in TRANSFER_COLUMNS}, "nodes": [1]})


def test_bus_bytes_is_size_times_the_ring_factor() -> None:
    sizes = np.array([4.0, 1024.0, 2.0**26])
    for world in (1, 2, 3, 8, 64):
        np.testing.assert_allclose(bus_bytes(sizes, world), sizes * ring_bytes_factor(world), rtol=1e-15)


def test_collectives_count_bus_bytes_as_nccl_tests_does() -> None:
    """An allreduce sends ``2·s·(n−1)/n`` per rank, an all-gather or reduce-scatter of the whole buffer
    ``s·(n−1)/n``; bus bandwidth divides those by the time, so a link reaches the same busbw in each."""
    from srifty.vocab import COLLECTIVES, busbw_bytes_per_s

    for world in (2, 3, 8):
        s = 2.0**24
        assert float(bus_bytes(s, world, "allreduce")) == pytest.approx(2 * float(bus_bytes(s, world, "all_gather")))
        assert float(bus_bytes(s, world, "reduce_scatter")) == pytest.approx(s * (world - 1) / world)
        for collective in COLLECTIVES:
            moved = float(bus_bytes(s, world, collective))
            assert float(busbw_bytes_per_s(s, world, moved / 1e9, collective)) == pytest.approx(1e9)
    with pytest.raises(Exception, match="all_gather"):
        bus_bytes(1.0, 2, "allgather")


def test_the_bandwidth_models_features_are_transfer_columns() -> None:
    """Each feature is a transfer column or derived from transfer columns alone (so the simulator's query,
    built by :func:`transfer_frame`, can always answer it)."""
    from srifty.network.features import DEFAULT_NUMERIC_FEATURES, DERIVED_FEATURES, derived_column

    assert set(DEFAULT_NUMERIC_FEATURES) - set(DERIVED_FEATURES) <= set(TRANSFER_COLUMNS)
    frame = transfer_frame(
        {
            "size_bytes": [2.0**20, 2.0**20],
            "world_size": [8, 16],
            "n_nodes": [1, 2],
            "gpus_per_node": [8, 8],
            "n_concurrent": [1, 1],
            "rated_network_gbps": [400.0, 400.0],
            "instance_type": ["p4d.24xlarge"] * 2,
            "gpu": ["A100"] * 2,
            "cloud": ["aws"] * 2,
            "region": ["us-east-1"] * 2,
            "collective": ["allreduce", "all_gather"],
        }
    )
    for name in DERIVED_FEATURES:
        values = derived_column(frame, name)
        assert values is not None and np.isfinite(values).all(), name
