"""Launch export: SkyPilot task YAML per group and plain torchrun commands."""

from __future__ import annotations

import json
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
    tasks = skypilot_tasks(best.config, "Case 6: inception")
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
        assert "--master-addr=" in task["run"] and task["name"].startswith("srifty-case-6-inception")
    assert total_weight == pytest.approx(1.0)


def test_written_yaml_round_trips(best, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    paths = write_skypilot(best.config, tmp_path, "job")
    assert [yaml.safe_load(p.read_text()) for p in paths] == skypilot_tasks(best.config, "job")
    lines = torchrun_commands(best.config, "job")
    assert len(lines) == len(paths) and all("torchrun --nnodes=" in line for line in lines)


def sky_validate(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    """SkyPilot's own schema check of task files (in the .venv-sky interpreter)."""
    script = str(REPO / "tests" / "skypilot_validate.py")
    return subprocess.run([str(SKY_PYTHON), script, *map(str, paths)], capture_output=True, text=True)


@pytest.mark.skipif(not SKY_PYTHON.exists(), reason="no .venv-sky with skypilot (make test creates it)")
def test_yaml_passes_skypilot_schema_validation(best, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    paths = write_skypilot(best.config, tmp_path, "job")
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
    for task in skypilot_tasks(placed.config, "job"):
        assert task["resources"]["zone"] == zone and task["resources"]["region"] == "us-east-1"
        assert task["envs"]["SRIFTY_PLACEMENT"] == f"aws us-east-1 {zone}"
    header = write_skypilot(placed.config, tmp_path, "job")[0].read_text()
    assert f"--zone-ids {zone}" in header
    assert all(f"in aws us-east-1 {zone}" in line for line in torchrun_commands(placed.config, "job"))


@pytest.fixture(scope="module")
def one_group():  # type: ignore[no-untyped-def]
    plan = make_plan(problem({"t4.1": 4}, 512), predictor(), latency_ms, mode="exhaustive")
    assert plan.best is not None and len(plan.best.config.groups) == 1
    return plan.best


def test_the_controlled_task_runs_srifty_on_the_head_node_over_the_cluster_nodes(
    one_group, best, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from srifty.plan.export import controlled_task, write_controlled
    from srifty.runtime.hosts import parse_hostfile

    if len(best.config.groups) > 1:
        assert write_controlled(best.config, tmp_path, "job", "job.yaml") is None
    task = controlled_task(one_group.config, "job", "my job.yaml", "python train.py --lr 0.1")
    assert task is not None and task["num_nodes"] == one_group.config.n_vms
    assert set(task) <= TASK_KEYS and set(task["resources"]) <= RESOURCE_KEYS
    # Run the task's script as SkyPilot would on the head node and on another node, with a stand-in srifty
    # that records its arguments.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "srifty"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > srifty-args.txt\n')
    fake.chmod(0o755)
    for rank, ran in (("0", True), ("1", False)):
        folder = tmp_path / f"node{rank}"
        folder.mkdir()
        env = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "SKYPILOT_NODE_RANK": rank,
            "SKYPILOT_NODE_IPS": "10.0.0.5\n10.0.0.6",
        }
        subprocess.run(["bash", "-c", task["run"]], cwd=folder, env=env, check=True)
        assert (folder / "srifty-args.txt").exists() is ran
    head = tmp_path / "node0"
    args = (head / "srifty-args.txt").read_text().splitlines()
    assert args[:6] == ["run", "my job.yaml", "--hosts", "srifty-hosts.txt", "--launcher", "ssh"]
    assert args[args.index("--config") + 1] == one_group.config.tagged()
    assert args[args.index("--") + 1 :] == ["python", "train.py", "--lr", "0.1"]
    lines = (head / "srifty-hosts.txt").read_text().splitlines()
    market = one_group.config.groups[0].market
    assert lines == [f"10.0.0.5 t4.1 {market}", f"10.0.0.6 t4.1 {market}"]
    # the planner's test type stands for a catalog one: the lines are a valid host file
    hosts = parse_hostfile("\n".join(line.replace("t4.1", "g4dn.xlarge") for line in lines), "us-east-1")
    assert [h.address for h in hosts] == ["10.0.0.5", "10.0.0.6"]


def test_install_sources_a_vm_can_reach(tmp_path: Path) -> None:
    from srifty.errors import SpecError
    from srifty.plan.install_source import REMOTE_WHEEL_DIR, installed_source, parse_install

    wheel = tmp_path / "srifty-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    given = parse_install(str(wheel))
    assert given.file_mounts() == {f"{REMOTE_WHEEL_DIR}/{wheel.name}": str(wheel)}
    assert given.setup() == f"pip install {REMOTE_WHEEL_DIR}/{wheel.name}\n"  # ~ left for the VM's shell
    url = "git+https://github.com/example/srifty@0123abc"
    assert parse_install(url).setup() == f"pip install {url}\n" and parse_install(url).file_mounts() == {}
    for bad, why in ((str(tmp_path / "gone.whl"), "no such wheel"), (str(tmp_path), "local folder"), ("  ", "empty")):
        with pytest.raises(SpecError, match=why):
            parse_install(bad)
    assert installed_source() is None  # this checkout is an editable install: nothing a VM can reach


def test_aws_zone_ids_become_the_accounts_zone_names(tmp_path: Path) -> None:
    from srifty.catalog.zone_names import read_zone_names, skypilot_zone, skypilot_zone_names
    from tests.skypilot_env import seed_catalog

    assert skypilot_zone_names(tmp_path) == {}
    mapping = read_zone_names(seed_catalog(tmp_path))
    assert skypilot_zone_names(tmp_path) == mapping and mapping["use1-az4"] != "use1-az4"
    assert skypilot_zone("aws", "us-east-1", "use1-az4", mapping) == mapping["use1-az4"]
    assert skypilot_zone("aws", "us-east-1", "use9-az9", mapping) == "use9-az9"  # SkyPilot has no name: the ID
    assert skypilot_zone("azure", "eastus", "eastus", mapping) is None  # Azure prices spot per region
    assert skypilot_zone("gcp", "us-central1", "us-central1-a", mapping) == "us-central1-a"


@pytest.mark.slow
def test_a_wheel_install_line_installs_srifty_from_the_wheel_copied_to_the_vm(tmp_path: Path) -> None:
    """The setup line of a task exported with --install WHEEL, run as SkyPilot runs it after copying the
    wheel (file_mounts): pip (a dry run, no index: the VM is not here) accepts the copied wheel as srifty."""
    import sys

    from srifty.plan.install_source import parse_install

    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(REPO)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("srifty-*.whl")
    source = parse_install(str(wheel))
    home = tmp_path / "vm-home"
    for remote, local in source.file_mounts().items():  # what SkyPilot's file_mounts does on the VM
        target = home / remote.removeprefix("~/")
        target.parent.mkdir(parents=True)
        target.write_bytes(Path(local).read_bytes())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pip").write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -m pip "$@" --dry-run --no-deps --no-index --report "$PIP_REPORT"\n'
    )
    (bin_dir / "pip").chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{bin_dir}:/usr/bin:/bin", "PIP_REPORT": str(tmp_path / "report.json")}
    ran = subprocess.run(["bash", "-c", source.setup()], env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [item["metadata"]["name"] for item in report["install"]] == ["srifty"]


def test_a_sharded_controlled_task_runs_the_plan_file_not_config(one_group) -> None:  # type: ignore[no-untyped-def]
    """`srifty run --config` takes the strategy from the spec (DDP for auto), so a sharded plan goes as --plan."""
    from srifty.plan.export import controller_command

    sharded = one_group.config.sharded("fsdp")
    with pytest.raises(ValueError, match="fsdp"):
        controller_command("job.yaml", sharded, "job", "python train.py")
    line = controller_command("job.yaml", sharded, "job", "python train.py", "sky/plan.json")
    assert "--plan sky/plan.json" in line and "--config" not in line
    checkpointed = one_group.config.sharded("ddp", checkpointing=True)
    assert "--plan p.json" in controller_command("job.yaml", checkpointed, "job", "python train.py", "p.json")
    assert "--config" in controller_command("job.yaml", one_group.config, "job", "python train.py")


def test_plan_skypilot_writes_the_plan_beside_a_sharded_controlled_task(cli, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from srifty.runtime.api import config_from_plan
    from srifty.spec import load_spec

    work = tmp_path / "job"  # the folder SkyPilot copies to the VMs
    (work / "profiles").mkdir(parents=True)
    profile = "srifty.compute.zoo-tiny_decoder__cpu.json"
    (work / "profiles" / profile).write_bytes((REPO / "examples" / "profiles" / profile).read_bytes())
    (work / "job.yaml").write_bytes((REPO / "examples" / "tiny-fsdp.yaml").read_bytes())
    monkeypatch.chdir(work)
    install = "git+https://github.com/example/srifty@0123456789abcdef"
    code, out, err = cli("plan", "job.yaml", "--skypilot", "sky", "--install", install)
    assert code == 0, err
    (controlled,) = (work / "sky").glob("*-controlled.yaml")
    assert "--plan sky/plan.json" in yaml.safe_load(controlled.read_text())["run"]
    config, _ = config_from_plan(work / "sky" / "plan.json", work / "job.yaml", load_spec("job.yaml"))
    assert config.parallelism == "fsdp"
    # outside that folder the VMs could not read the plan: no controlled task, and why
    code, out, err = cli("plan", "job.yaml", "--skypilot", str(tmp_path / "out"), "--install", install)
    assert code == 0 and "no srifty-controlled task" in out and "outside" in out, out
    assert not list((tmp_path / "out").glob("*-controlled.yaml"))
