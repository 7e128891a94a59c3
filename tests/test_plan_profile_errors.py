"""A profile a spec lists that srifty cannot plan with gets an error naming the file and what is wrong with it
(found by the bad-input fuzzer: ``estimated_from: 0`` was taken for an estimate, and ``srifty plan`` then said
the spec listed no profile at all)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srifty.compute import load_profile
from srifty.errors import ProfileError

TINY = Path(__file__).resolve().parents[1] / "examples" / "profiles" / "srifty.compute.zoo-tiny_mlp__cpu.json"
JOB = """model:
  name: srifty.compute.zoo:tiny_mlp
  profiles:
  - {profile}
global_batch: 32
iterations: 30
goal: min_cost
region: us-east-1
candidates:
- instance_type: g4dn.xlarge
  market: spot
  quota: 2
"""


def _write(tmp_path: Path, estimated_from: object) -> tuple[Path, Path]:
    document = json.loads(TINY.read_text())
    document["estimated_from"] = estimated_from
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(document))
    job = tmp_path / "job.yaml"
    job.write_text(JOB.format(profile=profile))
    return profile, job


@pytest.mark.parametrize("value", [0, 1.5, ["cpu"], {"device": "cpu"}])
def test_an_estimated_from_that_is_not_text_is_a_malformed_profile(tmp_path: Path, value: object) -> None:
    profile, _ = _write(tmp_path, value)
    with pytest.raises(ProfileError, match=r"malformed profile: .*estimated_from must be null"):
        load_profile(profile)


def test_a_spec_listing_only_an_estimate_is_told_so_by_name(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    profile, job = _write(tmp_path, "cpu")
    assert load_profile(profile).is_estimate
    code, _, err = cli("plan", str(job))
    text = " ".join(err.split())
    assert code == 2 and "Traceback" not in err
    assert "none listed in the spec" not in text
    assert "the spec lists only estimates" in text and "p.json" in text and "estimated from cpu" in text
    assert "srifty profile --model srifty.compute.zoo:tiny_mlp --device cpu" in text


def test_the_measured_profile_itself_still_plans(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _, job = _write(tmp_path, None)
    code, _, err = cli("plan", str(job), "--json", str(tmp_path / "plan.json"))
    assert code == 0, err
    assert (tmp_path / "plan.json").exists()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("precision",), 16, "precision"),
        (("optimizer",), None, "optimizer"),
        (("notes",), ["x"], "notes"),
        (("model", "name"), 3, "model.name"),
        (("measurement", "timing_method"), {"a": 1}, "measurement.timing_method"),
        (("memory", "max_batch_limited_by"), 0, "memory.max_batch_limited_by"),
        (("extra",), [1, 2], "extra"),
    ],
)
def test_a_text_field_that_is_not_text_is_a_malformed_profile_naming_it(
    tmp_path: Path, path: tuple[str, ...], value: object, field: str
) -> None:
    document = json.loads(TINY.read_text())
    holder = document
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(document))
    with pytest.raises(ProfileError, match=rf"malformed profile: .*{field} must be"):
        load_profile(profile)
