"""`srifty fit-net` and `srifty testbed` from the command line: results, files and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
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
        (("{probe}", "--mtu-bytes", "0"), "--mtu-bytes must be a positive"),
        (("{probe}", "--folds", "1"), "--folds must be ≥ 2"),
        (("{probe}", "--half-life-days", "inf"), "--half-life-days must be ≥ 0"),
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


def _csv(tmp_path: Path, frame: pd.DataFrame, name: str = "probes.csv") -> str:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: f.drop(columns=["busbw_bytes_per_s"]), "lacks the column(s) busbw_bytes_per_s"),
        (lambda f: f.drop(columns=["size_bytes", "world_size"]), "lacks the column(s) size_bytes, world_size"),
        (lambda f: f.assign(size_bytes=2**20), "the probes hold one message size (1048576 B)"),
        (lambda f: f[f["size_bytes"].isin([4, 2**20])], "one message size ≤ the MTU (9001 B), 4 B"),
        (
            lambda f: f.assign(busbw_bytes_per_s=np.where(f.index % 7 == 0, np.nan, f["busbw_bytes_per_s"])),
            "busbw_bytes_per_s must be a positive bandwidth",
        ),
        (
            lambda f: f.assign(world_size=np.where(f.index == 3, np.nan, f["world_size"])),
            "world_size must be at least 1 rank",
        ),
        (lambda f: f.assign(timestamp_s=np.nan), "timestamp_s must be a time in seconds since the epoch"),
        (lambda f: f.iloc[:0], "no rows"),
    ],
)
def test_fit_net_on_malformed_or_too_small_probe_files_exits_2(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, mutate, message: str
) -> None:
    frame = synth_probes(np.random.default_rng(5), n_allocations=2, world_sizes=(2,), repeats=1)
    path = _csv(tmp_path, mutate(frame))
    code, _, err = cli("fit-net", path, "--out", str(tmp_path / "net.json"), "--trials", "0", "--jobs", "1")
    flat = " ".join(err.split())
    assert code == 2 and message in flat and "Traceback" not in err, flat


def test_fit_net_on_a_file_that_is_not_a_probe_set_exits_2(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "p.parquet"
    bad.write_text("not parquet")
    code, _, err = cli("fit-net", str(bad), "--out", str(tmp_path / "net.json"))
    assert code == 2 and "not a readable Parquet probe file" in " ".join(err.split())
    code, _, err = cli("fit-net", str(bad), "--base", "everything", "--out", str(tmp_path / "net.json"))
    assert code == 2 and "--base must be one of none, public, default" in " ".join(err.split())


def test_fit_net_with_the_public_tables_knows_p5(cli, probe_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from srifty.network import BandwidthModel

    out_path = tmp_path / "net.json"
    code, out, err = cli(
        "fit-net", str(probe_file), "--out", str(out_path), "--trials", "0", "--jobs", "1", "--base", "public"
    )
    assert code == 0, err
    assert "80 % interval" in out
    model = BandwidthModel.load(out_path)
    assert model.provenance_["base"]["which"] == "public"
    p5 = pd.DataFrame(
        {
            "size_bytes": [2**28],
            "world_size": [16],
            "n_nodes": [2],
            "gpus_per_node": [8],
            "rated_network_gbps": [3200.0],
        }
    ).assign(instance_type="p5.48xlarge", gpu="H100")
    assert model.familiarity(p5).tolist() == ["probed"]
    assert 1e11 < model.predict_busbw_bytes_per_s(p5)[0] < 5e11  # T02/T08/T09 measured 260–300 GB/s at 256 MiB
