"""Spot policies and the judge's trace replay (`srifty eval spot`): decisions, losses, rollbacks, costs, the
oracle's bound, the JSON schema, and bad trace files."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.catalog import load_catalog
from srifty.evaluate.spot_replay import (
    ReplayJob,
    oracle_run,
    replay,
    spot_vms_held,
    start_times_s,
    summarise,
)
from srifty.spot.policy import JobPace, OnDemandOnly, SpotRestart, SriftyPolicy, UniformProgress
from srifty.vocab import Config, ConfigGroup
from srifty.vocab.spot_policy import SpotDecision, SpotView
from srifty.vocab.spot_trace import SpotTrace

P3 = load_catalog().get("p3.2xlarge", "us-west-2")
ZONE = "usw2-az1"
LAUNCH_S, RESTORE_S = 100.0, 5.0


def trace(held: list[int], gap_s: float = 60.0) -> SpotTrace:
    return SpotTrace("t/made-up.json", "p3.2xlarge", "aws", "us-west-2c", "us-west-2", gap_s, tuple(held), "0" * 64)


def job(iterations: int = 1000, deadline_s: float | None = None, n: int = 2, iter_s: float = 1.0) -> ReplayJob:
    spot = Config((ConfigGroup(P3, n, 32, "spot"),), ZONE)
    on_demand = Config((ConfigGroup(P3, n, 32, "on_demand"),))
    return ReplayJob(
        iterations,
        deadline_s,
        None,
        spot,
        on_demand,
        None,
        {"spot": iter_s, "on_demand": iter_s},
        RESTORE_S,
        RESTORE_S,
        lambda rng: LAUNCH_S,
    )


def launch_rng(k: int) -> np.random.Generator:
    return np.random.default_rng(k)


PACE = JobPace(1.0, 1.0, LAUNCH_S + RESTORE_S, 0.05)
NO_CHECKPOINT_S = 1e9


def test_nothing_lost_on_a_full_trace() -> None:
    j = job()
    run = replay(j, trace([2] * 200), 0.0, SpotRestart(checkpoint_interval_s=NO_CHECKPOINT_S), launch_rng)
    assert run.finish_s == pytest.approx(LAUNCH_S + RESTORE_S + 1000.0)
    assert run.cost_usd == pytest.approx(run.finish_s * j.price_per_s("spot")) and run.losses == 0


def test_a_loss_rolls_back_to_the_checkpoint_and_waits_for_capacity() -> None:
    held = [2] * 10 + [1] * 5 + [2] * 200  # at 600 s one of two VMs goes, back at 900 s
    policy = SpotRestart(checkpoint_interval_s=200.0)
    run = replay(job(), trace(held), 0.0, policy, launch_rng)
    assert run.losses == 1
    # trained 495 s by 600 s: saved at two checkpoints (400 iterations); 300 s waiting; launch, restore, the rest
    cycles_before = 2
    saved = cycles_before * 200.0
    rest = 1000.0 - saved
    expected = 900.0 + LAUNCH_S + RESTORE_S + rest + math.floor(rest / 200.0) * RESTORE_S
    assert run.finish_s == pytest.approx(expected)
    assert [d[1] for d in run.decisions] == ["spot"]


def test_on_demand_is_never_lost_and_costs_more() -> None:
    held = [2] * 10 + [0] * 50 + [2] * 200
    spot = replay(job(), trace(held), 0.0, SpotRestart(), launch_rng)
    on_demand = replay(job(), trace(held), 0.0, OnDemandOnly(), launch_rng)
    assert on_demand.losses == 0 and spot.losses == 1
    assert on_demand.finish_s < spot.finish_s and on_demand.cost_usd > spot.cost_usd


def test_srifty_falls_back_when_the_slack_runs_out_and_keeps_the_deadline() -> None:
    held = [2] * 10 + [0] * 100 + [2] * 200  # capacity away for 100 minutes
    deadline = 2000.0
    srifty = replay(job(deadline_s=deadline), trace(held), 0.0, SriftyPolicy(PACE, 0.9), launch_rng)
    restart = replay(job(deadline_s=deadline), trace(held), 0.0, SpotRestart(), launch_rng)
    assert srifty.deadline_met and not restart.deadline_met
    assert [d[1] for d in srifty.decisions] == ["spot", "on_demand"]
    assert "safety net" in srifty.decisions[-1][2]


def test_uniform_progress_goes_on_demand_behind_its_line() -> None:
    held = [2] * 10 + [0] * 100 + [2] * 200
    run = replay(job(deadline_s=3000.0), trace(held), 0.0, UniformProgress(PACE), launch_rng)
    assert run.deadline_met and "on_demand" in [d[1] for d in run.decisions]
    assert "uniform-progress line" in next(d[2] for d in run.decisions if d[1] == "on_demand")


def test_the_srifty_policy_decides_from_slack() -> None:
    policy = SriftyPolicy(PACE, 0.9, events_per_s=1 / 3600, event_cost_s=600.0)

    def view(now: float, done: float, mode: str = "spot", available: bool | None = True) -> SpotView:
        return SpotView(now, 2000.0, None, 0.0, done, 1000, mode, "tick", available)  # type: ignore[arg-type]

    assert policy.decide(view(0.0, 0)).action == "spot"
    assert policy.decide(view(900.0, 0)).action == "on_demand"  # 1100 s left, needs 105 + 1000 + margin
    # 600 s left, on-demand needs 400 s and a margin: 174 s of slack, less than the 343 s going back would need
    assert policy.decide(view(1400.0, 600, "on_demand")).action == "on_demand"
    assert policy.decide(view(100.0, 600, "on_demand")).action == "spot"  # capacity back, plenty of slack
    assert policy.decide(view(100.0, 600, "on_demand", available=False)).action == "on_demand"
    no_deadline = SpotView(0.0, None, None, 0.0, 0, 1000, "waiting", "loss", False)
    assert policy.decide(no_deadline).action == "spot"


def test_more_spot_vms_than_the_trace_held_scale_with_it() -> None:
    t = trace([4, 3, 2, 4])
    assert spot_vms_held(t, 2, 0.0) and spot_vms_held(t, 2, 120.0) and not spot_vms_held(t, 3, 120.0)
    assert spot_vms_held(t, 8, 0.0) and not spot_vms_held(t, 8, 60.0)  # 8 x 3/4 = 6 of 8
    assert spot_vms_held(t, 2, 240.0)  # the trace repeats


def test_start_times_spread_over_every_trace() -> None:
    a, b = trace([1] * 100), trace([1] * 50)
    starts = start_times_s([a, b], 5, np.random.default_rng(0))
    assert [t.span_s for t, _ in starts].count(a.span_s) == 3 and len(starts) == 5
    assert all(0 <= s < t.span_s for t, s in starts)


def test_summary_has_the_issues_schema() -> None:
    runs = [replay(job(deadline_s=2000.0), trace([2] * 100), 0.0, SpotRestart(), launch_rng)]
    summary = summarise(runs)
    assert set(summary) == {
        "deadline_met_fraction",
        "budget_met_fraction",
        "cost_usd_mean",
        "cost_usd_p95",
        "finish_s_p95",
        "losses_mean",
        "zone_moves_mean",
        "runs",
    }
    assert summary["deadline_met_fraction"] == 1.0 and summary["budget_met_fraction"] is None


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 2), min_size=5, max_size=60),
    st.sampled_from(["srifty", "uniform_progress", "spot_restart", "on_demand"]),
    st.floats(1200.0, 6000.0),
)
def test_the_oracle_costs_no_more_than_any_policy_that_meets_the_deadline(
    held: list[int], name: str, deadline: float
) -> None:
    policy = {
        "srifty": SriftyPolicy(PACE, 0.9),
        "uniform_progress": UniformProgress(PACE),
        "spot_restart": SpotRestart(),
        "on_demand": OnDemandOnly(),
    }[name]
    t = trace([*held, 2])
    j = job(deadline_s=deadline)
    run = replay(j, t, 0.0, policy, launch_rng)
    oracle = oracle_run(j, t, 0.0)
    assert oracle.deadline_met
    if run.deadline_met:
        assert oracle.cost_usd <= run.cost_usd + 1e-9


def write_trace(folder: Path, name: str, body: object) -> Path:
    path = folder / name
    path.write_text(json.dumps(body))
    return path


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"metadata": {"gap_seconds": 60}}, "`data`"),
        ({"metadata": {"gap_seconds": 60}, "data": [2, -1]}, "`data[1]`"),
        ({"metadata": {"gap_seconds": 60}, "data": []}, "`data`"),
        ({"metadata": {"gap_seconds": "x"}, "data": [1]}, "`metadata.gap_seconds`"),
    ],
)
def test_eval_spot_refuses_bad_traces_before_anything_runs(cli, tmp_path: Path, body: object, field: str) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import EXAMPLES

    bad = write_trace(tmp_path, "us-west-2c_v100_1.json", body)
    code, _, err = cli("eval", "spot", str(EXAMPLES / "spot-resnet50-tight.yaml"), "--trace", str(bad))
    assert code == 2 and str(bad) in err and field in err and "Traceback" not in err


def test_eval_spot_refuses_an_instance_type_the_catalog_lacks(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import EXAMPLES

    path = write_trace(tmp_path, "us-east-1b_intel_64.json", {"metadata": {"gap_seconds": 34}, "data": [1, 0, 1]})
    code, _, err = cli("eval", "spot", str(EXAMPLES / "spot-resnet50-tight.yaml"), "--trace", str(path))
    assert code == 2 and "intel_64" in err and "FILE=INSTANCE_TYPE" in err


def test_the_policy_falls_back_at_the_loss_when_the_deadline_leaves_no_room() -> None:
    """The other branch, decided on the same view by the same objects (no run needed: the view is the input)."""
    policy = SriftyPolicy(JobPace(0.5, 0.5, 2.0, 0.05), 0.9)
    tight = SpotView(20.0, 25.0, None, 0.0, 10.0, 30, "waiting", "loss", None)
    roomy = SpotView(20.0, 3600.0, None, 0.0, 10.0, 30, "waiting", "loss", None)
    assert policy.decide(tight).action == "on_demand" and policy.decide(roomy).action == "spot"


@pytest.mark.parametrize(("deadline_s", "action"), [(1000.0, "on_demand"), (100000.0, "spot")])
def test_the_controller_asks_the_spot_policy_at_a_loss_and_re_plans_on_its_markets(
    tmp_path: Path, deadline_s: float, action: str
) -> None:
    """``srifty run``'s controller asks the spot policy at a spot loss, logs its answer with the reason, and
    re-plans over on-demand VMs only when it falls back (no processes: the real run is the slow
    ``test_runtime_local`` test)."""
    from types import SimpleNamespace

    from srifty.runtime.controller import Controller
    from srifty.runtime.decisions import DecisionLog
    from srifty.spec import spec_from_mapping
    from srifty.vocab import parse_config

    spec = spec_from_mapping(
        {
            "model": "resnet50",
            "global_batch": 256,
            "iterations": 1000,
            "goal": "min_cost",
            "deadline_s": deadline_s,
            "region": "us-east-1",
            "candidates": [
                {"instance_type": "p3.8xlarge", "market": "spot", "quota": 2},
                {"instance_type": "p3.8xlarge", "market": "on_demand", "quota": 2},
            ],
        }
    )
    config = parse_config("2xp3.8xlarge@32[spot]", "us-east-1", catalog=load_catalog())
    asked: list = []

    def replan(remaining):  # type: ignore[no-untyped-def]
        asked.append(remaining)
        return SimpleNamespace(feasible=False, best=None, infeasibility=None)

    # 1,000 iterations of 1 s left at 400 s, 150 s to relaunch: on-demand needs 1,150 s, more than the 600 s
    # a 1,000 s deadline leaves (fall back); a loose deadline leaves room (stay on spot).
    policy = SriftyPolicy(JobPace(1.0, 1.0, 150.0), 0.9)
    log = DecisionLog(tmp_path / "decisions.jsonl")
    ctl = Controller(spec, config, replan, log, start_s=0.0, window_s=60.0, policy=policy)
    ctl.on_preemption("p3.8xlarge", "spot", 1, 400.0)
    decided = next(d for d in log.read() if d.action == "spot_policy")
    assert decided.details["action"] == action and decided.details["policy"] == "srifty"
    assert decided.reason.startswith(f"srifty policy: {action} (")
    assert policy.decide(ctl.spot_view(400.0, "loss")).action == action  # what the replay's call would say
    markets = {c.market for c in asked[-1].candidates}
    assert markets == ({"on_demand"} if action == "on_demand" else {"spot", "on_demand"})
    assert ctl.on_demand_only == (action == "on_demand")


# ---- zone moves -------------------------------------------------------------------------------------------

HOME, OTHER = "usw2-az1", "usw2-az2"  # p3.2xlarge spot: $0.6598/h in az1, $0.5415/h in az2


def zone_view(
    available: bool | None,
    other: bool | None,
    now: float = 0.0,
    mode: str = "waiting",
    event: str = "tick",
    deadline: float | None = 4000.0,
) -> SpotView:
    return SpotView(now, deadline, None, 0.0, 0.0, 1000, mode, event, available, zone=HOME,  # type: ignore[arg-type]
                    zones_available=((OTHER, other),))  # fmt: skip


def zone_policy(home_usd: float, other_usd: float, wait_s: float = 600.0, on_demand: float = 10.0) -> SriftyPolicy:
    prices = ((HOME, home_usd), (OTHER, other_usd))
    return SriftyPolicy(PACE, 0.9, 1 / 3600, 600.0, zone_prices_usd_per_hour=prices, on_demand_usd_per_hour=on_demand,
                        capacity_wait_s=wait_s, capacity_wait_sd_s=wait_s)  # fmt: skip


def test_the_srifty_policy_moves_zone_only_when_capacity_is_away_and_the_move_pays() -> None:
    cheaper, dearer = zone_policy(1.0, 1.0), zone_policy(1.0, 2.0)
    moved = cheaper.decide(zone_view(False, True))
    assert moved.action == "spot" and moved.zone == OTHER and "no higher price" in moved.reason
    assert cheaper.decide(zone_view(True, True)).zone is None  # capacity is here: stay
    assert cheaper.decide(zone_view(False, False)).zone is None  # nowhere to go: wait
    # dearer elsewhere ($1/h more, on-demand $9/h more): with 2,900 s of slack the wait (600 s mean and spread)
    # outlasts it with probability 0.01, not worth $1/h; with 330 s, 0.6 is
    assert dearer.p_wait_exceeds(2900.0) < 0.02 < 0.5 < dearer.p_wait_exceeds(330.0) < 0.7
    assert dearer.decide(zone_view(False, True)).zone is None
    # with 1,000 s of slack the expected on-demand cost ($9/h x 0.15) exceeds the $1/h, but not twice over
    assert 0.11 < dearer.p_wait_exceeds(1000.0) < 0.22
    assert dearer.decide(zone_view(False, True, now=1831.0)).zone is None
    late = dearer.decide(zone_view(False, True, now=2500.0))
    assert late.action == "spot" and late.zone == OTHER and "probability 0.6" in late.reason
    # never to a zone whose spot price reaches the on-demand one
    assert zone_policy(1.0, 2.0, on_demand=2.0).decide(zone_view(False, True, now=2500.0)).zone is None
    # from the on-demand fallback: back to spot in the other zone when the slack covers it
    back = dearer.decide(zone_view(False, True, mode="on_demand"))
    assert back.action == "spot" and back.zone == OTHER
    # a real run knows no capacity: after a loss it tries a zone that may have it, if no dearer
    real = cheaper.decide(zone_view(None, None, event="loss"))
    assert real.zone == OTHER and "not known" in real.reason
    assert cheaper.decide(zone_view(None, None, event="tick")).zone is None
    # no deadline: moves only where it costs no more
    assert cheaper.decide(zone_view(False, True, deadline=None)).zone == OTHER
    assert dearer.decide(zone_view(False, True, deadline=None)).zone is None


def test_the_srifty_policy_moves_back_to_a_cheaper_zone_when_the_rest_of_the_job_pays_for_it() -> None:
    policy = zone_policy(2.0, 1.0)  # training in HOME at $2/h; OTHER has capacity at $1/h

    def running(done: float, other: bool = True, now: float = 0.0) -> SpotView:
        return SpotView(now, 40000.0, None, 0.0, done, 1000, "spot", "tick", True, zone=HOME,
                        zones_available=((OTHER, other),))  # fmt: skip

    # 1,000 s left save $0.28, more than twice the $0.09 a 105 s relaunch costs at both prices
    back = policy.decide(running(0.0))
    assert back.zone == OTHER and "saves" in back.reason
    assert policy.decide(running(900.0)).zone is None  # 100 s left save less than the move costs
    assert policy.decide(running(0.0, other=False)).zone is None
    assert zone_policy(1.0, 2.0).decide(running(0.0)).zone is None  # already in the cheaper zone


def test_a_zone_move_needs_a_spot_answer() -> None:
    with pytest.raises(ValueError, match="zone move"):
        SpotDecision("on_demand", "x", zone=OTHER)


def two_zone_job(deadline_s: float | None = 4000.0) -> ReplayJob:
    spot = Config((ConfigGroup(P3, 2, 32, "spot"),), HOME)
    return dataclasses.replace(job(deadline_s=deadline_s), spot=spot)


def test_a_zone_move_skips_the_wait_and_bills_the_new_zone() -> None:
    """Capacity leaves the home zone at 600 s for 2,400 s; the other zone has it throughout."""
    home = trace([2] * 10 + [0] * 40 + [2] * 200)
    other = trace([2] * 250)
    j, policy = two_zone_job(), zone_policy(0.6598, 0.5415)
    stayed = replay(j, home, 0.0, policy, launch_rng)
    moved = replay(j, home, 0.0, policy, launch_rng, {OTHER: other})
    assert stayed.zone_moves == 0 and moved.zone_moves == 1 and moved.losses == stayed.losses == 1
    assert moved.finish_s < stayed.finish_s - 2000.0 and moved.cost_usd < stayed.cost_usd
    assert any("usw2-az2" in reason for _, _, reason in moved.decisions)
    # billed at the new zone's price after the move: the same run at az1's price would cost more
    assert j.price_per_s("spot", OTHER) < j.price_per_s("spot")
    # a policy that never moves ignores the other zone
    assert replay(j, home, 0.0, SpotRestart(), launch_rng, {OTHER: other}).zone_moves == 0


def test_losses_follow_the_zone_the_job_moved_to() -> None:
    home = trace([2] * 10 + [0] * 240)
    other = trace([2] * 20 + [0] * 10 + [2] * 220)  # the other zone loses capacity at 1,200 s
    run = replay(two_zone_job(None), home, 0.0, zone_policy(0.6598, 0.5415), launch_rng, {OTHER: other})
    assert run.zone_moves == 1 and run.losses == 2 and math.isfinite(run.finish_s)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 2), min_size=5, max_size=60),
    st.lists(st.integers(0, 2), min_size=5, max_size=60),
    st.floats(1200.0, 6000.0),
)
def test_the_oracle_with_every_zone_costs_no_more_than_srifty_moving_zones(
    held: list[int], held_other: list[int], deadline: float
) -> None:
    home, other = trace([*held, 2]), trace([*held_other, 2])
    j = two_zone_job(deadline)
    run = replay(j, home, 0.0, zone_policy(0.6598, 0.5415), launch_rng, {OTHER: other})
    oracle = oracle_run(j, home, 0.0, {OTHER: other})
    assert oracle.deadline_met and oracle.cost_usd <= oracle_run(j, home, 0.0).cost_usd + 1e-9
    if run.deadline_met:
        assert oracle.cost_usd <= run.cost_usd + 1e-9


def test_traces_recorded_together_stand_for_the_other_zones() -> None:
    from srifty.evaluate.spot_eval import recorded_with, zone_traces

    def named(name: str, zone: str, n: int = 10, gap: float = 60.0) -> SpotTrace:
        return SpotTrace(name, "p3.2xlarge", "aws", zone, "us-west-2", gap, (1,) * n, "0" * 64)

    a = named("day1/us-west-2a_v100_1.json", "us-west-2a")
    b = named("day1/us-west-2b_v100_1.json", "us-west-2b")
    c = named("day1/us-west-2c_v100_1.json", "us-west-2c")
    other_day = named("day2/us-west-2b_v100_1.json", "us-west-2b")
    shorter = named("day1/us-west-2d_v100_1.json", "us-west-2d", n=5)
    assert recorded_with(a, [a, b, c, other_day, shorter]) == [b, c]
    assert zone_traces(a, [a, b, c], [OTHER]) == {OTHER: b}  # more traces than zones: the first by name
    assert zone_traces(a, [a, other_day], [OTHER]) == {}


def test_the_controller_moves_the_job_to_the_zone_the_policy_names(tmp_path: Path) -> None:
    """A zone move at a loss in ``srifty run``'s controller: logged, and the re-plan is in the new zone with the
    lost type allowed again there (its ban was of the zone left)."""
    from types import SimpleNamespace

    from srifty.plan import zone_prices
    from srifty.runtime.controller import Controller
    from srifty.runtime.decisions import DecisionLog
    from srifty.spec import spec_from_mapping
    from srifty.vocab import parse_config

    spec = spec_from_mapping(
        {
            "model": "resnet50",
            "global_batch": 256,
            "iterations": 1000,
            "goal": "min_cost",
            "deadline_s": 100000.0,
            "region": "us-east-1",
            "candidates": [
                {"instance_type": "p3.8xlarge", "market": "spot", "quota": 2},
                {"instance_type": "p3.8xlarge", "market": "on_demand", "quota": 2},
            ],
        }
    )
    config = parse_config("2xp3.8xlarge@32[spot]", "us-east-1", catalog=load_catalog())
    prices = zone_prices(config)
    home, other = config.spot_zone(), prices[1][0]
    assert prices[0][0] == home  # the configuration sits in its cheapest zone
    asked: list = []

    def replan(remaining):  # type: ignore[no-untyped-def]
        asked.append(remaining)
        return SimpleNamespace(feasible=False, best=None, infeasibility=None)

    # the other zone priced as low as home (a real run does not know where capacity is: it tries there)
    policy = SriftyPolicy(JobPace(1.0, 1.0, 150.0), 0.9, zone_prices_usd_per_hour=((home, 1.0), (other, 1.0)))
    log = DecisionLog(tmp_path / "decisions.jsonl")
    ctl = Controller(spec, config, replan, log, start_s=0.0, window_s=60.0, policy=policy)
    ctl.on_preemption("p3.8xlarge", "spot", 1, 400.0)
    moved = next(d for d in log.read() if d.action == "zone_move")
    assert moved.details["from"] == home and moved.details["to"] == other
    assert ctl.spot_zone() == other
    remaining = asked[-1]
    assert remaining.zones == (other,)
    spot = [c for c in remaining.candidates if c.market == "spot"]
    assert spot and spot[0].quota == 2  # the type lost in the old zone may be launched again here


def test_eval_spot_gives_each_run_the_zones_recorded_with_its_trace(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`srifty eval spot` on three traces recorded together: each run's other zones are the other two, srifty
    alone may move there, and the oracle (every zone) stays below every policy's mean cost."""
    from srifty.spot import bundled_trace_paths
    from tests.conftest import EXAMPLES

    paths = sorted(str(p) for p in bundled_trace_paths() if "availability" in str(p) and "us-west-2" in str(p))
    assert len(paths) == 3
    traces = [arg for path in paths for arg in ("--trace", path)]
    spec = str(EXAMPLES / "spot-vgg16-medium.yaml")
    out = tmp_path / "moves.json"
    code, stdout, err = cli("eval", "spot", spec, "--starts", "3", *traces, "--json", str(out))
    assert code == 0, err
    assert "zone moves" in stdout and "paired with catalog zone IDs" in stdout
    doc = json.loads(out.read_text())
    pairs = doc["plan"]["zone_traces"]
    assert len(pairs) == 3 and all(len(zones) == 2 for zones in pairs.values())
    assert all(name not in zones.values() for name, zones in pairs.items())  # never its own trace
    policies = doc["policies"]
    assert all(policies[p]["zone_moves_mean"] == 0.0 for p in ("on_demand", "spot_restart", "uniform_progress"))
    oracle = policies["oracle"]["cost_usd_mean"]
    assert all(oracle <= row["cost_usd_mean"] + 1e-9 for row in policies.values())
    code, _, err = cli("eval", "spot", spec, "--starts", "3", *traces, "--no-zone-moves", "--json", str(out))
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["policies"]["srifty"]["zone_moves_mean"] == 0.0
    assert all(not zones for zones in doc["plan"]["zone_traces"].values())
