"""The public allreduce tables bundled with srifty: provenance, conversion to probe rows, consistency."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from srifty.network.public import CHECK, EXTRA_COLUMNS, TRAIN, load_public_probes, load_public_tables
from srifty.vocab import PROBE_COLUMNS


def data_dir() -> Path:
    return Path(str(resources.files("srifty.network").joinpath("data")))


def test_every_table_has_rows_a_source_and_its_assumptions_written_down() -> None:
    tables = load_public_tables()
    rows = pd.read_csv(data_dir() / "public-allreduce.csv")
    assert set(tables["use"]) == {TRAIN, CHECK}
    assert set(rows["table_id"]) == set(tables["table_id"])
    assert rows["source_url"].notna().all() and rows.groupby("table_id")["source_url"].nunique().eq(1).all()
    assert tables["assumptions"].notna().all()
    readme = (data_dir() / "README.md").read_text(encoding="utf-8")
    for table in tables.loc[tables["use"] == TRAIN, "table_id"]:
        assert f"| {table.split('_')[0]}" in readme or table.split("_")[0] in readme, table
    assert "nothing in them was measured by srifty" in readme.lower()


def test_public_rows_are_probe_rows_one_allocation_per_table() -> None:
    frame = load_public_probes((TRAIN, CHECK))
    assert list(frame.columns) == [*PROBE_COLUMNS, *EXTRA_COLUMNS]
    assert (frame["allocation_id"] == frame["table_id"]).all()
    assert (frame["size_bytes"] > 0).all() and (frame["busbw_bytes_per_s"] > 0).all()
    assert (frame["world_size"] == frame["n_nodes"] * frame["gpus_per_node"]).all()
    assert set(frame["backend"]) == {"nccl"} and not frame["emulated"].any()
    train = load_public_probes()
    assert (
        train["table_id"].nunique() == 14
        and (train["tool"] == "nccl-tests").groupby(train["table_id"]).all().sum() == 11
    )


def test_busbw_from_the_published_time_agrees_with_the_published_busbw() -> None:
    rows = pd.read_csv(data_dir() / "public-allreduce.csv")
    frame = load_public_probes((TRAIN, CHECK))
    merged = frame.merge(rows, on=["table_id", "size_bytes"])
    timed = merged[merged["time_us"].notna()]
    published = timed["busbw_GBps"].to_numpy() * 1e9
    ours = timed["busbw_bytes_per_s"].to_numpy()
    # nccl-tests prints busbw with two decimals (GB/s) and time with one (µs)
    assert np.all(np.abs(ours - published) <= 0.006e9 + 0.01 * published)


def test_ratings_and_links_are_the_catalogs_for_aws_types() -> None:
    from srifty.catalog import load_catalog
    from srifty.network.features import intra_node_link_gbps_of_gpu

    catalog = load_catalog()
    tables = load_public_tables()
    for row in tables.itertuples():
        assert row.intra_node_link_gbps == pytest.approx(intra_node_link_gbps_of_gpu(row.gpu)), row.table_id
        if row.instance_type in catalog.names() and np.isfinite(row.rated_network_gbps):
            offers = [t for t in catalog.instance_types if t.name == row.instance_type]
            assert {t.rated_network_gbps for t in offers} == {row.rated_network_gbps}, row.table_id
