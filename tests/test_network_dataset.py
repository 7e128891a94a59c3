"""Probe sets: schema, atomic appends that lose nothing, readers' errors."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from srifty.errors import ArtifactError
from srifty.network import append_probes, read_probes
from srifty.vocab import PROBE_COLUMNS
from srifty.vocab.probes import probe_frame


def _row(i: int) -> dict[str, object]:
    row: dict[str, object] = {c: 0 for c in PROBE_COLUMNS}
    row.update(
        {c: "x" for c, t in PROBE_COLUMNS.items() if t == "string"},
        busbw_bytes_per_s=1e9,
        size_bytes=4 * (i + 1),
        world_size=2,
        repeat=i,
        allocation_id=f"a{i % 3}",
        emulated=False,
        emulation_scale=1.0,
        rated_network_gbps=float("nan"),
    )
    return row


def test_append_creates_then_extends_with_schema_metadata(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "p.parquet"
    assert append_probes(path, [_row(0), _row(1)]) == 2
    assert append_probes(path, [_row(2)]) == 3
    frame = read_probes(path)
    assert list(frame.columns) == list(PROBE_COLUMNS)
    assert frame["repeat"].tolist() == [0, 1, 2]
    meta = pq.read_schema(path).metadata[b"srifty"]
    assert b'"kind": "probe-set"' in meta and b'"schema_version": 1' in meta
    assert sorted(p.name for p in path.parent.iterdir()) == ["p.parquet", "p.parquet.lock"]


def _append_many(path: str, start: int) -> None:
    for i in range(start, start + 10):
        append_probes(path, [_row(i)])


def test_concurrent_appenders_lose_no_row(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(path), s)) for s in (0, 100, 200)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert sorted(read_probes(path)["repeat"]) == sorted([*range(10), *range(100, 110), *range(200, 210)])


def test_rows_missing_columns_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="lack the columns"):
        probe_frame([{"size_bytes": 4}])
    with pytest.raises(ArtifactError, match="name the file"):
        append_probes(tmp_path / "p.csv", [_row(0)])


def test_reader_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="does not exist"):
        read_probes(tmp_path / "none.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(ArtifactError, match="not a readable Parquet"):
        read_probes(tmp_path / "junk.parquet")
    plan_meta = {b"srifty": b'{"kind": "plan", "schema_version": 1}'}
    table = pa.table({"a": [1]}).replace_schema_metadata(plan_meta)
    pq.write_table(table, tmp_path / "plan.parquet")
    with pytest.raises(ArtifactError, match="is a 'plan' file"):
        read_probes(tmp_path / "plan.parquet")
    with pytest.raises(ArtifactError, match="no probe files"):
        read_probes([])


def test_csv_and_several_files_are_read(tmp_path: Path) -> None:
    row = {"size_bytes": 4, "world_size": 2, "busbw_bytes_per_s": 1.0}
    pd.DataFrame([row]).to_csv(tmp_path / "a.csv", index=False)
    append_probes(tmp_path / "b.parquet", [_row(0)])
    frame = read_probes([tmp_path / "a.csv", tmp_path / "b.parquet"])
    assert len(frame) == 2
