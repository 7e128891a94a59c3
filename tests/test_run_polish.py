"""`srifty run` as a new user meets it (issue 29, items 3 and 5): a checkpoint interval that never risks much
of the job, options that do nothing refused, forwarded variables required, the script's own error quoted, a
stale run's checkpoints set aside, and torchrun's scratch folders removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from srifty.catalog import load_catalog
from srifty.errors import SpecError
from srifty.runtime.api import prepare_run_dir
from srifty.runtime.checkpoint_interval import MAX_LOSS_SHARE, checkpoint_interval_iters, loss_events_per_hour
from srifty.runtime.cluster_api import require_forwarded
from srifty.runtime.runner import interruption_name, stopped_text
from srifty.runtime.torchrun import first_error_line
from srifty.vocab import parse_config
from tests.conftest import EXAMPLES


def test_the_readme_demo_no_longer_rolls_back_most_of_its_job() -> None:
    # examples/tiny-local.yaml: 300 iterations, 5 s restore, 1 s per iteration assumed without a plan's
    # prediction; Young's rule with a one-hour MTBF gave 189.
    assert checkpoint_interval_iters(5.0, 1.0) == 189
    assert checkpoint_interval_iters(5.0, 1.0, 300) == 15
    assert checkpoint_interval_iters(5.0, 0.1, 300, loss_events_per_hour=0.0) == 15  # on-demand: the cap alone
    assert checkpoint_interval_iters(5.0, 10.0, 300, loss_events_per_hour=36.0) == 3  # Young: sqrt(2*5*100)/10


@given(st.floats(0, 60), st.floats(1e-3, 100), st.integers(1, 10**6), st.one_of(st.none(), st.floats(0, 1e3)))
def test_the_interval_never_exceeds_the_share_of_the_job(c: float, t: float, n: int, rate: float | None) -> None:
    every = checkpoint_interval_iters(c, t, n, rate)
    assert 1 <= every <= max(1, int(MAX_LOSS_SHARE * n))


def test_the_loss_rate_comes_from_the_spot_model_for_spot_vms_only() -> None:
    catalog = load_catalog()
    spot = parse_config("4xp3.2xlarge@32", "us-east-1", "aws", catalog, {"p3.2xlarge": "spot"}, "use1-az4")
    demand = parse_config("4xp3.2xlarge@32", "us-east-1", "aws", catalog, {"p3.2xlarge": "on_demand"})
    assert loss_events_per_hour(spot) > 0.1  # the bundled real p3.2xlarge traces of us-east-1
    assert loss_events_per_hour(demand) == 0.0
    assert checkpoint_interval_iters(5.0, 0.5, 10_000, loss_events_per_hour(spot)) < 500  # Young, below the cap


def test_a_forwarded_variable_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WT29_TOKEN", raising=False)
    with pytest.raises(SpecError, match=r"WT29_TOKEN is not set in this shell.*resume again"):
        require_forwarded(["WT29_TOKEN"], "the run in runs/x forwarded", resuming=True)
    monkeypatch.setenv("WT29_TOKEN", "secret")
    require_forwarded(["WT29_TOKEN"], "--forward-env passes")


def test_resuming_without_a_forwarded_value_is_refused(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    from srifty.runtime.state import ClusterOptions, LauncherSetup, RunSetup, RunState

    options = ClusterOptions(str(tmp_path / "ck"), 10, forward_env=("WT29_ABSENT_VARIABLE",))
    setup = RunSetup(
        str(tmp_path / "job.yaml"), "", LauncherSetup("local"), ("python", "train.py"), str(tmp_path), options
    )
    RunState(setup, 0.0, "1xg4dn.xlarge@32", {"g4dn.xlarge": "on_demand"}, None, ()).save(tmp_path)
    code, _, err = cli("run", "--resume", str(tmp_path))
    assert code == 2 and "WT29_ABSENT_VARIABLE" in err and "not set in this shell" in err, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ckpt-dir", "/tmp/x"], "--ckpt-dir does nothing without --hosts"),
        (["--window", "5", "--lease", "40"], "--lease, --window do nothing without --hosts"),
        (["--preempt-rank", "1"], "--preempt-rank does nothing without --preempt-at"),
        (["--emulated", "--config", "1xg4dn.xlarge@64"], "--config does nothing without a run of real processes"),
    ],
)
def test_run_options_that_do_nothing_are_refused(cli, args: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("run", str(EXAMPLES / "tiny-local.yaml"), *args, "--", "python", "train.py")
    assert code == 2 and message in err, err


def test_resume_takes_no_other_option(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("run", "--resume", str(tmp_path), "--window", "4")
    assert code == 2 and "--window does nothing without a new run" in err


def test_a_misspelt_script_is_named_before_anything_starts(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli(
        "run", str(EXAMPLES / "tiny-local.yaml"), "--run-dir", str(tmp_path / "r"), "--",
        "python", str(EXAMPLES / "trian_tiny.py"),
    )  # fmt: skip
    assert code == 2 and "does not exist" in err and "Did you mean 'train_tiny.py'" in err, err
    assert not (tmp_path / "r").exists()


def test_the_scripts_own_error_is_quoted_from_torchruns_output() -> None:
    log = (
        "/venv/bin/python: can't open file '/work/trian.py': [Errno 2] No such file or directory\n"
        "E1201 23:31:40 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 2) local_rank: 0\n"
        "Traceback (most recent call last):\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    )
    assert first_error_line(log).endswith("can't open file '/work/trian.py': [Errno 2] No such file or directory")
    assert first_error_line("[rank0]: ValueError: bad shape\n") == "[rank0]: ValueError: bad shape"


def test_a_finished_runs_checkpoints_are_set_aside_and_an_unfinished_run_is_kept(tmp_path: Path) -> None:
    run = tmp_path / "latest"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "latest").write_text(json.dumps({"step": 60, "path": "step-00000060"}))
    notes: list[str] = []
    prepare_run_dir(run, notes.append)
    assert not (run / "checkpoints").exists() and len(list(run.glob("checkpoints.*"))) == 1
    assert "starts from iteration 0" in notes[0]
    (run / "run.json").write_text(json.dumps({"kind": "run-state", "finished": False}))
    with pytest.raises(SpecError, match="continue it with `srifty run --resume"):
        prepare_run_dir(run)
    (run / "run.json").write_text(json.dumps({"kind": "run-state", "finished": True}))
    prepare_run_dir(run)


def test_where_an_interrupted_run_stopped_is_said_in_words() -> None:
    assert interruption_name(KeyboardInterrupt()) == "Ctrl-C"
    assert interruption_name(SystemExit(143)) == "SIGTERM"
    text = stopped_text("Ctrl-C", 44, 300, 40, Path("runs/latest"))
    assert text == (
        "interrupted (Ctrl-C) at iteration 44 of 300; the last checkpoint is at iteration 40: continue with "
        "`srifty run --resume runs/latest`"
    )
    assert "a resume starts from the beginning" in stopped_text("SIGTERM", 3, 300, 0, Path("r"))


def test_the_shield_gives_torchrun_a_scratch_log_folder_and_removes_it(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    code = "import os, pathlib; d = os.environ['PET_LOG_DIR']; assert os.path.isdir(d); pathlib.Path(%r).write_text(d)"
    env = {k: v for k, v in os.environ.items() if k != "PET_LOG_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "srifty.processes", "shield", "--", sys.executable, "-c", code % str(seen)],
        env=env,
        timeout=60,
    )
    assert done.returncode == 0
    scratch = Path(seen.read_text())
    assert scratch.name.startswith("srifty-torchrun-") and not scratch.exists()
