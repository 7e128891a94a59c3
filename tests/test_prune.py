"""Pruning before search: a dominated type is dropped, a useful one kept, and pruning never changes the optimum."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.catalog import InstanceType, catalog_from
from srifty.plan import Candidate, Plan, build_problems, make_plan
from srifty.plan.offers import Offer
from srifty.plan.predict import MemoPredictor, SimPredictor
from srifty.plan.prune import compute_floor_fn, prune, unpruned
from srifty.plan.scoring import objective
from srifty.sim import SimOptions, Simulator
from srifty.spec import spec_from_mapping
from tests.factories import ConstantBusBandwidth, instance
from tests.test_planner import PROFILES, latency_ms

ITERS = 40


def zoned(
    name: str,
    gpu: str = "T4",
    gpus: int = 1,
    on_demand: float | None = 1.0,
    spot: dict[str, float] | None = None,
    gbps: float = 25.0,
) -> InstanceType:
    """A VM type in region ``test-1`` with per-zone spot prices (none unless given)."""
    return instance(name, gpu, gpus, gbps, on_demand, spot or {})


class Limits:
    """Every type holds batch 256; the knee sits at 8."""

    def max_batch(self, instance: InstanceType) -> int:
        return 256

    def knee_batch(self, instance: InstanceType) -> int:
        return 8


def spec(goal: str = "min_cost", global_batch: int = 256, **extra: object):  # type: ignore[no-untyped-def]
    return spec_from_mapping(
        {"model": "synthetic", "global_batch": global_batch, "iterations": 1000, "goal": goal, **extra}
    )


def problems_of(offers: list[Offer], **spec_fields: object):  # type: ignore[no-untyped-def]
    job = spec(**spec_fields)  # type: ignore[arg-type]
    return build_problems(job, catalog_from([o.instance for o in offers]), Limits(), "knee", offers=offers)


def predictor(busbw: float = 2e9) -> MemoPredictor:
    return MemoPredictor(SimPredictor(Simulator(PROFILES, ConstantBusBandwidth(busbw), SimOptions(iters=ITERS))))


def floor():  # type: ignore[no-untyped-def]
    return compute_floor_fn(PROFILES, ITERS)


def latency(cand: Candidate, batch: int) -> float:
    return latency_ms(cand, batch)


def plan_both(problems) -> tuple[Plan | None, Plan]:  # type: ignore[no-untyped-def]
    """(pruned plan or None when pruning left nothing, unpruned plan), both exhaustive."""
    kept = prune(problems, predictor(), floor())
    pruned = make_plan(kept.problems, predictor(), latency, mode="exhaustive", pruning=kept) if kept.problems else None
    full = make_plan(problems, predictor(), latency, mode="exhaustive", pruning=unpruned(problems))
    return pruned, full


def test_a_dearer_twin_is_dropped_with_its_dominance_named_and_the_cheap_type_kept() -> None:
    cheap = zoned("t4.cheap", on_demand=0.5, gbps=25.0)
    dear = zoned("t4.dear", on_demand=2.0, gbps=25.0)
    problems = problems_of([Offer(cheap, "on_demand", 8), Offer(dear, "on_demand", 8)])
    kept = prune(problems, predictor(), floor())
    (dropped,) = kept.types
    assert dropped.instance_type == "t4.dear" and dropped.rule == "bound"
    assert "same T4 as t4.cheap/on_demand at 4.0× its price per GPU, network no better" in dropped.reason
    assert dropped.bound is not None and kept.incumbent is not None and dropped.bound > kept.incumbent.cost_usd
    assert [c.instance.name for p in kept.problems for c in p.candidates] == ["t4.cheap"]
    assert kept.n_offers_before == 2 and kept.n_offers_after == 1 and kept.space_after < kept.space_before


def test_a_slower_but_cheaper_type_is_kept_for_min_cost_and_dropped_for_min_time() -> None:
    slow_cheap = zoned("t4.slow", gpu="T4", gpus=4, on_demand=0.4)
    fast_dear = zoned("v100.fast", gpu="V100", gpus=4, on_demand=12.0)
    offers = [Offer(slow_cheap, "on_demand", 8), Offer(fast_dear, "on_demand", 8)]
    fast_network = predictor(busbw=1e12)  # communication negligible: compute decides
    cost = prune(problems_of(offers, goal="min_cost", global_batch=256), fast_network, floor())
    assert "t4.slow" in {c.instance.name for p in cost.problems for c in p.candidates}
    assert "t4.slow" not in {t.instance_type for t in cost.types}
    time = prune(problems_of(offers, goal="min_time", global_batch=256), fast_network, floor())
    assert {t.instance_type: t.rule for t in time.types} == {"t4.slow": "bound"}
    assert "takes ≥" in time.types[0].reason


def test_types_that_miss_the_deadline_or_budget_on_their_own_bound_are_dropped() -> None:
    slow = zoned("t4.one", gpus=1, on_demand=0.5)
    fast = zoned("v100.four", gpu="V100", gpus=4, on_demand=6.0)
    offers = [Offer(slow, "on_demand", 2), Offer(fast, "on_demand", 4)]
    deadline = prune(problems_of(offers, goal="min_cost", global_batch=512, deadline_s=190.0), predictor(), floor())
    assert {t.instance_type: t.rule for t in deadline.types} == {"t4.one": "deadline"}
    budget = prune(problems_of(offers, goal="min_time", global_batch=512, budget_usd=0.4), predictor(), floor())
    assert {t.instance_type: t.rule for t in budget.types} == {"v100.four": "budget"}


def test_a_zone_offering_everything_cheaper_dominates_another() -> None:
    # Prices 1% apart: too close for the cost bound to empty test-1b, so zone dominance has to drop it.
    a = zoned("t4.a", spot={"test-1a": 0.200, "test-1b": 0.202})
    b = zoned("t4.b", gpus=4, spot={"test-1a": 0.900, "test-1b": 0.909})
    problems = problems_of([Offer(a, "spot", 4), Offer(b, "spot", 4)])
    kept = prune(problems, predictor(), floor())
    zones = [p.placement.zone for p in kept.problems if p.placement is not None]
    assert "test-1b" not in zones and "test-1a" in zones
    assert any("offers every type left in test-1b at no higher price" in d.reason for d in kept.placements)


@st.composite
def random_problems(draw):  # type: ignore[no-untyped-def]
    zones = ("test-1a", "test-1b")
    offers = []
    for i in range(draw(st.integers(2, 4))):
        gpu = draw(st.sampled_from(["T4", "V100"]))
        gpus = draw(st.sampled_from([1, 4]))
        where = draw(st.sets(st.sampled_from(zones), min_size=0, max_size=2))
        spot = {z: draw(st.floats(0.1, 8.0)) for z in sorted(where)}
        on_demand = draw(st.one_of(st.none(), st.floats(0.2, 16.0))) if spot else draw(st.floats(0.2, 16.0))
        net = draw(st.sampled_from([10.0, 25.0]))
        inst = zoned(f"{gpu.lower()}.{gpus}x.{i}", gpu, gpus, on_demand, spot, net)
        quota = draw(st.integers(1, 4))
        if spot:
            offers.append(Offer(inst, "spot", quota))
        if on_demand is not None:
            offers.append(Offer(inst, "on_demand", quota))
    goal = draw(st.sampled_from(["min_time", "min_cost"]))
    extra: dict[str, object] = {"goal": goal, "global_batch": 2 ** draw(st.integers(5, 9))}
    if draw(st.booleans()):
        extra["deadline_s"] = draw(st.floats(180.0, 3000.0))
    if draw(st.booleans()):
        extra["budget_usd"] = draw(st.floats(0.05, 20.0))
    return offers, extra


@settings(max_examples=60, deadline=None)
@given(case=random_problems())
def test_pruning_never_changes_the_optimum(case) -> None:  # type: ignore[no-untyped-def]
    offers, fields = case
    problems = problems_of(offers, **fields)
    pruned, full = plan_both(problems)
    assert (full.best is None) == (pruned is None or pruned.best is None)
    if full.best is None or pruned is None or pruned.best is None:
        return
    goal = str(fields["goal"])
    assert pruned.best.config.key == full.best.config.key
    assert objective(goal, pruned.best) == objective(goal, full.best)
    assert pruned.pruning is not None and pruned.pruning.space_after <= pruned.pruning.space_before


def test_bounds_sit_under_every_prediction_of_a_configuration_with_the_type() -> None:
    """The bound behind each drop: no configuration containing the dropped type beats it."""
    cheap = zoned("t4.cheap", on_demand=0.5)
    dear = zoned("t4.dear", on_demand=2.0)
    problems = problems_of([Offer(cheap, "on_demand", 8), Offer(dear, "on_demand", 8)])
    kept = prune(problems, predictor(), floor())
    (dropped,) = kept.types
    full = make_plan(problems, predictor(), latency, mode="exhaustive", pruning=unpruned(problems))
    with_it = [s for s in full.evaluated if any(g.instance.name == "t4.dear" for g in s.config.groups)]
    assert with_it and dropped.bound is not None
    assert min(s.cost_usd for s in with_it) >= dropped.bound
    assert all(math.isfinite(s.cost_usd) for s in with_it)
