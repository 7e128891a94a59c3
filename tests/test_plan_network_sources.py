"""`srifty plan` on p4d/p5 candidates: the embedded default answers from the public tables and says so."""

from __future__ import annotations

import json
from pathlib import Path

from srifty.plan.api import plan_spec

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "p4d-p5-bert.yaml"


def test_plan_says_where_its_network_figures_come_from(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out_json = tmp_path / "plan.json"
    code, out, err = cli("plan", str(SPEC), "--json", str(out_json))
    assert code == 0, err
    flat = " ".join(out.split())
    assert "network figures" in flat and "public nccl-tests" in flat
    sources = json.loads(out_json.read_text())["network_sources"]
    assert set(sources) == {"p4d.24xlarge", "p5.48xlarge"}
    assert "probed" in sources["p5.48xlarge"] and "public T02" in sources["p5.48xlarge"]
    assert "public T06" in sources["p4d.24xlarge"]


def test_plan_api_records_network_sources_for_the_testbed_families() -> None:
    plan, inputs = plan_spec(ROOT / "examples" / "case5-bert.yaml")
    assert plan.network_sources == inputs.net_notes
    assert "emulated testbed" in plan.network_sources["g4dn.12xlarge"]
    assert "inside one VM" in plan.network_sources["g4dn.12xlarge"]
