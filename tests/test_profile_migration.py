"""Profile schemas 1 and 2 (written by srifty's earlier profilers) still load, and are migrated: schema 2 added
op counts, schema 3 the measured interference, which older files lack (the simulator then says it kept perfect
overlap)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from srifty.compute import estimate_profile, load_profile
from srifty.compute.profile import PROFILE_SCHEMA_VERSION
from srifty.errors import ProfileError

V1 = Path(__file__).parent / "data" / "tiny_mlp_schema1.json"
V2 = Path(__file__).parent / "data" / "tiny_mlp_schema2.json"


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


def test_a_migrated_profile_is_saved_as_the_current_schema(tmp_path: Path) -> None:
    path = load_profile(V1).save(tmp_path / "p.json")
    assert json.loads(path.read_text())["schema_version"] == PROFILE_SCHEMA_VERSION == 3
    assert load_profile(path) == load_profile(V1)


def test_a_schema_2_profile_loads_without_interference_and_the_simulator_says_so() -> None:
    from srifty.sim import simulate
    from srifty.vocab import make_config
    from tests.factories import ConstantBusBandwidth, instance

    assert json.loads(V2.read_text())["schema_version"] == 2
    p = load_profile(V2)
    assert p.interference is None and p.work is None
    result = simulate(make_config([(instance("cpu.vm", gpu="cpu"), 2, 4)]), {"cpu": p}, ConstantBusBandwidth(1e9), 5)
    assert (
        result.iteration_model.startswith("perfect overlap") and "no interference measurement" in result.iteration_model
    )


def test_a_schema_1_profile_cannot_source_an_estimate_and_says_why() -> None:
    with pytest.raises(ProfileError, match=r"no per-op work counts.*profile it again"):
        estimate_profile(load_profile(V1), "T4")
