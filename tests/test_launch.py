"""`srifty launch` through SkyPilot on an EMULATED cloud: a stand-in `sky` (tests/sky_stub.py) that runs
SkyPilot 0.14.1's own task parsing and dry run (optimizer, catalog, zones) and emulates provisioning."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.skypilot_env import SKY_PYTHON, SkyEnv, make_sky_env, path_with

INSTALL = "git+https://github.com/example/srifty@0123456789abcdef"
needs_sky = pytest.mark.skipif(not SKY_PYTHON.exists(), reason="no .venv-sky with skypilot (make test creates it)")

ONE_GROUP = {
    "model": "resnet50", "global_batch": 256, "iterations": 100, "goal": "min_time", "region": "us-east-1",
    "candidates": [{"instance_type": "g4dn.12xlarge", "market": "spot", "quota": 2}],
}  # fmt: skip
TWO_GROUPS = {
    "model": "resnet50", "global_batch": 640, "iterations": 100, "goal": "min_time", "region": "us-east-1",
    "candidates": [
        {"instance_type": "g4dn.8xlarge", "market": "spot", "quota": 2},
        {"instance_type": "g4dn.12xlarge", "market": "spot", "quota": 2},
    ],
}  # fmt: skip


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A job folder (SkyPilot's workdir) as the current folder, with a training script."""
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "train.py").write_text("print('training')\n")
    monkeypatch.chdir(folder)
    return folder


def spec(folder: Path, content: dict[str, object]) -> str:
    (folder / "job.yaml").write_text(yaml.safe_dump(content))
    return "job.yaml"


def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: object) -> SkyEnv:
    env = make_sky_env(tmp_path / "cloud", **options)  # type: ignore[arg-type]
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(env.runtime))  # srifty reads SkyPilot's zone mapping there
    return env


def launch(cli, sky: SkyEnv, spec_file: str, *extra: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    return cli("launch", spec_file, "--sky", str(sky.sky), "--install", INSTALL, *extra, "--", "python", "train.py")


def test_without_skypilot_launch_exits_2_saying_how_to_install_it(cli, job: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("launch", spec(job, ONE_GROUP), "--sky", str(job / "no-sky"), "--", "python", "train.py")
    assert code == 2 and "pip install 'skypilot[aws]==0.14.1'" in err and "Traceback" not in err
    monkeypatch.setenv("PATH", str(job))
    monkeypatch.delenv("SRIFTY_SKY", raising=False)
    code, _, err = cli("launch", "job.yaml", "--", "python", "train.py")
    assert code == 2 and "`sky` command is not on PATH" in err


@pytest.mark.slow
@needs_sky
def test_dryrun_goes_through_skypilots_dry_run_and_rents_nothing(cli, job: Path, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    sky = cloud(tmp_path, monkeypatch)
    code, out, err = launch(cli, sky, spec(job, ONE_GROUP), "--dryrun")
    assert code == 0, err[-3000:]
    calls = sky.calls()
    assert [c[0] for c in calls] == ["launch", "launch"] and all("--dryrun" in c for c in calls), calls
    assert sky.clusters() == {} and "dry run passed" in out
    record = json.loads((job / "runs" / "srifty-job" / "launch.json").read_text())
    assert record["dryrun"] is True and record["clusters"] == [] and len(record["calls"]) == 2
    group = yaml.safe_load((job / "runs" / "srifty-job" / "sky" / f"{calls[0][3]}.yaml").read_text())
    assert group["resources"]["use_spot"] is True and not group["resources"]["zone"].startswith("use1-")
    count = int(record["config"].split("x")[0])  # the plan's VMs, "2xg4dn.12xlarge@128[spot]"
    assert group["setup"] == f"pip install {INSTALL}\n" and group["num_nodes"] == count


@pytest.mark.slow
@needs_sky
def test_launch_brings_up_a_cluster_per_group_runs_the_controller_and_down_tears_all_down(
    cli, job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    sky = cloud(tmp_path, monkeypatch)
    bin_dir = tmp_path / "bin"  # the controller's `srifty run` on the (emulated) head node: recorded
    bin_dir.mkdir()
    (bin_dir / "srifty").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > srifty-args.txt\n')
    (bin_dir / "srifty").chmod(0o755)
    monkeypatch.setenv("PATH", path_with(bin_dir))
    code, out, err = launch(cli, sky, spec(job, TWO_GROUPS))
    assert code == 0, err[-3000:]
    clusters = sky.clusters()
    assert len(clusters) == 2, clusters
    verbs = [c[0] for c in sky.calls()]
    assert verbs == ["launch"] * 5 + ["exec"], verbs  # 2 dry runs + the controller's, 2 launches, the controller
    head = sky.calls()[-1][2]
    options = [c for c in sky.calls() if c[0] == "launch"]
    assert all("aws.security_group_name=srifty-job" in c for c in options)  # the clusters reach each other
    hosts = (job / "srifty-hosts.txt").read_text().splitlines()
    assert sorted(h.split()[0] for h in hosts) == sorted(ip for c in clusters.values() for ip in c["ips"])  # type: ignore[union-attr]
    args = (job / "srifty-args.txt").read_text().splitlines()
    assert args[:8] == ["run", "job.yaml", "--hosts", "srifty-hosts.txt", "--launcher", "ssh", "--ssh-key",
                        "~/.ssh/sky-cluster-key"] or args[:6] == ["run", "job.yaml", "--hosts", "srifty-hosts.txt",
                                                                  "--launcher", "ssh"]  # fmt: skip
    assert args[args.index("--") + 1 :] == ["python", "train.py"] and head in clusters
    assert "srifty launch --down" in out
    run_dir = job / "runs" / "srifty-job"
    code, out, err = cli("launch", "--down", str(run_dir), "--sky", str(sky.sky))
    assert code == 0 and sky.clusters() == {}, err
    assert json.loads((run_dir / "launch.json").read_text())["state"] == "down"


@pytest.mark.slow
@needs_sky
def test_a_failed_sky_call_exits_2_with_the_command_and_leaves_nothing_running(
    cli, job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    names = ["srifty-job-g0-g4dn-8xlarge", "srifty-job-g1-g4dn-12xlarge"]
    spec_file = spec(job, TWO_GROUPS)
    sky = cloud(tmp_path, monkeypatch, fail=f"launch:{names[1]}")
    code, _, err = launch(cli, sky, spec_file)
    assert code == 2 and "Traceback" not in err, err[-3000:]
    assert f"`sky launch -y -c {names[1]}" in err and "Failed to acquire resources" in err
    assert sky.clusters() == {}  # the first cluster, up before the failure, was torn down
    assert sky.calls()[-1][:2] == ["down", "-y"] and set(names) <= set(sky.calls()[-1])


@pytest.mark.slow
@needs_sky
def test_a_type_skypilot_cannot_provision_exits_2_before_anything_is_launched(
    cli, job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    sky = cloud(tmp_path, monkeypatch, without=["g4dn.12xlarge"])
    code, _, err = launch(cli, sky, spec(job, ONE_GROUP))
    assert code == 2 and "--dryrun" in err and "g4dn.12xlarge" in err, err[-3000:]
    assert all("--dryrun" in c for c in sky.calls() if c[0] == "launch") and sky.clusters() == {}
    assert os.path.exists(job / "runs" / "srifty-job" / "launch.json")


def test_launch_mistakes_exit_2_naming_what_to_fix(cli, job: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sky = ("--sky", "/bin/true")  # never reached: each mistake is caught before a sky call
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text(yaml.safe_dump(ONE_GROUP))
    cases = [
        (("launch", "--down", str(job / "no-run"), *sky), "launch.json"),
        (("launch", spec(job, ONE_GROUP), "--down", str(job), *sky), "give no spec"),
        (("launch", "job.yaml", *sky), "after `--`"),
        (("launch", str(outside), *sky, "--install", INSTALL, "--", "python", "train.py"), "outside"),
        (("launch", "job.yaml", *sky, "--", "python", "train.py"), "--install"),  # an editable srifty: no source
        (("launch", "job.yaml", *sky, "--install", str(job / "gone.whl"), "--", "python", "train.py"), "no such wheel"),
    ]
    for argv, why in cases:
        code, _, err = cli(*argv)
        assert code == 2 and why in err and "Traceback" not in err, (argv, err)


def test_a_sharded_plan_reaches_the_controller_through_the_plan_file(cli, job: Path) -> None:  # type: ignore[no-untyped-def]
    """`srifty run --config` takes the strategy from the spec (DDP for auto): a sharded launch passes the plan."""
    from srifty.integrations.skypilot.launch import prepare_launch
    from srifty.integrations.skypilot.sky import Sky
    from srifty.runtime.api import config_from_plan
    from srifty.spec import load_spec

    spec_file = spec(job, ONE_GROUP | {"parallelism": "fsdp"})
    launch = prepare_launch(Path(spec_file), "python train.py", Sky(job / "no-sky"), install=INSTALL)
    assert launch.config.parallelism == "fsdp"
    run = str(launch.tasks.controller["run"])
    assert "--plan runs/srifty-job/sky/plan.json" in run and "--config" not in run
    planned, _ = config_from_plan(job / "runs/srifty-job/sky/plan.json", job / spec_file, load_spec(spec_file))
    assert planned == launch.config
    # a plan given with --plan is passed as it is; DDP keeps --config
    code, _, err = cli("plan", spec_file, "--json", "given.json")
    assert code == 0, err
    given = prepare_launch(Path(spec_file), "python train.py", Sky(job / "no-sky"), plan_path=Path("given.json"),
                           install=INSTALL, run_dir=job / "runs" / "given")  # fmt: skip
    assert "--plan given.json" in str(given.tasks.controller["run"])
    spec(job, ONE_GROUP)
    ddp = prepare_launch(Path(spec_file), "python train.py", Sky(job / "no-sky"), install=INSTALL)
    assert "--config " in str(ddp.tasks.controller["run"]) and "--plan" not in str(ddp.tasks.controller["run"])
