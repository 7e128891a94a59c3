"""The runtime controller: windowed throughput, certainty before re-planning, preemption, durable log."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.catalog import load_catalog
from srifty.plan import make_plan
from srifty.runtime.controller import Controller
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.progress import ProgressTracker
from srifty.spec import spec_from_mapping
from srifty.vocab import parse_config
from tests.test_planner import latency_ms, predictor, problem

SPEC = {
    "model": "resnet50",
    "global_batch": 256,
    "iterations": 1000,
    "goal": "min_cost",
    "deadline_s": 1000.0,
    "budget_usd": 5.0,
    "region": "us-east-1",
    "candidates": [
        {"instance_type": "p3.8xlarge", "market": "spot", "quota": 2},
        {"instance_type": "g4dn.12xlarge", "market": "spot", "quota": 8},
    ],
}


class FakeReplanner:
    """Records the remaining specs it is asked to plan; answers with a fixed synthetic plan (an infeasible one
    names the configuration closest to the deadline unless ``closest`` is false)."""

    def __init__(self, feasible: bool = True, closest: bool = True) -> None:
        self.calls: list = []
        self.feasible = feasible
        self.closest = closest

    def __call__(self, spec):  # type: ignore[no-untyped-def]
        self.calls.append(spec)
        quota = {"t4.4": 4} if self.feasible else {"t4.4": 1}
        plan = make_plan(problem(quota, 256, deadline_s=None if self.feasible else 1.0), predictor(), latency_ms)
        if plan.infeasibility is not None and not self.closest:
            plan = dataclasses.replace(plan, infeasibility=dataclasses.replace(plan.infeasibility, closest=None))
        return plan


def controller(tmp_path: Path, replanner=None, **spec_changes):  # type: ignore[no-untyped-def]
    spec = spec_from_mapping({**SPEC, **spec_changes})
    config = parse_config("2xp3.8xlarge@32[spot]", "us-east-1", catalog=load_catalog())
    log = DecisionLog(tmp_path / "decisions.jsonl")
    return Controller(spec, config, replanner or FakeReplanner(), log, start_s=0.0, window_s=60.0), log


@settings(max_examples=50, deadline=None)
@given(mean=st.floats(0.01, 10.0), jitter=st.floats(0.0, 0.3), n=st.integers(6, 200))
def test_window_interval_contains_the_mean(mean: float, jitter: float, n: int) -> None:
    tracker = ProgressTracker(window_s=1e9)
    now = 0.0
    tracker.record(0, now)
    for i in range(1, n + 1):
        now += mean * (1 + jitter * (1 if i % 2 else -1))
        tracker.record(i, now)
    w = tracker.window()
    assert w is not None
    assert w.optimistic_iter_s <= w.mean_iter_s <= w.pessimistic_iter_s
    assert w.mean_iter_s == pytest.approx(now / n, rel=1e-9)


def test_window_forgets_old_iterations() -> None:
    tracker = ProgressTracker(window_s=10.0)
    for i in range(1, 50):
        tracker.record(i, i * 1.0)
    for i in range(50, 60):
        tracker.record(i, 49 + (i - 49) * 0.1)
    w = tracker.window()
    assert w is not None and w.mean_iter_s < 1.0  # the slow iterations fell out of the window
    with pytest.raises(Exception, match="back in time"):
        tracker.record(60, 0.0)


def test_on_schedule_never_replans(tmp_path: Path) -> None:
    replanner = FakeReplanner()
    ctl, log = controller(tmp_path, replanner)
    for i in range(1, 200):
        assert ctl.on_iteration(i, i * 0.5) is None  # 1000 iterations at 0.5 s = 500 s < 1000 s
    assert replanner.calls == []
    assert [d.action for d in log.read()] == ["start"]


def test_certain_deadline_miss_replans_with_what_is_left(tmp_path: Path) -> None:
    replanner = FakeReplanner()
    ctl, log = controller(tmp_path, replanner)
    decision = None
    t = 0.0
    assert [d.action for d in log.read()] == ["start"]
    for i in range(1, 200):
        t += 2.0  # 1000 iterations at 2 s each = 2000 s > deadline 1000 s
        decision = ctl.on_iteration(i, t) or decision
        if decision:
            break
    assert decision is not None and decision.action == "switch"
    remaining = replanner.calls[0]
    assert remaining.iterations == 1000 - ctl.iteration
    assert remaining.deadline_s == pytest.approx(1000.0 - t)
    assert remaining.budget_usd == pytest.approx(5.0 - ctl.cost_so_far_usd(t), rel=1e-9)
    assert "deadline" in decision.reason and "→" in decision.reason


def test_transient_noise_does_not_trigger_a_switch(tmp_path: Path) -> None:
    replanner = FakeReplanner()
    ctl, _ = controller(tmp_path, replanner, deadline_s=1000.0)
    t = 0.0
    for i in range(1, 400):
        # Mean 0.9 s per iteration (900 s total < 1000 s) with bursts of slow iterations.
        t += 3.0 if i % 20 == 0 else 0.8
        ctl.on_iteration(i, t)
    assert replanner.calls == []


def test_preemption_bans_the_type_and_keeps_survivors(tmp_path: Path) -> None:
    replanner = FakeReplanner()
    ctl, log = controller(tmp_path, replanner)
    for i in range(1, 20):
        ctl.on_iteration(i, i * 0.5)
    decision = ctl.on_preemption("p3.8xlarge", "spot", 1, 10.0)
    assert decision.action == "switch"
    remaining = replanner.calls[-1]
    p3 = [c for c in remaining.candidates if c.instance_type == "p3.8xlarge"]
    assert p3 and p3[0].quota == 1  # only the surviving VM, no new launches
    actions = [d.action for d in log.read()]
    assert actions == ["start", "preempted", "switch"]


def test_a_catalog_wide_job_replans_in_its_own_zone_without_the_preempted_type(tmp_path: Path) -> None:
    replanner = FakeReplanner()
    auto = {k: v for k, v in SPEC.items() if k not in ("candidates", "region")}
    spec = spec_from_mapping({**auto, "default_quota": 3})
    config = parse_config("2xg4dn.12xlarge@32[spot]", "us-east-1", catalog=load_catalog(), zone="use1-az4")
    ctl = Controller(spec, config, replanner, DecisionLog(tmp_path / "d.jsonl"), start_s=0.0, window_s=60.0)
    ctl.on_preemption("g4dn.12xlarge", "spot", 1, 10.0)
    remaining = replanner.calls[-1]
    assert remaining.region == "us-east-1" and remaining.zones == ("use1-az4",) and remaining.candidates
    quotas = {(c.instance_type, c.market): c.quota for c in remaining.candidates}
    assert quotas[("g4dn.12xlarge", "spot")] == 1  # the survivor only
    assert {q for k, q in quotas.items() if k != ("g4dn.12xlarge", "spot")} == {3}
    catalog = load_catalog()
    for c in remaining.candidates:
        instance = catalog.get(c.instance_type, "us-east-1")
        assert "use1-az4" in (dict(instance.spot_usd_per_hour_by_zone) if c.market == "spot" else instance.zones)


def test_with_no_plan_in_time_the_job_goes_on_in_the_configuration_the_planner_names_closest(tmp_path: Path) -> None:
    replanner = FakeReplanner(feasible=False)
    ctl, _ = controller(tmp_path, replanner)
    decision = ctl.on_preemption("p3.8xlarge", "spot", 1, 10.0)
    assert len(replanner.calls) == 1  # no other plan is asked for
    closest = replanner(replanner.calls[-1]).infeasibility.closest.config  # the same plan again
    assert decision.action == "no_alternative" and "the configuration the re-plan names closest" in decision.reason
    assert ".;" not in decision.reason
    assert ctl.config == closest and decision.config == closest.notation()


def test_no_alternative_keeps_running_and_logs_why(tmp_path: Path) -> None:
    ctl, log = controller(tmp_path, FakeReplanner(feasible=False, closest=False))
    decision = ctl.on_preemption("p3.8xlarge", "spot", 1, 10.0)
    assert decision.action == "no_alternative" and "re-plan found none" in decision.reason
    assert log.read()[-1] == decision
    assert ctl.config.notation() == "1xp3.8xlarge@32"


@pytest.mark.parametrize(("hosts_of_type", "carried_on"), [(3, "2xp3.8xlarge@32"), (2, "1xp3.8xlarge@32")])
@pytest.mark.parametrize("slow", [False, True])
def test_with_no_alternative_a_lost_host_is_replaced_by_a_spare_of_its_type(
    tmp_path: Path, hosts_of_type: int, carried_on: str, slow: bool
) -> None:
    """The re-plan after a host loss finds nothing: the job carries on at its size when the host file has a spare
    of the lost host's type (3 hosts for 2 running), and shrinks only when it has none (2 hosts)."""
    spec = spec_from_mapping(SPEC)
    config = parse_config("2xp3.8xlarge@32[spot]", "us-east-1", catalog=load_catalog())
    log = DecisionLog(tmp_path / "decisions.jsonl")
    quotas = {("p3.8xlarge", "spot"): hosts_of_type}
    ctl = Controller(spec, config, FakeReplanner(False, closest=False), log, window_s=60.0, quotas=quotas)
    decision = ctl.on_hosts_lost([("10.0.0.2", "p3.8xlarge", "spot")], 10.0, "no heartbeat", slow=slow)
    assert decision.action == "no_alternative" and "re-plan found none" in decision.reason
    assert ctl.config.notation() == carried_on
    assert ctl.quotas == {("p3.8xlarge", "spot"): hosts_of_type - 1}


class DeadlineBoundReplanner(FakeReplanner):
    """No plan meets a deadline (and none is named closest); without one, the fixed synthetic plan."""

    def __call__(self, spec):  # type: ignore[no-untyped-def]
        self.feasible, self.closest = spec.deadline_s is None, False
        return super().__call__(spec)


@pytest.mark.parametrize("loss", ["preemption", "host"])
def test_with_no_plan_in_time_the_job_carries_on_with_the_vms_left_at_the_global_batch(
    tmp_path: Path, loss: str
) -> None:
    """No configuration meets the deadline after a loss: the job is planned again over the VMs left only (no new
    ones, a spare of the host file included), fastest first and without deadline or budget, so that its local
    batches still add up to global_batch; shrinking to the survivors at their old batches would change it."""
    replanner = DeadlineBoundReplanner()
    spec = spec_from_mapping({**SPEC, "candidates": [{**SPEC["candidates"][0], "quota": 3}]})
    config = parse_config("2xp3.8xlarge@32[spot]", "us-east-1", catalog=load_catalog())
    quotas = {("p3.8xlarge", "spot"): 3} if loss == "host" else None
    ctl = Controller(spec, config, replanner, DecisionLog(tmp_path / "d.jsonl"), window_s=60.0, quotas=quotas)
    if loss == "host":
        decision = ctl.on_hosts_lost([("10.0.0.2", "p3.8xlarge", "spot")], 10.0, "no heartbeat")
    else:
        decision = ctl.on_preemption("p3.8xlarge", "spot", 1, 10.0)
    assert decision.action == "no_alternative" and "keeps global_batch 256" in decision.reason
    in_time, unbound = replanner.calls
    assert in_time.deadline_s is not None and (unbound.deadline_s, unbound.budget_usd) == (None, None)
    assert unbound.goal == "min_time"
    left = 2 if loss == "host" else 1  # the spare stands in for a lost host; a preempted VM is not replaced
    assert [(c.instance_type, c.market, c.quota) for c in unbound.candidates] == [("p3.8xlarge", "spot", left)]
    assert ctl.config.global_batch == 256 and decision.config == ctl.config.notation()


class OnlyNewVmsReplanner(FakeReplanner):
    """No plan meets a deadline, and none of the VMs left alone (planned without the budget) keeps the global
    batch; new VMs within the budget do (the fixed synthetic plan)."""

    def __call__(self, spec):  # type: ignore[no-untyped-def]
        self.feasible, self.closest = spec.deadline_s is None and spec.budget_usd is not None, False
        return super().__call__(spec)


def test_where_the_vms_left_cannot_keep_the_global_batch_new_ones_within_the_budget_do(tmp_path: Path) -> None:
    replanner = OnlyNewVmsReplanner()
    ctl, _ = controller(tmp_path, replanner)
    decision = ctl.on_preemption("p3.8xlarge", "spot", 1, 10.0)
    assert decision.action == "no_alternative" and "within the budget that keeps global_batch 256" in decision.reason
    in_time, own, within_budget = replanner.calls
    assert [(c.instance_type, c.quota) for c in own.candidates] == [("p3.8xlarge", 1)]
    assert within_budget.deadline_s is None and within_budget.budget_usd == in_time.budget_usd
    assert within_budget.candidates == in_time.candidates and within_budget.goal == "min_time"
    assert ctl.config.global_batch == 256


def test_where_no_configuration_keeps_the_global_batch_the_decision_says_it_changed(tmp_path: Path) -> None:
    ctl, _ = controller(tmp_path, FakeReplanner(feasible=False, closest=False))
    decision = ctl.on_preemption("p3.8xlarge", "spot", 1, 10.0)
    assert decision.action == "no_alternative" and "each step now takes 128 samples" in decision.reason
    assert ctl.config.notation() == "1xp3.8xlarge@32"


def test_cost_accumulates_across_configurations(tmp_path: Path) -> None:
    ctl, _ = controller(tmp_path)
    price = ctl.config.price_usd_per_hour()
    assert ctl.cost_so_far_usd(3600.0) == pytest.approx(price)
    ctl.on_preemption("p3.8xlarge", "spot", 1, 1800.0)
    new_price = ctl.config.price_usd_per_hour()
    assert ctl.cost_so_far_usd(3600.0) == pytest.approx(price / 2 + new_price / 2)


def test_log_survives_a_kill_and_skips_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    code = (
        "import os, sys\n"
        "from srifty.runtime.decisions import Decision, DecisionLog\n"
        f"log = DecisionLog({str(path)!r})\n"
        "for i in range(5):\n"
        "    log.append(Decision(float(i), i, 'continue', 'step'))\n"
        "os.kill(os.getpid(), 9)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    result = subprocess.run([sys.executable, "-c", code], env=env, check=False)
    assert result.returncode == -9
    with open(path, "a") as handle:
        handle.write('{"time_s": 9.0, "iter')  # a line torn by a crash mid-write
    decisions = DecisionLog(path).read()
    assert [d.iteration for d in decisions] == [0, 1, 2, 3, 4]
    assert all(isinstance(d, Decision) for d in decisions)
    assert json.loads(path.read_text().splitlines()[0])["action"] == "continue"


def test_a_new_run_keeps_the_previous_runs_decision_log(tmp_path: Path) -> None:
    from srifty.runtime.decisions import Decision, DecisionLog

    first = DecisionLog.fresh(tmp_path / "decisions.jsonl")
    first.append(Decision(0.0, 0, "start", "first run"))
    second = DecisionLog.fresh(tmp_path / "decisions.jsonl")
    second.append(Decision(0.0, 0, "start", "second run"))
    assert [d.reason for d in second.read()] == ["second run"]
    kept = [p for p in tmp_path.iterdir() if p.name != "decisions.jsonl"]
    assert len(kept) == 1 and [d.reason for d in DecisionLog(kept[0]).read()] == ["first run"]


class SameConfigReplanner(FakeReplanner):
    """Answers with the configuration already running."""

    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.config = config

    def __call__(self, spec):  # type: ignore[no-untyped-def]
        import dataclasses

        plan = super().__call__(spec)
        return dataclasses.replace(plan, best=dataclasses.replace(plan.best, config=self.config))


def test_a_replan_that_picks_the_running_configuration_keeps_it(tmp_path: Path) -> None:
    running = parse_config("2xp3.8xlarge@32[spot]", "us-east-1", catalog=load_catalog())
    ctl, log = controller(tmp_path, replanner := SameConfigReplanner(running))
    decisions, t = [], 0.0
    for i in range(1, 200):
        t += 2.0  # certain deadline miss
        if (d := ctl.on_iteration(i, t)) is not None:
            decisions.append(d)
    assert decisions and {d.action for d in decisions} == {"keep"}
    assert "keeps running" in decisions[0].reason
    # one re-plan per window, not one per iteration
    assert len(replanner.calls) == len(decisions) <= 1 + (t - decisions[0].time_s) / ctl.window_s
    assert [d.action for d in log.read()] == ["start"] + ["keep"] * len(decisions)


def test_a_slow_host_is_set_aside_before_the_replan(tmp_path: Path) -> None:
    asked: list[int] = []

    def find_slow() -> list[tuple[str, str, str, str]]:
        asked.append(ctl.iteration)
        return [("10.0.0.2", "p3.8xlarge", "spot", "10.0.0.2: its compute takes 3.0x the others'")]

    spec = spec_from_mapping(SPEC)
    config = parse_config("2xp3.8xlarge@32[spot]", "us-east-1", catalog=load_catalog())
    log = DecisionLog(tmp_path / "decisions.jsonl")
    quotas = {("p3.8xlarge", "spot"): 3}
    ctl = Controller(spec, config, FakeReplanner(), log, window_s=60.0, quotas=quotas, find_slow=find_slow)
    decision, t = None, 0.0
    for i in range(1, 200):
        t += 2.0
        if (decision := ctl.on_iteration(i, t)) is not None:
            break
    assert decision is not None and decision.action == "switch" and asked == [ctl.iteration]
    actions = [d.action for d in log.read()]
    assert actions == ["start", "slow_host", "switch"]
    assert ctl.set_aside_hosts == ("10.0.0.2",) and ctl.quotas == {("p3.8xlarge", "spot"): 2}
    assert "set aside as slow" in log.read()[1].reason and "deadline" in log.read()[1].reason
