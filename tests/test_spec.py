"""Job specs: the bundled examples load; malformed specs get one clear message and exit code 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from srifty.errors import SpecError
from srifty.spec import load_spec, spec_from_mapping
from tests.conftest import EXAMPLES

VALID = {
    "model": "resnet50",
    "global_batch": 256,
    "iterations": 100,
    "goal": "min_cost",
    "region": "us-east-1",
    "candidates": [{"instance_type": "g4dn.8xlarge", "market": "spot", "quota": 8}],
}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_loads(path: Path) -> None:
    spec = load_spec(path)
    assert spec.global_batch > 0 and (spec.candidates or spec.auto_candidates)
    assert spec.name == path.stem


def test_examples_cover_the_seven_case_studies() -> None:
    names = {p.stem.split("-")[0] for p in EXAMPLES.glob("case*.yaml")}
    assert names == {f"case{i}" for i in range(1, 8)}


def test_defaults_and_shorthand() -> None:
    spec = spec_from_mapping(VALID)
    assert spec.model.name == "resnet50" and spec.model.precision == "fp32"
    assert spec.overheads.vm_launch_s == 150 and spec.overheads.checkpoint_restore_s == 5
    assert spec.deadline_s is None and spec.budget_usd is None


def _with(**changes: object) -> dict[str, object]:
    data = dict(VALID)
    for key, value in changes.items():
        if value is ...:
            data.pop(key)
        else:
            data[key] = value
    return data


MALFORMED: list[tuple[str, object, str]] = [
    ("missing-field", _with(global_batch=...), r"global_batch is required but missing.*global_batch: 1024"),
    ("negative-batch", _with(global_batch=-3), r"global_batch must be a positive integer.*got -3"),
    (
        "unknown-type",
        _with(candidates=[{"instance_type": "g4dn.8xlarg", "quota": 2}]),
        r"Did you mean 'g4dn\.8xlarge'",
    ),
    ("unknown-key", {**VALID, "deadline": 30}, r"unknown key 'deadline'.*Did you mean 'deadline_s'"),
    ("wrong-type", _with(iterations="many"), r"iterations must be a positive integer, got 'many'"),
    ("empty-file", None, r"is empty"),
    ("bad-goal", _with(goal="fastest"), r"goal must be one of 'min_time', 'min_cost', got 'fastest'"),
    (
        "zero-quota",
        _with(candidates=[{"instance_type": "g4dn.8xlarge", "quota": 0}]),
        r"candidates\[0\]\.quota must be a positive integer",
    ),
    (
        "bad-market",
        _with(candidates=[{"instance_type": "g4dn.8xlarge", "market": "preemptible", "quota": 1}]),
        r"market must be one of 'spot', 'on_demand'",
    ),
    (
        "nested-unknown-key",
        _with(candidates=[{"instance_type": "g4dn.8xlarge", "quota": 1, "count": 2}]),
        r"unknown key 'count' in candidates\[0\]",
    ),
    ("wrong-region", _with(region="eu-west-9"), r"not offered in region 'eu-west-9'"),
    (
        "duplicate-candidate",
        _with(candidates=[{"instance_type": "g4dn.8xlarge", "quota": 1}] * 2),
        r"listed twice",
    ),
    ("negative-deadline", _with(deadline_s=-5), r"deadline_s must be a positive number of seconds"),
    ("not-a-mapping", ["a", "b"], r"must be a YAML mapping"),
    ("model-without-name", _with(model={"precision": "fp32"}), r"model needs a `name`"),
]


@pytest.mark.parametrize(("case", "data", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_spec_is_a_clear_cli_error(tmp_path: Path, cli, case: str, data: object, message: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / f"{case}.yaml"
    path.write_text("" if data is None else yaml.safe_dump(data))
    code, _, err = cli("plan", str(path))
    assert code == 2, err
    assert "Traceback" not in err
    assert re.search(message, " ".join(err.split()), flags=re.S), err


def test_invalid_yaml_names_the_line(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "broken.yaml"
    path.write_text("model: resnet50\nglobal_batch: [1, 2\n")
    code, _, err = cli("plan", str(path))
    assert code == 2 and "not valid YAML at line" in err


def test_missing_spec_file(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("plan", "/nonexistent/spec.yaml")
    assert code == 2 and "does not exist" in err


def test_api_raises_spec_error_not_validation_error() -> None:
    with pytest.raises(SpecError):
        spec_from_mapping(_with(global_batch=0))


def test_relative_profile_paths_resolve_against_the_spec(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "job.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(_with(model={"name": "resnet50", "profiles": ["p/t4.json"]})))
    spec = load_spec(path)
    assert spec.model.profiles == (path.parent / "p" / "t4.json",)


@pytest.mark.parametrize("written", ["on-demand", "On-Demand", "ondemand", "on demand", "on_demand"])
def test_market_accepts_the_common_spellings_of_on_demand(written: str) -> None:
    data = {**VALID, "candidates": [{"instance_type": "g4dn.8xlarge", "market": written, "quota": 8}]}
    assert spec_from_mapping(data).candidates[0].market == "on_demand"
    spot = {**VALID, "candidates": [{"instance_type": "g4dn.8xlarge", "market": "Spot", "quota": 8}]}
    assert spec_from_mapping(spot).candidates[0].market == "spot"


def test_an_unknown_market_still_names_the_valid_ones() -> None:
    data = {**VALID, "candidates": [{"instance_type": "g4dn.8xlarge", "market": "reserved", "quota": 8}]}
    with pytest.raises(SpecError, match=r"candidates\[0\]\.market must be one of 'spot', 'on_demand'"):
        spec_from_mapping(data)


def test_config_notation_takes_on_demand_spelled_with_a_dash() -> None:
    from srifty.vocab import parse_config

    config = parse_config("2xg4dn.8xlarge@16[on-demand],1xp3.2xlarge@32[Spot]", "us-east-1")
    assert [g.market for g in config.groups] == ["on_demand", "spot"]
