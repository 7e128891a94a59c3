"""Launch export: SkyPilot task YAML per group and plain torchrun commands."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from srifty.plan import make_plan
from srifty.plan.export import skypilot_tasks, torchrun_commands, write_skypilot
from tests.conftest import REPO
from tests.test_planner import latency_ms, predictor, problem

SKY_PYTHON = REPO / ".venv-sky" / "bin" / "python"
# Keys SkyPilot documents for a task and its resources (docs: "YAML Configuration Fields").
TASK_KEYS = {"name", "workdir", "num_nodes", "resources", "envs", "secrets", "file_mounts", "setup", "run"}
RESOURCE_KEYS = {"cloud", "region", "zone", "instance_type", "accelerators", "use_spot", "cpus", "memory", "disk_size"}


@pytest.fixture(scope="module")
def best():  # type: ignore[no-untyped-def]
    plan = make_plan(problem({"t4.1": 4, "t4.4": 2, "v100.4": 1}, 512), predictor(), latency_ms, mode="exhaustive")
    assert plan.best is not None and len(plan.best.config.groups) >= 1
    return plan.best


def test_one_task_per_group_with_batches_and_weights(best) -> None:  # type: ignore[no-untyped-def]
    tasks = skypilot_tasks(best, "Case 6: inception")
    assert len(tasks) == len(best.config.groups)
    total_weight = 0.0
    for task, group in zip(tasks, best.config.groups, strict=True):
        assert set(task) <= TASK_KEYS and set(task["resources"]) <= RESOURCE_KEYS
        assert task["num_nodes"] == group.count
        assert task["resources"]["instance_type"] == group.instance.name
        assert task["resources"]["use_spot"] is (group.market == "spot")
        env = task["envs"]
        assert int(env["SRIFTY_LOCAL_BATCH"]) == group.local_batch
        assert int(env["SRIFTY_GLOBAL_BATCH"]) == 512
        assert int(env["SRIFTY_NNODES"]) == best.config.n_vms
        total_weight += float(env["SRIFTY_GRAD_WEIGHT"]) * group.count * group.instance.gpus_per_vm
        assert "--rdzv-backend=c10d" in task["run"] and task["name"].startswith("srifty-case-6-inception")
    assert total_weight == pytest.approx(1.0)


def test_written_yaml_round_trips(best, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    paths = write_skypilot(best, tmp_path, "job")
    assert [yaml.safe_load(p.read_text()) for p in paths] == skypilot_tasks(best, "job")
    lines = torchrun_commands(best, "job")
    assert len(lines) == len(paths) and all("torchrun --nnodes=" in line for line in lines)


def sky_validate(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    """SkyPilot's own schema check of task files (in the .venv-sky interpreter)."""
    script = str(REPO / "tests" / "skypilot_validate.py")
    return subprocess.run([str(SKY_PYTHON), script, *map(str, paths)], capture_output=True, text=True)


@pytest.mark.skipif(not SKY_PYTHON.exists(), reason="no .venv-sky with skypilot (make test creates it)")
def test_yaml_passes_skypilot_schema_validation(best, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    paths = write_skypilot(best, tmp_path, "job")
    result = sky_validate(paths)
    assert result.returncode == 0, result.stderr[-2000:]
    broken = tmp_path / "broken.yaml"
    broken.write_text(paths[0].read_text().replace("num_nodes", "num_node"))
    result = sky_validate([broken])
    assert result.returncode != 0 and "num_nodes" in result.stderr


@pytest.fixture(scope="module")
def placed():  # type: ignore[no-untyped-def]
    """A heterogeneous spot plan on the bundled catalog, placed in one zone."""
    from srifty.plan.api import plan_job
    from srifty.spec import spec_from_mapping

    listed = [
        {"instance_type": "g4dn.8xlarge", "market": "spot", "quota": 2},
        {"instance_type": "g4dn.12xlarge", "market": "spot", "quota": 2},
    ]
    spec = spec_from_mapping(
        {
            "model": "resnet50",
            "global_batch": 640,
            "iterations": 100,
            "goal": "min_time",
            "region": "us-east-1",
            "candidates": listed,
        }
    )
    plan, _ = plan_job(spec, mode="exhaustive")
    assert plan.best is not None and plan.best.config.zone is not None
    return plan.best


def test_the_zone_is_named_in_every_task_and_torchrun_command(placed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    zone = placed.config.zone
    for task in skypilot_tasks(placed, "job"):
        assert task["resources"]["zone"] == zone and task["resources"]["region"] == "us-east-1"
        assert task["envs"]["SRIFTY_PLACEMENT"] == f"aws us-east-1 {zone}"
    header = write_skypilot(placed, tmp_path, "job")[0].read_text()
    assert f"--zone-ids {zone}" in header
    assert all(f"in aws us-east-1 {zone}" in line for line in torchrun_commands(placed, "job"))


@pytest.mark.skipif(not SKY_PYTHON.exists(), reason="no .venv-sky with skypilot (make test creates it)")
def test_zoned_yaml_passes_skypilot_schema_validation(placed, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = sky_validate(write_skypilot(placed, tmp_path, "job"))
    assert result.returncode == 0, result.stderr[-2000:]
