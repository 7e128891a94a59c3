"""Unequal local batches with real gloo DDP give the same gradients as one big batch, with srifty.torch."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from srifty.errors import SriftyError  # noqa: E402
from srifty.torch import grad_weight_from_env  # noqa: E402
from tests import reweight_worker as worker  # noqa: E402

WORKER = Path(__file__).with_name("reweight_worker.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_ddp(mode: str, tmp_path: Path) -> dict:
    out = tmp_path / f"{mode}.pt"
    port = str(_free_port())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(WORKER.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(r), port, str(out), mode], env=env) for r in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    return torch.load(out)


def _single_process() -> dict:
    model = worker.make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    grads = []
    for step in range(3):
        x, y = worker.data(step)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        opt.step()
    return {"grads": grads, "params": [p.detach().clone() for p in model.parameters()]}


def _close(a: list, b: list) -> bool:
    return all(torch.allclose(x, y, atol=1e-6, rtol=1e-5) for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def reference() -> dict:
    return _single_process()


@pytest.mark.parametrize("mode", ["hook", "loss"])
def test_reweighted_ddp_equals_one_big_batch(mode: str, reference: dict, tmp_path: Path) -> None:
    ddp = _run_ddp(mode, tmp_path)
    for step in range(3):
        assert _close(ddp["grads"][step], reference["grads"][step]), f"gradients differ at step {step}"
    assert _close(ddp["params"], reference["params"])


def test_without_correction_they_differ(reference: dict, tmp_path: Path) -> None:
    ddp = _run_ddp("none", tmp_path)
    assert not _close(ddp["grads"][0], reference["grads"][0])
    assert not _close(ddp["params"], reference["params"])


def test_weight_from_environment() -> None:
    assert grad_weight_from_env({"SRIFTY_GRAD_WEIGHT": "0.25"}) == 0.25
    assert grad_weight_from_env({"SRIFTY_LOCAL_BATCH": "16", "SRIFTY_GLOBAL_BATCH": "64"}) == 0.25
    with pytest.raises(SriftyError, match="srifty plan --skypilot"):
        grad_weight_from_env({})
    with pytest.raises(SriftyError, match=r"\(0, 1\]"):
        grad_weight_from_env({"SRIFTY_GRAD_WEIGHT": "2"})
