"""The paper's Figure 8 scenario on the EMULATED cloud: a spot reclaim at iteration 200, re-plan, finish in time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srifty.evaluate.scenario import run_scenario
from srifty.spec import load_spec
from srifty.vocab import parse_config

ROOT = Path(__file__).resolve().parents[1]
FIG8 = ROOT / "examples" / "fig8-preemption.yaml"

pytestmark = pytest.mark.slow


def test_figure8_replans_after_the_reclaim_and_meets_the_deadline(tmp_path: Path) -> None:
    spec = load_spec(FIG8)
    outcome = run_scenario(spec, tmp_path)

    assert outcome.iterations == spec.iterations == 400
    assert outcome.met_deadline is True
    assert outcome.finished_s <= 500
    assert outcome.configs[0] == "2xp3.8xlarge@128"
    assert len(outcome.configs) == 2 and outcome.configs[1] != outcome.configs[0]
    after = outcome.configs[1]
    assert "2xp3.8xlarge" not in after  # the reclaimed VM is not launched again
    # Since plans are judged on their distributions (issue 23), new spot VMs (g4dn, judged by the spot model's
    # prior) might not be had in time for the tight deadline left, so the re-plan finds nothing that meets it at
    # 90 %; the job goes on in the configuration likeliest to finish in time, at its global batch (the survivor
    # alone at its old batch would halve it) and still finishes in time.
    decisions = [json.loads(line) for line in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    actions = [d["action"] for d in decisions]
    assert actions[:2] == ["start", "preempted"] and actions[-1] == "finish" and len(actions) == 4
    replan = decisions[2]
    assert replan["action"] in ("switch", "no_alternative") and replan["iteration"] == 200
    assert "p3.8xlarge preempted" in replan["reason"]
    assert replan["action"] == "switch" or "closest" in replan["reason"]
    assert parse_config(after, "us-east-1").global_batch == spec.global_batch == 1024
    if replan["action"] == "switch":
        assert after in replan["reason"] and replan["details"]["remaining_iterations"] == 200
        assert replan["details"]["remaining_deadline_s"] < spec.deadline_s  # type: ignore[operator]

    timeline = json.loads((tmp_path / "timeline.json").read_text())
    events = [e["event"] for e in timeline if e["event"] != "iteration"]
    assert events[:2] == ["launch", "ready"] and events[-1] == "finished"
    assert "preempted" in events and replan["action"] in events
    iterations = [e["iteration"] for e in timeline if e["event"] == "iteration"]
    assert iterations == list(range(1, 201)) + list(range(201, 401))  # checkpoint at 200: nothing lost
    assert timeline[0]["deadline_s"] == 500 and timeline[0]["target_iterations"] == 400

    from srifty.report import build_report

    html = build_report([], tmp_path / "report.html", tmp_path / "timeline.json").read_text()
    assert "Runtime timeline" in html and '"deadline"' in html and "all iterations" in html


def test_emulated_run_is_seeded(tmp_path: Path) -> None:
    spec = load_spec(FIG8)
    a = run_scenario(spec, tmp_path / "a")
    b = run_scenario(spec, tmp_path / "b")
    assert a.finished_s == b.finished_s and a.configs == b.configs and a.cost_usd == b.cost_usd


def test_an_injected_preemption_must_name_a_candidate(tmp_path: Path) -> None:
    from srifty.errors import SpecError

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        FIG8.read_text().replace(
            "at_iteration: 200, instance_type: p3.8xlarge", "at_iteration: 200, instance_type: p3.2xlarge"
        )
    )
    with pytest.raises(SpecError, match=r"preempts p3\.2xlarge \(spot\), which is not a candidate"):
        load_spec(bad)


def test_an_emulated_run_takes_a_model_the_cloud_does_not_bundle_from_the_specs_profiles(tmp_path: Path) -> None:
    from tests.factories import cloud_source_profile

    cloud_source_profile().save(tmp_path / "synthetic__cpu.json")
    spec_path = tmp_path / "job.yaml"
    spec_path.write_text(
        "model: {name: synthetic, profiles: [synthetic__cpu.json]}\n"
        "global_batch: 64\niterations: 50\ngoal: min_cost\nregion: us-east-1\n"
        "candidates:\n  - {instance_type: g4dn.xlarge, market: spot, quota: 2}\n"
        "emulation: {seed: 0}\n",
        encoding="utf-8",
    )
    outcome = run_scenario(load_spec(spec_path), tmp_path / "run")
    assert outcome.iterations == 50 and outcome.finished_s > 0
