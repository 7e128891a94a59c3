"""The planner on synthetic profiles: constraints hold, modes agree, tightening never helps, baselines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.plan import Candidate, PlanProblem, SimPredictor, best_of, count_configs, enumerate_configs, make_plan
from srifty.plan.space import allowed_batches
from srifty.sim import SimOptions, Simulator
from tests.factories import ConstantBusBandwidth, instance, synthetic_profile

PROFILES = {
    "T4": synthetic_profile(fw=(1.0, 5.0), bwd=(2.0, 8.0), step=(0.01, 2.0), cv=0.05, gpu="T4"),
    "V100": synthetic_profile(fw=(0.4, 4.0), bwd=(0.8, 6.0), step=(0.005, 1.5), cv=0.05, gpu="V100"),
}
TYPES = {
    "t4.1": instance("t4.1", gpu="T4", gpus=1, price=0.5),
    "t4.4": instance("t4.4", gpu="T4", gpus=4, price=1.6),
    "v100.4": instance("v100.4", gpu="V100", gpus=4, price=6.0),
}


def latency_ms(cand: Candidate, batch: int) -> float:
    p = PROFILES[cand.instance.gpu_name]
    return float(sum(p.predict_ms(ph, batch)[()] for ph in ("fw", "bw", "step")))


def candidate(name: str, quota: int, global_batch: int, knee: int = 8, max_batch: int = 256) -> Candidate:
    inst = TYPES[name]
    batches, note = allowed_batches(knee, max_batch, global_batch, inst.gpus_per_vm)
    return Candidate(inst, "on_demand", quota, inst.on_demand_usd_per_hour or 0.0, batches, knee, max_batch, note)


def problem(
    names_quotas: dict[str, int],
    global_batch: int = 512,
    goal: str = "min_time",
    deadline_s: float | None = None,
    budget_usd: float | None = None,
    iterations: int = 1000,
) -> PlanProblem:
    return PlanProblem(
        candidates=tuple(candidate(n, q, global_batch) for n, q in names_quotas.items()),
        global_batch=global_batch,
        iterations=iterations,
        goal=goal,  # type: ignore[arg-type]
        deadline_s=deadline_s,
        budget_usd=budget_usd,
        overhead_s=155.0,
    )


def predictor(busbw: float = 2e9) -> SimPredictor:
    return SimPredictor(Simulator(PROFILES, ConstantBusBandwidth(busbw), SimOptions(iters=40)), seed=0)


def objective_value(plan, goal: str) -> float:  # type: ignore[no-untyped-def]
    return plan.best.time_s if goal == "min_time" else plan.best.cost_usd


def test_count_matches_enumeration() -> None:
    p = problem({"t4.1": 6, "t4.4": 3, "v100.4": 2}, global_batch=256)
    assert count_configs(p) == len(list(enumerate_configs(p))) > 10


@settings(max_examples=40, deadline=None)
@given(
    quotas=st.fixed_dictionaries({n: st.integers(0, 7) for n in TYPES}),
    global_batch=st.integers(1, 700),
)
def test_count_matches_enumeration_on_random_problems(quotas: dict[str, int], global_batch: int) -> None:
    names = {n: q for n, q in quotas.items() if q > 0} or {"t4.1": 1}
    p = problem(names, global_batch=global_batch)
    assert count_configs(p) == len(list(enumerate_configs(p)))


def test_counting_a_huge_global_batch_takes_neither_memory_nor_time() -> None:
    p = problem({"t4.1": 10**9}, global_batch=2**40)
    assert count_configs(p) == 0  # 10**9 VMs of at most 256 samples cannot place 2**40


@settings(max_examples=30, deadline=None)
@given(
    names=st.sets(st.sampled_from(sorted(TYPES)), min_size=1, max_size=3),
    quota=st.integers(1, 6),
    global_exp=st.integers(5, 10),
    goal=st.sampled_from(["min_time", "min_cost"]),
    deadline=st.one_of(st.none(), st.floats(160.0, 3000.0)),
    budget=st.one_of(st.none(), st.floats(0.01, 20.0)),
    mode=st.sampled_from(["exhaustive", "ilp"]),
)
def test_every_plan_satisfies_every_constraint(names, quota, global_exp, goal, deadline, budget, mode) -> None:  # type: ignore[no-untyped-def]
    p = problem({n: quota for n in names}, 2**global_exp, goal, deadline, budget)
    plan = make_plan(p, predictor(), latency_ms, mode=mode)
    if plan.best is None:
        assert plan.infeasibility is not None and plan.infeasibility.message
        return
    config = plan.best.config
    assert config.global_batch == p.global_batch
    quotas = {c.instance.name: c.quota for c in p.candidates}
    assert all(g.count <= quotas[g.instance.name] for g in config.groups)
    assert all(g.local_batch & (g.local_batch - 1) == 0 for g in config.groups)
    if deadline is not None:
        assert plan.best.time_s <= deadline
    if budget is not None:
        assert plan.best.cost_usd <= budget
    for alt in plan.alternatives:
        assert alt.feasible and alt.config.global_batch == p.global_batch


@settings(max_examples=25, deadline=None)
@given(
    goal=st.sampled_from(["min_time", "min_cost"]),
    loose=st.floats(300.0, 5000.0),
    factor=st.floats(0.3, 1.0),
    tighten=st.sampled_from(["deadline", "budget"]),
)
def test_tightening_a_constraint_never_improves_the_objective(goal, loose, factor, tighten) -> None:  # type: ignore[no-untyped-def]
    quotas = {"t4.1": 4, "t4.4": 2, "v100.4": 2}
    if tighten == "deadline":
        a, b = problem(quotas, 256, goal, deadline_s=loose), problem(quotas, 256, goal, deadline_s=loose * factor)
    else:
        a, b = (
            problem(quotas, 256, goal, budget_usd=loose / 100),
            problem(quotas, 256, goal, budget_usd=loose / 100 * factor),
        )
    plan_loose = make_plan(a, predictor(), latency_ms, mode="exhaustive")
    plan_tight = make_plan(b, predictor(), latency_ms, mode="exhaustive")
    if plan_tight.best is not None:
        assert plan_loose.best is not None
        assert objective_value(plan_loose, goal) <= objective_value(plan_tight, goal) + 1e-12


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(sorted(TYPES)),
    quota=st.integers(1, 32),
    global_exp=st.integers(4, 11),
    goal=st.sampled_from(["min_time", "min_cost"]),
)
def test_exhaustive_and_ilp_agree_on_one_type(name, quota, global_exp, goal) -> None:  # type: ignore[no-untyped-def]
    p = problem({name: quota}, 2**global_exp, goal)
    ex = make_plan(p, predictor(), latency_ms, mode="exhaustive")
    ilp = make_plan(p, predictor(), latency_ms, mode="ilp")
    assert (ex.best is None) == (ilp.best is None)
    if ex.best is not None and ilp.best is not None:
        assert ilp.best.config.notation() == ex.best.config.notation()


@pytest.mark.parametrize("goal", ["min_time", "min_cost"])
@pytest.mark.parametrize("quotas", [{"t4.1": 4, "v100.4": 2}, {"t4.4": 4, "v100.4": 2}, {"t4.1": 8, "t4.4": 2}])
def test_exhaustive_and_ilp_agree_on_small_mixed_problems(goal: str, quotas: dict[str, int]) -> None:
    p = problem(quotas, 256, goal)
    ex = make_plan(p, predictor(), latency_ms, mode="exhaustive")
    ilp = make_plan(p, predictor(), latency_ms, mode="ilp")
    assert ex.best is not None and ilp.best is not None
    # exhaustive search evaluates the front only (in order of a bound on the goal): never more than the space
    assert ilp.n_evaluated <= ex.n_evaluated <= count_configs(p)
    assert objective_value(ilp, goal) == pytest.approx(objective_value(ex, goal), rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(
    quotas=st.fixed_dictionaries({n: st.integers(0, 5) for n in TYPES}),
    global_exp=st.integers(5, 9),
    goal=st.sampled_from(["min_time", "min_cost"]),
)
def test_evaluating_only_the_front_finds_the_same_best(quotas: dict[str, int], global_exp: int, goal: str) -> None:
    from srifty.plan.solvers import exhaustive

    names = {n: q for n, q in quotas.items() if q > 0} or {"t4.1": 2}
    p = problem(names, 2**global_exp, goal)
    every = exhaustive(p, predictor())
    front = exhaustive(p, predictor(), latency_ms)
    assert len(front) <= len(every)
    best_every, best_front = best_of(goal, every), best_of(goal, front)
    assert (best_every is None) == (best_front is None)
    if best_every is not None and best_front is not None:
        assert best_front.config.key == best_every.config.key


def test_auto_mode_switches_on_space_size() -> None:
    p = problem({"t4.1": 64, "t4.4": 64, "v100.4": 64}, 4096)
    assert count_configs(p) > 10_000
    plan = make_plan(p, predictor(), latency_ms, mode="auto")
    assert plan.mode == "ilp" and plan.best is not None and plan.n_ilp_solved > 0
    small = make_plan(problem({"t4.1": 4}, 64), predictor(), latency_ms, mode="auto")
    assert small.mode == "exhaustive"


def test_pareto_front_is_non_dominated() -> None:
    plan = make_plan(problem({"t4.1": 8, "t4.4": 4, "v100.4": 2}, 512), predictor(), latency_ms, mode="exhaustive")
    front = plan.pareto
    assert len(front) >= 2
    times = [s.time_s for s in front]
    costs = [s.cost_usd for s in front]
    assert times == sorted(times) and costs == sorted(costs, reverse=True)


def test_deadline_infeasibility_names_the_constraint_and_quota() -> None:
    plan = make_plan(problem({"v100.4": 2}, 256, deadline_s=160.0), predictor(), latency_ms)
    assert plan.best is None and plan.infeasibility is not None
    assert plan.infeasibility.binding_constraint == "deadline"
    assert "raise the deadline or the v100.4 quota" in plan.infeasibility.message
    assert plan.infeasibility.closest is not None


def test_budget_and_quota_infeasibility() -> None:
    plan = make_plan(problem({"t4.1": 8}, 256, goal="min_cost", budget_usd=1e-4), predictor(), latency_ms)
    assert plan.infeasibility is not None and plan.infeasibility.binding_constraint == "budget"
    # the cheapest (every configuration is as unlikely): expected 12.8¢, its p95 the budget it would need
    assert (
        "expected 12.8¢" in plan.infeasibility.message and "raise the budget to at least" in plan.infeasibility.message
    )
    plan = make_plan(problem({"t4.1": 1}, 4096), predictor(), latency_ms)
    assert plan.infeasibility is not None and plan.infeasibility.binding_constraint == "quota"


@pytest.mark.parametrize("method", ["cgf", "fgf"])
def test_greedy_baselines_place_the_global_batch_within_quotas(method: str) -> None:
    p = problem({"t4.1": 8, "t4.4": 4, "v100.4": 2}, 1024)
    plan = make_plan(p, predictor(), latency_ms, method=method)  # type: ignore[arg-type]
    assert plan.best is not None and plan.best.config.global_batch == 1024
    quotas = {c.instance.name: c.quota for c in p.candidates}
    assert all(g.count <= quotas[g.instance.name] for g in plan.best.config.groups)


def test_cgf_prefers_cheap_gpus_at_full_batch_and_fgf_fast_gpus_at_64() -> None:
    p = problem({"t4.4": 8, "v100.4": 8}, 1024)
    cgf = make_plan(p, predictor(), latency_ms, method="cgf").best
    fgf = make_plan(p, predictor(), latency_ms, method="fgf").best
    assert cgf is not None and fgf is not None
    assert {g.instance.name for g in cgf.config.groups} == {"t4.4"} and cgf.config.groups[0].local_batch == 256
    assert fgf.config.groups[0].instance.name == "v100.4" and fgf.config.groups[0].local_batch == 64


@pytest.mark.parametrize("mode", ["exhaustive", "ilp"])
def test_case6_names_the_deadline_as_binding_in_both_search_modes(mode: str, cli) -> None:  # type: ignore[no-untyped-def]
    """Paper case 6 is infeasible under srifty's estimates because of its deadline. The anchor + ILP search
    skipped every anchor on the deadline and then blamed the batch equation."""
    from tests.conftest import EXAMPLES

    code, _, err = cli("plan", str(EXAMPLES / "case6-inception.yaml"), "--mode", mode)
    text = " ".join(err.split())
    assert code == 2 and "(deadline binds)" in text and "P(deadline) binds" in text and "confidence 0.9" in text, text


@pytest.mark.parametrize(
    ("constraints", "binds"), [({"deadline_s": 160.0}, "deadline"), ({"budget_usd": 1e-4}, "budget")]
)
def test_exhaustive_and_ilp_name_the_same_binding_constraint(constraints: dict[str, float], binds: str) -> None:
    for mode in ("exhaustive", "ilp"):
        spec = problem({"t4.1": 8, "v100.4": 2}, 256, goal="min_cost", **constraints)  # type: ignore[arg-type]
        plan = make_plan(spec, predictor(), latency_ms, mode=mode)  # type: ignore[arg-type]
        assert plan.best is None and plan.infeasibility is not None
        assert plan.infeasibility.binding_constraint == binds, (mode, plan.infeasibility.message)


def test_the_anchor_sweep_is_computed_once_per_placement_and_searched_as_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """warm() sweeps each ILP placement's anchors for its network prefetch; the search takes that sweep instead
    of sweeping again, and plans as a search that sweeps for itself."""
    from srifty.plan import solvers
    from srifty.plan.scoring import best_of as best

    p = problem({"t4.1": 64, "t4.4": 64, "v100.4": 64}, 4096, goal="min_cost", deadline_s=4000.0)
    sweeps: list[int] = []
    real = solvers.anchor_configs

    def counted(*args):  # type: ignore[no-untyped-def]
        sweeps.append(1)
        return real(*args)

    monkeypatch.setattr(solvers, "anchor_configs", counted)
    plan = make_plan(p, predictor(), latency_ms, mode="auto")
    assert plan.mode == "ilp" and plan.best is not None and len(sweeps) == 1
    alone = solvers.optimize(p, predictor(), latency_ms)
    assert len(sweeps) == 2 and alone.n_ilp_solved == plan.n_ilp_solved
    chosen = best("min_cost", alone.scored)
    assert chosen is not None and chosen.config.key == plan.best.config.key
    assert chosen.cost_usd == pytest.approx(plan.best.cost_usd, rel=1e-12)
