"""The embedded default: testbed probes, public tables of real clusters, and the model fitted on both."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from srifty.catalog import load_catalog
from srifty.network import load_default_model, load_default_probes
from srifty.network.dataset import file_fingerprint
from srifty.network.default import default_probes_path, load_default_training_set
from srifty.network.features import busbw_cap_bytes_per_s
from srifty.network.public import load_public_probes
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


def test_default_model_was_fitted_on_the_embedded_probes_and_public_tables() -> None:
    model = load_default_model().allreduce
    data = default_probes_path().parent
    fingerprints = [d["fingerprint"] for d in model.provenance_["datasets"]]
    expected = [default_probes_path(), data / "public-tables.csv", data / "public-allreduce.csv"]
    assert fingerprints == [file_fingerprint(p) for p in expected]
    assert model.n_rows_ == len(load_default_training_set())
    assert model.mtu_bytes == 9001 and model.target_ == "link_fraction" and model.predicts_intra_node


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
    # flat beyond the largest world size in the training set (32 ranks, in the public tables)
    assert (table[:, -1] == table[:, worlds.tolist().index(32)]).all()
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


def _rows(name: str, nodes: int, sizes: np.ndarray) -> pd.DataFrame:
    t = load_catalog().get(name, region="us-east-1")
    return pd.DataFrame(
        {
            "size_bytes": sizes,
            "world_size": nodes * t.gpus_per_vm,
            "n_nodes": nodes,
            "gpus_per_node": t.gpus_per_vm,
            "rated_network_gbps": t.rated_network_gbps,
            "instance_type": name,
            "gpu": t.gpu_name,
        }
    )


def test_p5_and_p4d_are_answered_from_their_public_tables() -> None:
    model = load_default_model()
    public = load_public_probes()
    for name, tables in (("p5.48xlarge", ("T02", "T08", "T09")), ("p4d.24xlarge", ("T06",))):
        measured = public[(public["instance_type"] == name) & (public["n_nodes"] == 2)]
        by_size = measured[measured["size_bytes"] >= 2**20].groupby("size_bytes")["busbw_bytes_per_s"].median()
        query = _rows(name, 2, by_size.index.to_numpy())
        pred = model.predict_busbw_bytes_per_s(query)
        assert np.median(np.abs(pred / by_size.to_numpy() - 1)) < 0.15, name
        assert set(model.familiarity(query)) == {"probed"}
        assert all(t in model.explain(query.iloc[:1])[0] for t in tables), name


def test_one_multi_gpu_vm_gets_its_intra_node_link_from_the_nvlink_and_pcie_data() -> None:
    model = load_default_model()
    one_gib = np.array([2.0**30])
    p4d = model.predict_busbw_bytes_per_s(_rows("p4d.24xlarge", 1, one_gib))[0]
    # nccl-tests on one 8x A100 node: 230-235 GB/s at 1 GiB (T14, T16); the network rating would say 50 GB/s
    assert 150e9 < p4d < 300e9
    p3 = model.predict_busbw_bytes_per_s(_rows("p3.16xlarge", 1, one_gib))[0]
    assert 80e9 < p3 < 200e9  # 8x V100 NVLink 2: 135.5 GB/s measured on OCI (T15, never trained on)
    g4dn = model.predict_busbw_bytes_per_s(_rows("g4dn.12xlarge", 1, np.array([2.0**24])))[0]
    assert 8e9 < g4dn < 20e9  # the testbed's emulated PCIe loopback, 16 GB/s per direction


def test_a_type_never_probed_gets_a_wider_interval_than_a_probed_one() -> None:
    model = load_default_model()
    size = np.array([2.0**26])
    probed = pd.concat([_rows("g4dn.8xlarge", 4, size), _rows("p5.48xlarge", 2, size)])
    unprobed = pd.concat([_rows("p3.8xlarge", 4, size), _rows("g6.12xlarge", 2, size)])
    assert set(model.familiarity(probed)) == {"probed"} and set(model.familiarity(unprobed)) == {"unprobed"}
    widths = [np.log(h / lo) for lo, h in (model.predict_busbw_interval(f) for f in (probed, unprobed))]
    assert widths[1].min() > widths[0].max()
