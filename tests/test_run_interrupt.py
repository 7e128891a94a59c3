"""Ctrl-C of `srifty run` on one machine (issue 29, item 3): the workers checkpoint where the run stopped, the
decision log says `interrupted`, srifty says where it stopped, and `srifty run --resume` finishes the job from
that checkpoint, its loss continuing where it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("torch")

from srifty.runtime.decisions import DecisionLog
from tests.conftest import EXAMPLES, REPO, wait_for

pytestmark = pytest.mark.slow


def _default_sigint() -> None:
    # a background job (make test &) inherits SIGINT ignored, which exec keeps: Ctrl-C must reach srifty
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _srifty(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "srifty.cli.main", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def test_ctrl_c_checkpoints_where_the_run_stopped_and_resume_finishes_it(tmp_path: Path) -> None:
    spec = yaml.safe_load((EXAMPLES / "tiny-local.yaml").read_text())
    spec["model"]["profiles"] = [str(EXAMPLES / p) for p in spec["model"]["profiles"]]
    spec["iterations"] = 40
    spec_path = tmp_path / "job.yaml"
    spec_path.write_text(yaml.safe_dump(spec))
    run_dir = tmp_path / "run"
    env = {**os.environ, "TRAIN_TINY_STEP_S": "0.1", "PYTHONPATH": str(REPO / "src")}
    # --ckpt-every 100: no periodic checkpoint before the end, so a checkpoint before 40 is the stop's own
    proc = _srifty(
        "run", str(spec_path), "--config", "2xg4dn.xlarge@32", "--ckpt-every", "100", "--run-dir", str(run_dir),
        "--", "python", str(EXAMPLES / "train_tiny.py"), env=env,
    )  # fmt: skip
    progress = run_dir / "workers" / "progress.jsonl"
    try:
        assert wait_for(lambda: progress.exists() and len(progress.read_text().splitlines()) >= 5, 180)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    decisions = DecisionLog(run_dir / "decisions.jsonl").read()
    stop = decisions[-1]
    assert stop.action == "interrupted" and stop.details["signal"] == "Ctrl-C", decisions
    step = json.loads((run_dir / "checkpoints" / "latest").read_text())["step"]
    assert 5 <= step < 40 and stop.details["checkpoint_step"] == step == stop.iteration
    assert f"interrupted (Ctrl-C) at iteration {step} of 40; the last checkpoint is at iteration {step}" in err
    assert f"srifty run --resume {run_dir}" in " ".join(err.split())
    assert json.loads((run_dir / "run.json").read_text())["finished"] is False
    before = [json.loads(line) for line in progress.read_text().splitlines()]

    resumed = _srifty("run", "--resume", str(run_dir), env={**env, "TRAIN_TINY_STEP_S": "0"})
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    actions = [d.action for d in DecisionLog(run_dir / "decisions.jsonl").read()]
    assert actions[-3:] == ["interrupted", "resume", "finish"], actions
    after = [json.loads(line) for line in progress.read_text().splitlines()][len(before) :]
    assert [line["iteration"] for line in after] == list(range(step + 1, 41))
    # training went on from the checkpoint: the first loss after the resume is near the last before it
    assert after[0]["loss"] == pytest.approx(before[-1]["loss"], rel=0.3)
    assert after[0]["loss"] < 0.9 * before[0]["loss"]
    assert json.loads((run_dir / "run.json").read_text())["finished"] is True
