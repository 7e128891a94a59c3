"""srifty's DDP bucket map matches the buckets real DDP forms (2-process gloo on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from srifty.compute.buckets import assign_buckets  # noqa: E402
from srifty.compute.measure.profiler import ProfileOptions, _Trainer, record_timeline  # noqa: E402
from srifty.compute.measure.workloads import build_workload  # noqa: E402

WORKER = Path(__file__).with_name("ddp_bucket_worker.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _real_ddp_buckets(factory: str, cap: str, tmp_path: Path) -> list[list[str]]:
    out = tmp_path / "buckets.json"
    port = str(_free_port())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(WORKER.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    procs = [
        subprocess.Popen([sys.executable, str(WORKER), str(rank), "2", port, factory, cap, str(out)], env=env)
        for rank in range(2)
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    iterations = json.loads(out.read_text())["iterations"]
    # Iteration 0 uses one bucket (DDP's initial layout); from iteration 1 on, the rebuilt buckets.
    assert iterations[1] == iterations[2]
    return iterations[2]


@pytest.mark.parametrize(
    ("factory", "cap"),
    [
        ("srifty.compute.zoo:mlp", "default"),
        ("srifty.compute.zoo:tiny_cnn", "0.05"),
        ("srifty.compute.zoo:dlrm", "10"),
    ],
)
def test_bucket_map_matches_real_ddp(factory: str, cap: str, tmp_path: Path) -> None:
    workload = build_workload(factory, seed=0)
    trainer = _Trainer(workload, ProfileOptions(device="cpu"))
    params, ready_order = record_timeline(trainer, batch=4)
    ours = assign_buckets(
        ready_order,
        [p.size_bytes for p in params],
        [p.ready_frac for p in params],
        None if cap == "default" else float(cap),
        [p.dtype for p in params],
    )
    predicted = [[params[i].name for i in b.param_indices] for b in ours]
    real = _real_ddp_buckets(factory, cap, tmp_path)
    assert len(real) > 1, "the case should exercise several buckets"
    assert predicted == real
