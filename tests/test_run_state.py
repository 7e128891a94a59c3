"""A multi-host run's state (``run.json``) is a frozen, versioned value: it round-trips, and a damaged file or one
of another schema version is refused by name."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.catalog import load_catalog
from srifty.errors import ArtifactError, SpecError
from srifty.runtime.state import RUN_STATE_VERSION, ClusterOptions, LauncherSetup, RunSetup, RunState
from srifty.vocab import parse_config

CONFIG = parse_config("2xg4dn.xlarge@32", "us-east-1", catalog=load_catalog(), markets={"g4dn.xlarge": "spot"})
words = st.text("abcdefgh0123456789.-", min_size=1, max_size=8)


def setup(**changes: object) -> RunSetup:
    options = ClusterOptions("ckpts", 10, forward_env=("TRAIN_TINY_STEP_S",))
    base = RunSetup(
        "/jobs/job.yaml", "127.0.0.1 g4dn.xlarge spot\n", LauncherSetup("local"), ("python", "t.py"), "/w", options
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


@settings(max_examples=50, deadline=None)
@given(
    lost=st.lists(words, max_size=3),
    iteration=st.integers(0, 10_000),
    step=st.one_of(st.none(), st.integers(0, 10_000)),
    spent=st.floats(0, 1e6, allow_nan=False),
    ssh_options=st.lists(words, max_size=2),
    finished=st.booleans(),
)
def test_a_state_round_trips_through_its_document(
    lost: list[str], iteration: int, step: int | None, spent: float, ssh_options: list[str], finished: bool
) -> None:
    launcher = LauncherSetup("ssh", ssh_key="/k", ssh_port=2222, ssh_options=tuple(ssh_options))
    state = RunState.start(setup(launcher=launcher), CONFIG, {("g4dn.xlarge", "spot"): 2}, 1.5e9).replace(
        lost=tuple(lost), iteration=iteration, checkpoint_step=step, spent_usd=spent, finished=finished, mark="M"
    )
    document = json.loads(json.dumps(state.to_dict()))
    assert RunState.from_dict(document) == state
    assert state.config_in("us-east-1", "aws", load_catalog()).notation() == CONFIG.notation()


def test_saved_and_loaded_and_refused_by_name(tmp_path: Path) -> None:
    state = RunState.start(setup(), CONFIG, {("g4dn.xlarge", "spot"): 2}, 1.5e9).replace(mark="M")
    state.save(tmp_path)
    assert RunState.load(tmp_path) == state
    doc = json.loads((tmp_path / "run.json").read_text())
    del doc["config"]
    (tmp_path / "run.json").write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match=r"run\.json has no field 'config'"):
        RunState.load(tmp_path)
    doc["config"], doc["schema_version"] = CONFIG.notation(), RUN_STATE_VERSION + 1
    (tmp_path / "run.json").write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match=r"run\.json.*version"):
        RunState.load(tmp_path)
    with pytest.raises(SpecError, match=r"no run\.json"):
        RunState.load(tmp_path / "elsewhere")


def test_a_relative_checkpoint_folder_is_found_from_where_the_run_started() -> None:
    assert setup().ckpt_location() == "/w/ckpts"
    url = dataclasses.replace(setup().options, ckpt_dir="memory://x")
    assert setup(options=url).ckpt_location() == "memory://x"
