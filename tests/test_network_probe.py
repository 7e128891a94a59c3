"""`srifty probe` for real: two gloo processes on 127.0.0.1 under torchrun, and a hung rank."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import srifty
from srifty.network import read_probes
from srifty.network.probe.runner import describe_lag, fmt_bytes
from srifty.vocab import busbw_bytes_per_s
from tests.conftest import REPO

pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _torchrun(tmp_path: Path, *probe_args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2"]
    cmd += ["--master-addr", "127.0.0.1", "--master-port", str(_free_port())]
    cmd += ["-m", "srifty.cli.main", "probe"]
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [*cmd, *probe_args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=timeout_s,
        check=False,
    )


def test_two_process_gloo_probe_on_loopback(tmp_path: Path) -> None:
    started = time.time()
    result = _torchrun(
        tmp_path,
        *("--out", "p.parquet", "--max-size", "64KiB", "--size-step", "16", "--repeats", "2"),
        *("--concurrency", "1,2", "--warmup", "1"),
        *("--instance-type", "g4dn.8xlarge", "--region", "us-east-1"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    frame = read_probes(tmp_path / "p.parquet")
    assert len(frame) == 5 * 2 * 2  # sizes 4 B, 64 B, 1 KiB, 16 KiB, 64 KiB × concurrency 1, 2 × 2 repeats
    assert sorted(frame["size_bytes"].unique()) == [4, 64, 1024, 16384, 65536]
    assert set(frame["n_concurrent"]) == {1, 2} and set(frame["repeat"]) == {0, 1}
    assert (frame["world_size"] == 2).all() and (frame["backend"] == "gloo").all()
    assert (frame["gpus_per_node"] == 2).all() and (frame["n_nodes"] == 1).all()
    # the catalog filled the represented instance; the real CPU is recorded
    assert (frame["instance_type"] == "g4dn.8xlarge").all() and (frame["rated_network_gbps"] == 50.0).all()
    assert (frame["gpu"] == "T4").all() and frame["cpu"].str.len().min() > 0
    assert frame["allocation_id"].nunique() == 1 and (frame["time_s"] == frame["measured_time_s"]).all()
    assert (frame["time_s"] > 0).all() and (frame["inner_iters"] >= 1).all()
    expected = busbw_bytes_per_s(frame["size_bytes"], frame["world_size"], frame["time_s"])
    assert np.allclose(frame["busbw_bytes_per_s"], expected)
    assert np.allclose(frame["algbw_bytes_per_s"], frame["size_bytes"] / frame["time_s"])
    assert (frame["timestamp_s"] >= started - 1).all() and (frame["timestamp_s"] <= time.time()).all()
    assert "appended 20 rows" in result.stderr


def test_all_gather_and_reduce_scatter_are_probed_with_their_own_bus_bandwidth(tmp_path: Path) -> None:
    result = _torchrun(
        tmp_path,
        *("--out", "p.parquet", "--max-size", "64KiB", "--size-step", "64", "--repeats", "1"),
        *("--concurrency", "1", "--warmup", "1", "--collective", "all_gather,reduce_scatter"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    frame = read_probes(tmp_path / "p.parquet")
    assert list(frame["collective"].unique()) == ["all_gather", "reduce_scatter"]
    # 4 B cannot be split between 2 ranks in float32 elements: the smallest buffer is one element each
    assert sorted(frame["size_bytes"].unique()) == [8, 256, 16384, 65536]
    for collective, rows in frame.groupby("collective"):
        expected = busbw_bytes_per_s(rows["size_bytes"], rows["world_size"], rows["time_s"], str(collective))
        assert np.allclose(rows["busbw_bytes_per_s"], expected)
        # (n−1)/n of the buffer per rank, half of what an allreduce's bus bandwidth counts
        assert np.allclose(rows["busbw_bytes_per_s"], 0.5 * rows["size_bytes"] / rows["time_s"])


@pytest.mark.slow
def test_a_hung_rank_times_out_cleanly_and_is_named(tmp_path: Path) -> None:
    result = _torchrun(
        tmp_path,
        *("--out", "p.parquet", "--max-size", "64B", "--size-step", "4"),
        *("--repeats", "1", "--concurrency", "1"),
        *("--timeout-s", "3", "--hang-rank", "1"),
    )
    assert result.returncode != 0
    text = " ".join(result.stderr.split())
    assert "a collective timed out after 3 s" in text
    assert "Hung: rank 1 on" in text and "(last at 'allreduce 4 B ×1, gathering times')" in text
    assert "while the others wait at 'allreduce 16 B ×1, warm-up'" in text
    # torchrun prints its own launcher traceback; none comes from srifty's code
    assert not srifty_frames(result.stderr)
    # the step finished before the hang was saved
    assert len(read_probes(tmp_path / "p.parquet")) == 1


def srifty_frames(text: str) -> list[str]:
    """Traceback frames in srifty's own code. Matched on the package's folder, not on the word "srifty",
    which a checkout's own path may contain (a clone in ~/srifty runs torch from ~/srifty/.venv)."""
    package = Path(srifty.__file__).parent
    folders = {str(package), str(package.resolve())}
    frames = [line.strip() for line in text.splitlines() if line.strip().startswith('File "')]
    return [f for f in frames if any(f.startswith(f'File "{folder}{os.sep}') for folder in folders)]


def test_frames_are_told_apart_by_the_package_folder_not_the_checkout_path() -> None:
    package = Path(srifty.__file__).parent
    torch_frame = '  File "/home/u/srifty/.venv/lib/python3.11/site-packages/torch/distributed/run.py", line 9'
    ours = f'  File "{package / "network" / "probe.py"}", line 3, in run_probe'
    assert srifty_frames(torch_frame) == []
    assert srifty_frames(f"Traceback:\n{torch_frame}\n{ours}\n") == [ours.strip()]


def test_describe_lag_names_the_ranks_behind() -> None:
    seen = {0: (7, "1 KiB ×1, repeat 2", "h0"), 1: (5, "1 KiB ×1, warm-up", "h1"), 2: (7, "x", "h2")}
    hung, text = describe_lag(seen)
    assert hung == [1] and "rank 1 on h1 (last at '1 KiB ×1, warm-up')" in text
    assert describe_lag({0: (3, "a", "h"), 1: (3, "a", "h")})[0] == []
    assert describe_lag({0: (3, "a", "h"), 1: (-1, "never started", "?")})[0] == [1]


def test_fmt_bytes() -> None:
    assert [fmt_bytes(s) for s in (4, 1024, 3 * 2**19, 2**29)] == ["4 B", "1 KiB", "1.5 MiB", "512 MiB"]


def test_probe_outside_torchrun_is_a_clear_error(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    code, _, err = cli("probe", "--out", "x.parquet")
    assert code == 2 and "must run under torchrun" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--max-size", "lots"), "cannot read 'lots' as a size"),
        (("--min-size", "6"), "not a positive multiple of the 4-byte"),
        (("--concurrency", "1,x"), "comma-separated integers"),
        (("--out", "p.csv"), "must be a .parquet file"),
        (("--backend", "mpi"), "backend must be one of"),
        (("--collective", "allgather"), "--collective takes allreduce, all_gather, reduce_scatter"),
    ],
)
def test_bad_probe_options_exit_2(cli, args: tuple[str, ...], message: str) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("probe", *args)
    assert code == 2 and message in " ".join(err.split())
