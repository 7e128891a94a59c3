"""The embedded default: a probe set measured on the network testbed and the model fitted on it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from srifty.catalog import load_catalog
from srifty.network import load_default_model, load_default_probes
from srifty.network.dataset import file_fingerprint
from srifty.network.default import default_probes_path
from srifty.network.features import busbw_cap_bytes_per_s
from srifty.units import gbps_to_bytes_per_s
from srifty.vocab import PROBE_COLUMNS, busbw_bytes_per_s

SIZES = np.geomspace(4, 512 * 2**20, 28).round().astype(np.int64)


@pytest.fixture(scope="module")
def probes() -> pd.DataFrame:
    return load_default_probes()


def test_default_probes_are_small_emulated_and_labelled() -> None:
    path = default_probes_path()
    assert path.stat().st_size < 2 * 2**20
    readme = (path.parent / "README.md").read_text(encoding="utf-8")
    assert "emulated" in readme.lower() and "not on a cloud" in readme.lower()


def test_default_probes_cover_the_issue(probes: pd.DataFrame) -> None:
    assert list(probes.columns) == list(PROBE_COLUMNS)
    assert probes["emulated"].all() and (probes["emulation_scale"] == 50.0).all()
    per_family = probes.groupby("instance_type")["allocation_id"].nunique()
    assert len(per_family) >= 3 and (per_family >= 3).all()
    assert {2, 4, 8} <= set(probes["world_size"]) and set(probes["n_concurrent"]) == {1, 2, 4}
    assert (probes["size_bytes"] <= 9001).any() and (probes["size_bytes"] > 9001).any()


def test_default_probes_are_self_consistent(probes: pd.DataFrame) -> None:
    assert np.allclose(probes["time_s"], probes["measured_time_s"] / probes["emulation_scale"])
    expected = busbw_bytes_per_s(probes["size_bytes"], probes["world_size"], probes["time_s"])
    assert np.allclose(probes["busbw_bytes_per_s"], expected)
    assert np.allclose(probes["shaped_gbps"] * probes["emulation_scale"], probes["rated_network_gbps"])
    # tbf never lets a measured ring beat the slowest shaped link (5 % for timer granularity)
    across = probes[(probes["n_nodes"] >= 2) & (probes["gpus_per_node"] == 1)]
    link = gbps_to_bytes_per_s(1.0) * across["slowest_link_gbps"] * across["emulation_scale"]
    assert (across["busbw_bytes_per_s"] <= 1.05 * link).all()


def test_default_model_was_fitted_on_the_embedded_probes() -> None:
    model = load_default_model()
    fingerprints = [d["fingerprint"] for d in model.provenance_["datasets"]]
    assert fingerprints == [file_fingerprint(default_probes_path())]
    assert model.mtu_bytes == 9001 and model.target_ == "link_fraction"


def test_default_model_answers_g4dn_8xlarge_in_cloud_units() -> None:
    model = load_default_model()
    worlds = np.arange(2, 65)
    grid = pd.DataFrame([(s, n) for s in SIZES for n in worlds], columns=["size_bytes", "world_size"]).assign(
        instance_type="g4dn.8xlarge", rated_network_gbps=50.0, gpus_per_node=1, n_concurrent=1
    )
    pred = model.predict_busbw_bytes_per_s(grid)
    link = gbps_to_bytes_per_s(50.0)
    assert np.isfinite(pred).all() and (pred > 0).all() and (pred <= link).all()
    table = pred.reshape(len(SIZES), len(worlds))
    assert (np.diff(table, axis=1) <= 1e-9 * table[:, :-1]).all()  # never rises with world size
    assert (table[:, -1] == table[:, worlds.tolist().index(8)]).all()  # flat beyond the measured 8
    big = table[SIZES >= 2**22]
    assert (big > 0.3 * link).all()  # large messages run at a sizeable fraction of the link
    assert table[SIZES >= 2**22, 0].mean() > 50 * table[SIZES <= 64, 0].mean()  # latency-bound small ones


def test_default_model_answers_every_rated_catalog_type() -> None:
    types = [t for t in load_catalog().instance_types if t.rated_network_gbps is not None]
    query = pd.DataFrame(
        {
            "size_bytes": 2**24,
            "world_size": [2 * t.gpus_per_vm for t in types],
            "gpus_per_node": [t.gpus_per_vm for t in types],
            "rated_network_gbps": [t.rated_network_gbps for t in types],
        }
    )
    pred = load_default_model().predict_busbw_bytes_per_s(query)
    assert np.isfinite(pred).all() and (pred > 0).all()
    assert (pred <= busbw_cap_bytes_per_s(query) * (1 + 1e-12)).all()
