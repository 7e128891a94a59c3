"""Profile schema 2: a schema-1 file (written by srifty's first profiler) still loads, and is migrated."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from srifty.compute import estimate_profile, load_profile
from srifty.compute.profile import PROFILE_SCHEMA_VERSION
from srifty.errors import ProfileError

V1 = Path(__file__).parent / "data" / "tiny_mlp_schema1.json"


def test_a_schema_1_profile_loads_and_predicts_as_written() -> None:
    raw = json.loads(V1.read_text())
    assert raw["schema_version"] == 1 and "work" not in raw and "peak_flops_per_s" not in raw["device"]
    p = load_profile(V1)
    assert p.work is None and p.estimate is None and p.spread_points == ()
    assert p.device.peak_flops_per_s is None and p.device.peaks_source is None
    for phase, model in raw["latency"].items():
        xs = np.asarray(model["vertices_batch"])
        np.testing.assert_allclose(p.predict_ms(phase, xs), model["vertices_ms"])
    assert p.max_batch == raw["memory"]["max_batch"] and len(p.samples) == len(raw["samples"])
    assert float(p.cv("iter", 4)) > 0  # the measured spread survives


def test_a_migrated_profile_is_saved_as_schema_2(tmp_path: Path) -> None:
    path = load_profile(V1).save(tmp_path / "p.json")
    assert json.loads(path.read_text())["schema_version"] == PROFILE_SCHEMA_VERSION == 2
    assert load_profile(path) == load_profile(V1)


def test_a_schema_1_profile_cannot_source_an_estimate_and_says_why() -> None:
    with pytest.raises(ProfileError, match=r"no per-op work counts.*profile it again"):
        estimate_profile(load_profile(V1), "T4")
