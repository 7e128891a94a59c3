"""`srifty fit-net` and `srifty testbed` from the command line: results, files and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from srifty.network import append_probes
from srifty.vocab.probes import PROBE_COLUMNS
from tests.network_synth import synth_probes


@pytest.fixture(scope="module")
def probe_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame = synth_probes(np.random.default_rng(5), n_allocations=3, world_sizes=(2, 4), repeats=1)
    for column, dtype in PROBE_COLUMNS.items():
        if column not in frame.columns:
            frame[column] = "x" if dtype == "string" else (False if dtype == "bool" else 1.0)
    path = tmp_path_factory.mktemp("probes") / "p.parquet"
    append_probes(path, frame)
    return path


def test_fit_net_writes_the_model_and_prints_metrics(cli, probe_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out_path = str(tmp_path / "m" / "net.json")
    code, out, err = cli("fit-net", str(probe_file), "--out", out_path, "--trials", "2", "--folds", "3", "--jobs", "1")
    assert code == 0, err
    assert "≤ 9001 B" in out and "> 9001 B" in out and "CV MAPE" in out
    meta = json.loads((tmp_path / "m" / "net.meta.json").read_text())
    assert meta["provenance"]["datasets"][0]["fingerprint"].startswith("sha256:")
    assert len(list((tmp_path / "m").glob("net.small.*.xgb.json"))) == 1
    assert len(list((tmp_path / "m").glob("net.large.*.xgb.json"))) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("/nonexistent.parquet",), "does not exist"),
        (("{probe}", "--target", "time"), "--target must be one of auto, link_fraction, busbw"),
        (("{probe}", "--mtu-bytes", "0"), "mtu_bytes (--mtu-bytes) must be a positive"),
        (("{probe}", "--folds", "1"), "n_folds (--folds) ≥ 2"),
    ],
)
def test_fit_net_bad_input_exits_2(  # type: ignore[no-untyped-def]
    cli, probe_file: Path, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    argv = [a.replace("{probe}", str(probe_file)) for a in args]
    code, _, err = cli("fit-net", *argv, "--out", str(tmp_path / "net.json"), "--trials", "0")
    assert code == 2 and message in " ".join(err.split()) and "Traceback" not in err


def test_testbed_needs_root(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    code, _, err = cli("testbed", "up", "--hosts", "2")
    assert code == 2 and "needs root" in err and "Traceback" not in err


def test_testbed_bad_name_and_unknown_family(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("testbed", "up", "--name", "Way-Too-Long")
    assert code == 2 and "1 to 6 lowercase letters or digits" in err
    code, _, err = cli("testbed", "up", "--instance-type", "g4dn.8xlarg", "--name", "zz")
    assert code == 2 and "Did you mean 'g4dn.8xlarge'" in err


def test_testbed_launch_needs_a_command(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("testbed", "launch", "--name", "zz")
    assert code == 2 and "after `--`" in err
