"""`srifty run` end to end on 127.0.0.1: real torchrun + gloo DDP, preemption and hang recovery."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

torch = pytest.importorskip("torch")

from srifty.compute.measure import profile_model  # noqa: E402
from srifty.compute.measure.profiler import ProfileOptions  # noqa: E402
from srifty.errors import SpecError  # noqa: E402
from srifty.runtime.api import run_local_job  # noqa: E402
from srifty.runtime.decisions import DecisionLog  # noqa: E402
from srifty.runtime.local import Fault  # noqa: E402
from tests.conftest import REPO  # noqa: E402

TRAIN = ["python", str(REPO / "examples" / "train_tiny.py")]
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def paced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slow the tiny model to 0.1 s per step so faults land mid-run (it takes milliseconds otherwise)."""
    monkeypatch.setenv("TRAIN_TINY_STEP_S", "0.1")


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("job")
    profile = profile_model(
        "srifty.compute.zoo:tiny_mlp", ProfileOptions(max_batch_cap=32, warmup_iters=1, timed_iters=2, threads=1)
    )
    profile.save(folder / "tiny.json")
    spec = {
        "model": {"name": "srifty.compute.zoo:tiny_mlp", "profiles": ["tiny.json"]},
        "global_batch": 32,
        "iterations": 30,
        "goal": "min_cost",
        "region": "us-east-1",
        "candidates": [
            {"instance_type": "g4dn.xlarge", "market": "spot", "quota": 2},
            {"instance_type": "g4dn.2xlarge", "market": "spot", "quota": 2},
        ],
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _losses(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "workers" / "progress.jsonl").read_text().splitlines()]


def test_preemption_replans_and_resumes_from_the_checkpoint(spec_path: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    outcome = run_local_job(
        spec_path, TRAIN, run_dir, config_text="2xg4dn.xlarge@16", faults=[Fault("preempt", 12, 1)], ckpt_every=5
    )
    assert outcome.iterations == 30 and outcome.launches == 2
    assert outcome.configs[0] == "2xg4dn.xlarge@16" and outcome.configs[1] != outcome.configs[0]
    rollback = next(e for e in outcome.timeline if e["event"] == "rollback")
    assert rollback["to_iteration"] >= 10 and rollback["from_iteration"] - rollback["to_iteration"] <= 5
    decisions = DecisionLog(run_dir / "decisions.jsonl").read()
    actions = [d.action for d in decisions]
    assert actions[0] == "start" and "preempted" in actions and actions[-1] == "finish"
    switch = next(d for d in decisions if d.action in ("switch", "no_alternative"))
    assert "g4dn.xlarge preempted" in switch.reason
    # Every iteration 1..30 finished, some twice (redone after the rollback); the loss keeps falling.
    lines = _losses(run_dir)
    done = {line["iteration"] for line in lines}
    assert done == set(range(1, 31))
    first = lines[0]["loss"]
    redone = [line["loss"] for line in lines if line["iteration"] == rollback["to_iteration"] + 1]
    before, resumed = redone[0], redone[-1]
    assert len(redone) == 2, "the first iteration after the checkpoint ran before the preemption and again after"
    assert resumed < 0.8 * first, "training after the resume must not start over"
    assert resumed == pytest.approx(before, rel=0.25)


def test_a_hung_worker_is_treated_as_preempted(spec_path: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    outcome = run_local_job(
        spec_path, TRAIN, run_dir, config_text="2xg4dn.xlarge@16", faults=[Fault("hang", 8, 0)],
        hang_timeout_s=6.0, ckpt_every=5,
    )  # fmt: skip
    assert outcome.iterations == 30 and outcome.launches == 2
    detected = next(e for e in outcome.timeline if e["event"] == "hang_detected")
    assert "rank 0" in str(detected["detail"]) and "stopped" in str(detected["detail"])
    actions = [d.action for d in DecisionLog(run_dir / "decisions.jsonl").read()]
    assert "hang" in actions and "preempted" in actions


def test_refuses_a_plan_made_for_another_spec(spec_path: Path, tmp_path: Path) -> None:
    from srifty.plan.api import plan_spec

    plan, _ = plan_spec(spec_path)
    plan_file = plan.save(tmp_path / "plan.json")
    other = tmp_path / "other.yaml"
    other.write_text(spec_path.read_text().replace("iterations: 30", "iterations: 31"))
    with pytest.raises(SpecError, match="made for another spec"):
        run_local_job(other, TRAIN, tmp_path / "run", plan_path=plan_file)


def test_a_crashing_training_script_stops_the_run_with_its_error(spec_path: Path, tmp_path: Path) -> None:
    from srifty.errors import SriftyError

    script = tmp_path / "broken_train.py"
    script.write_text("raise RuntimeError('shape mismatch in my model')\n")
    with pytest.raises(SriftyError, match=r"its own error, not a preemption: .*shape mismatch in my model"):
        run_local_job(spec_path, ["python", str(script)], tmp_path / "run", config_text="2xg4dn.xlarge@16")
    actions = [d.action for d in DecisionLog(tmp_path / "run" / "decisions.jsonl").read()]
    assert actions == ["start"]  # no re-plan for a bug in the script
