"""Checkpoint locations (srifty.checkpoints): a path or an fsspec URL, the `latest` marker through both, and
the checks `srifty run --hosts --ckpt-dir` makes before anything is launched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fsspec
import pytest

from srifty.checkpoints import LATEST, check_location, is_url, join, read_latest, write_latest
from srifty.errors import SpecError
from tests.conftest import REPO


def test_urls_are_what_torch_sends_to_its_fsspec_storage() -> None:
    assert is_url("s3://bucket/run") and is_url("file:///shared/run") and is_url("simplecache::s3://b/r")
    assert not is_url("/shared/run") and not is_url("runs/ckpt") and not is_url(Path("s3:/x"))
    assert join("s3://bucket/run/", "step-00000010") == "s3://bucket/run/step-00000010"
    assert join("/shared/run", "step-00000010") == Path("/shared/run/step-00000010")


@pytest.mark.parametrize("kind", ["path", "file-url", "memory-url"])
def test_the_latest_marker_round_trips(kind: str, tmp_path: Path) -> None:
    location = {
        "path": str(tmp_path / "ckpt"),
        "file-url": f"file://{tmp_path}/ckpt",
        "memory-url": f"memory://srifty-test-{tmp_path.name}/ckpt",  # in-process: fine within one test
    }[kind]
    assert read_latest(location) is None
    write_latest(location, 10, "step-00000010")
    write_latest(location, 20, "step-00000020")
    assert read_latest(location) == {"step": 20, "path": "step-00000020"}
    fs, root = fsspec.core.url_to_fs(location)
    assert [Path(p).name for p in fs.ls(root, detail=False)] == [LATEST], "a temp marker was left behind"
    if kind == "file-url":
        assert json.loads((tmp_path / "ckpt" / LATEST).read_text()) == {"step": 20, "path": "step-00000020"}


@pytest.mark.parametrize("text", ["", "[1, 2]", '{"step": 3}', '{"step": "x", "path": "step-3"}'])
def test_a_marker_that_is_not_one_is_refused(text: str, tmp_path: Path) -> None:
    (tmp_path / LATEST).write_text(text)
    with pytest.raises(ValueError):
        read_latest(f"file://{tmp_path}")


def test_paths_and_installed_schemes_pass(tmp_path: Path) -> None:
    for location in (str(tmp_path), "runs/ckpt", f"file://{tmp_path}", f"simplecache::file://{tmp_path}"):
        assert check_location(location) == location


@pytest.mark.parametrize(
    ("location", "says"),
    [
        ("  ", "is empty"),
        ("s3://", "names no bucket"),
        ("s3:///", "names no bucket"),
        ("://bucket/run", "not a URL scheme"),
        ("S3://bucket/run", "not a URL scheme"),
        ("s3://bucket/my run", "no spaces"),
        ("nosuchfs://bucket/run", "knows no 'nosuchfs://' filesystem"),
        ("memory://run", "one process's memory"),
        ("simplecache::memory://run", "one process's memory"),
    ],
)
def test_bad_locations_are_named(location: str, says: str) -> None:
    with pytest.raises(SpecError, match=says):
        check_location(location)


def test_a_scheme_whose_package_is_missing_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "s3fs", None)  # as if s3fs were not installed
    monkeypatch.delitem(sys.modules["fsspec.registry"]._registry, "s3", raising=False)  # nor imported before
    with pytest.raises(SpecError, match=r"'s3://' filesystem is not installed.*pip install s3fs"):
        check_location("s3://bucket/run")


def test_without_fsspec_a_url_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(SpecError, match="pip install fsspec"):
        check_location("gs://bucket/run")
    assert check_location("/shared/run") == "/shared/run"  # a path needs no fsspec


def test_importing_the_controller_side_imports_no_fsspec() -> None:
    modules = "srifty, srifty.checkpoints, srifty.runtime.cluster_api, srifty.cli.main"
    code = f"import sys, {modules}\nprint('fsspec' in sys.modules, 'torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("location", "says"), [("nosuchfs://b/run", "knows no 'nosuchfs://'"), ("memory://run", "one process's memory")]
)
def test_the_cli_refuses_a_bad_ckpt_dir_before_launch(location: str, says: str, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("127.0.0.1 g4dn.xlarge spot\n")
    result = subprocess.run(
        [sys.executable, "-m", "srifty.cli.main", "run", str(REPO / "examples" / "tiny-local.yaml"), "--hosts",
         str(hosts), "--launcher", "local", "--run-dir", str(tmp_path / "run"), "--ckpt-dir", location, "--",
         "python", "train.py"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert says in " ".join(result.stderr.split()) and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()
