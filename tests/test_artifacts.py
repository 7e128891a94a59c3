"""Versioned artefacts: atomic writes, kind and version checks, migrations."""

from __future__ import annotations

from pathlib import Path

import pytest

from srifty.artifacts import atomic_write_text, read_json_artifact, write_json_artifact
from srifty.errors import ArtifactError


def test_round_trip_and_no_temp_files_left(tmp_path: Path) -> None:
    path = write_json_artifact(tmp_path / "a" / "x.json", "thing", 2, {"value": 3})
    assert read_json_artifact(path, "thing", 2)["value"] == 3
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]


def test_wrong_kind_and_newer_version_are_clear(tmp_path: Path) -> None:
    path = write_json_artifact(tmp_path / "x.json", "plan", 1, {})
    with pytest.raises(ArtifactError, match="is a 'plan' file, not a profile file"):
        read_json_artifact(path, "profile", 1)
    with pytest.raises(ArtifactError, match="newer than this srifty"):
        read_json_artifact(write_json_artifact(tmp_path / "y.json", "plan", 9, {}), "plan", 1)


def test_migrations_run_in_order(tmp_path: Path) -> None:
    path = write_json_artifact(tmp_path / "x.json", "thing", 1, {"a": 1})
    steps = {1: lambda d: {**d, "b": d["a"] + 1}, 2: lambda d: {**d, "c": d["b"] + 1}}
    doc = read_json_artifact(path, "thing", 3, steps)
    assert (doc["a"], doc["b"], doc["c"], doc["schema_version"]) == (1, 2, 3, 3)
    with pytest.raises(ArtifactError, match="can no longer read"):
        read_json_artifact(path, "thing", 3, {})


def test_not_json_and_missing(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "bad.json", "{nope")
    with pytest.raises(ArtifactError, match="not valid JSON"):
        read_json_artifact(tmp_path / "bad.json", "thing", 1)
    with pytest.raises(ArtifactError, match="does not exist"):
        read_json_artifact(tmp_path / "none.json", "thing", 1)


def test_written_files_get_umask_permissions_not_private_temp_ones(tmp_path: Path) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "plan.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
