"""examples/train_resnet.py under `srifty run` for real: 2 ranks with unequal batches, resnet18 at 32 px."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import EXAMPLES, REPO

pytest.importorskip("torchvision")

LINE = re.compile(r"iteration=(\d+) rank=(\d) time=[\d.]+ loss=[\d.]+ forward_s=([\d.]+)")


def test_train_resnet_runs_two_unequal_ranks_checkpoints_and_reports_every_iteration(tmp_path: Path) -> None:
    doc = yaml.safe_load((EXAMPLES / "tiny-local.yaml").read_text())
    doc["model"]["profiles"] = [str(EXAMPLES / p) for p in doc["model"]["profiles"]]
    doc.update(iterations=3, global_batch=6)
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(doc))
    run_dir = tmp_path / "run"
    env = {**os.environ, "TRAIN_RESNET_IMAGE": "32", "PYTHONPATH": str(REPO / "src")}
    command = [
        sys.executable, "-m", "srifty.cli.main", "run", str(spec), "--config", "1xg4dn.xlarge@4,1xg4dn.2xlarge@2",
        "--ckpt-every", "2", "--run-dir", str(run_dir), "--", "python", str(EXAMPLES / "train_resnet.py"),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    progress = [json.loads(x) for x in (run_dir / "workers" / "progress.jsonl").read_text().splitlines()]
    assert [p["iteration"] for p in progress] == [1, 2, 3]
    assert all(p["loss"] > 0 for p in progress)
    lines = LINE.findall((run_dir / "torchrun.log").read_text())
    assert sorted((int(i), int(r)) for i, r, _ in lines) == [(i, r) for i in (1, 2, 3) for r in (0, 1)]
    assert all(float(s) > 0 for _, _, s in lines)
    latest = json.loads((run_dir / "checkpoints" / "latest").read_text())
    assert latest["step"] == 3
    assert (run_dir / "checkpoints" / "step-00000002").is_dir()


def test_train_resnet_model_is_what_srifty_profile_measures() -> None:
    """The factory `srifty profile --model train_resnet:model` imports is the network the script trains."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import train_resnet
    finally:
        sys.path.remove(str(EXAMPLES))
    net = train_resnet.model()
    assert net.fc.out_features == train_resnet.CLASSES
    x, y = train_resnet.batch(5, 4, 32)
    again, _ = train_resnet.batch(5, 4, 32)
    assert x.shape == (4, 3, 32, 32) and y.shape == (4,) and bool((x == again).all())
    assert net(x).shape == (4, train_resnet.CLASSES)


def test_train_gpt2_model_is_what_srifty_profile_measures_as_hf_gpt2_small() -> None:
    """``examples/train_gpt2.py`` trains the network `srifty profile --model hf:gpt2-small` measures, on
    deterministic, learnable token batches."""
    pytest.importorskip("transformers")
    from srifty.compute.measure.workloads import build_workload

    sys.path.insert(0, str(EXAMPLES))
    try:
        import train_gpt2
    finally:
        sys.path.remove(str(EXAMPLES))
    net = train_gpt2.model()
    profiled = build_workload("hf:gpt2-small", seq_len=8).model
    assert sum(p.numel() for p in net.parameters()) == sum(p.numel() for p in profiled.parameters())
    x, y = train_gpt2.batch(3, 4, 9, net.config.vocab_size)
    again, _ = train_gpt2.batch(3, 4, 9, net.config.vocab_size)
    assert x.shape == (4, 9) and bool((x == y).all()) and bool((x == again).all())
    assert bool((x[:, :4] == x[:, 5:9]).all())  # the second half repeats the first
    assert float(net(input_ids=x, labels=y).loss.detach()) > 0
