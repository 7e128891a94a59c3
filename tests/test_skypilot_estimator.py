"""srifty as SkyPilot's time estimator: the estimator's own answers here, and SkyPilot 0.14.1's real optimizer
using it in SkyPilot's venv (tests/skypilot_estimator_check.py, clouds stubbed as SkyPilot's tests do)."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from srifty.errors import SpecError
from srifty.integrations.skypilot import time_estimator
from srifty.integrations.skypilot.estimator import expected_spot_loss_s
from srifty.spec import spec_from_mapping
from tests.conftest import EXAMPLES, REPO
from tests.skypilot_env import SKY_PYTHON, seed_catalog

JOB = {"model": "resnet50", "global_batch": 1024, "iterations": 1000, "goal": "min_cost", "region": "us-east-1"}


def resources(**fields: object) -> SimpleNamespace:
    """What SkyPilot hands an estimator, by the attributes it reads."""
    base = {"accelerators": None, "use_spot": False, "cloud": None, "region": None, "instance_type": None}
    return SimpleNamespace(**(base | fields))


@pytest.fixture(scope="module")
def two_nodes():  # type: ignore[no-untyped-def]
    return time_estimator(spec_from_mapping(JOB), 2)


def test_the_estimator_answers_for_the_tasks_node_count_and_the_resources_gpu(two_nodes) -> None:  # type: ignore[no-untyped-def]
    by_gpu = two_nodes.estimate(resources(accelerators={"H100": 8}, region="us-east-1"))
    by_type = two_nodes.estimate(resources(instance_type="p5.48xlarge", region="us-east-1"))
    assert by_gpu == by_type and by_gpu.config == "2xp5.48xlarge@64"
    # job time = iterations x mean iteration + one launch and one restore (the spec's overheads)
    assert by_gpu.job_time_s == pytest.approx(1000 * by_gpu.iter_mean_s + 150 + 5)
    assert two_nodes(resources(accelerators={"H100": 8})) == pytest.approx(by_gpu.job_time_s)
    four = time_estimator(spec_from_mapping(JOB), 4).estimate(resources(accelerators={"H100": 8}))
    assert four.iter_mean_s < by_gpu.iter_mean_s  # twice the GPUs, half the local batch each


def test_spot_adds_the_spot_models_expected_losses(two_nodes) -> None:  # type: ignore[no-untyped-def]
    on_demand = two_nodes.estimate(resources(accelerators={"A100": 8}))
    spot = two_nodes.estimate(resources(accelerators={"A100": 8}, use_spot=True))
    assert spot.spot_loss_s > 0 and on_demand.spot_loss_s == 0
    assert spot.job_time_s == pytest.approx(on_demand.job_time_s + spot.spot_loss_s)
    assert spot.cost_usd < on_demand.cost_usd  # spot prices, even with the losses


def test_what_srifty_cannot_answer_is_infinitely_slow_for_skypilot(two_nodes) -> None:  # type: ignore[no-untyped-def]
    assert two_nodes(resources(accelerators={"NoSuchGPU": 8})) == math.inf
    assert two_nodes(resources(instance_type="no.such-type")) == math.inf
    odd = time_estimator(spec_from_mapping(JOB | {"global_batch": 1000}), 3)  # 24 GPUs cannot share 1000
    assert odd(resources(accelerators={"H100": 8})) == math.inf
    huge = time_estimator(spec_from_mapping(JOB | {"global_batch": 2**20}), 1)  # 131072 images per GPU
    assert huge(resources(accelerators={"L4": 8})) == math.inf


def test_bad_estimator_arguments_are_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="num_nodes must be at least 1"):
        time_estimator(spec_from_mapping(JOB), 0)
    with pytest.raises(SpecError, match="global_batch= and iterations="):
        time_estimator(tmp_path / "profile.json", 2)
    assert time_estimator(EXAMPLES / "auto-resnet50.yaml", 2).spec.global_batch == 1024


@given(
    work_s=st.floats(1.0, 1e6),
    rate=st.floats(0.0, 0.5),
    more=st.floats(0.0, 0.5),
    relaunch_s=st.floats(0.0, 600.0),
    checkpoint_s=st.floats(0.1, 60.0),
)
def test_expected_spot_losses_grow_with_the_loss_rate(
    work_s: float, rate: float, more: float, relaunch_s: float, checkpoint_s: float
) -> None:
    low, _ = expected_spot_loss_s(work_s, rate, relaunch_s, checkpoint_s)
    high, _ = expected_spot_loss_s(work_s, rate + more, relaunch_s, checkpoint_s)
    assert low >= 0 and (high == math.inf or high >= low - 1e-9 * max(1.0, low))
    assert expected_spot_loss_s(work_s, 0.0, relaunch_s, checkpoint_s)[0] == 0.0


def _sky_has_srifty() -> bool:
    if not SKY_PYTHON.exists():
        return False
    probe = subprocess.run([str(SKY_PYTHON), "-c", "import sky, srifty.plan"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _sky_has_srifty(), reason="no .venv-sky with skypilot and srifty (make test creates it)")
def test_skypilots_optimizer_ranks_the_4714_candidates_as_srifty_does(tmp_path: Path) -> None:
    """SkyPilot's real optimizer (in its own venv, srifty installed there) on an any_of task of H200:8, H100:8,
    A100:8 and L4:8 for each node count, and on the #4714 candidates at their own node counts: with srifty's
    estimator it ranks them as srifty does, by the same cost; with its one-hour default it does not."""
    seed_catalog(tmp_path / "runtime")
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(JOB))
    env = {**os.environ, "SKY_RUNTIME_DIR": str(tmp_path / "runtime"), "HOME": str(tmp_path / "home"),
           "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    script = REPO / "tests" / "skypilot_estimator_check.py"
    done = subprocess.run([str(SKY_PYTHON), str(script), str(spec)], env=env, capture_output=True, text=True,
                          timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    differs = False
    for n, row in result["per_nodes"].items():
        ours, srifty = row["skypilot_srifty"], row["srifty"]
        assert [r["gpu"] for r in ours] == [r["gpu"] for r in srifty], n
        for mine, theirs in zip(ours, srifty, strict=True):
            assert mine["skypilot_cost_usd"] == pytest.approx(theirs["cost_usd"], rel=1e-6), (n, mine, theirs)
        assert all(r["skypilot_runtime_s"] == 3600 for r in row["skypilot_default"])
        differs |= [r["gpu"] for r in row["skypilot_default"]] != [r["gpu"] for r in srifty]
    assert differs  # the one-hour default ranks by price per hour, which is not the job's cost
    issue = result["issue_4714"]
    assert [r["gpu"] for r in issue["skypilot_srifty"]] == [r["gpu"] for r in issue["srifty"]]
    assert [r["nodes"] for r in sorted(issue["skypilot_srifty"], key=lambda r: r["gpu"])] == [4, 2, 1, 8]
    assert result["example"].startswith("SkyPilot's choice with srifty's estimate:") and "8" in result["example"]
    spot = result["spot"]
    assert spot["spot"]["job_time_s"] > spot["on_demand"]["job_time_s"] and spot["spot"]["spot_loss_s"] > 0
