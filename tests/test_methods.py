"""The methods' registry: every method says how it predicts and searches, and the planner and CLI read it."""

from __future__ import annotations

import pytest

from srifty.catalog import InstanceType, load_catalog
from srifty.errors import SpecError
from srifty.plan import METHODS, build_problems, get_method, make_plan, planning_methods
from srifty.spec import spec_from_mapping
from tests.conftest import REPO
from tests.test_planner import latency_ms, predictor, problem


def test_every_method_describes_how_it_predicts_and_searches() -> None:
    assert set(METHODS) >= {"srifty", "apm", "paleo", "cgf", "fgf", "oracle_bo", "srifty_all_batches"}
    for name, method in METHODS.items():
        assert method.name == name and method.label
        for words in (method.compute_model, method.network_model, method.iteration_model, method.search):
            assert words.strip()
        # Exactly one way to search: from a model (with a predictor) or on a ground truth.
        assert (method.plan_search is None) != (method.truth_search is None)
        assert (method.predictor is not None) == (method.plan_search is not None)


def test_only_the_greedy_heuristics_and_random_draws_ignore_the_constraints() -> None:
    assert {n for n, m in METHODS.items() if not m.honours_constraints} == {"cgf", "fgf", "random"}


def test_random_draws_are_uniform_over_the_space_and_place_the_global_batch() -> None:
    from collections import Counter

    import numpy as np

    from srifty.plan import count_configs, enumerate_configs
    from srifty.plan.methods import sample_configs

    space = problem({"t4.1": 4, "t4.4": 2, "v100.4": 2}, 64)
    every = {c.notation() for c in enumerate_configs(space)}
    draws = sample_configs(space, np.random.default_rng(0), 40 * len(every))
    assert all(d.global_batch == 64 and d.notation() in every for d in draws)
    counts = Counter(d.notation() for d in draws)
    assert set(counts) == every and len(every) == count_configs(space)
    assert max(counts.values()) / min(counts.values()) < 3  # uniform: 40 expected each


def test_best_homogeneous_plans_one_type() -> None:
    space = problem({"t4.1": 4, "t4.4": 2, "v100.4": 2}, 256)
    plan = make_plan(space, predictor(), latency_ms, "homogeneous")
    assert plan.best is not None and len(plan.best.config.groups) == 1
    assert all(len(s.config.groups) == 1 for s in plan.evaluated)


def test_methods_that_measure_on_a_truth_do_not_plan() -> None:
    assert "oracle_bo" not in planning_methods() and get_method("oracle_bo").needs_truth
    with pytest.raises(SpecError, match="ground truth"):
        make_plan(problem({"t4.1": 4}, 64), predictor(), latency_ms, method="oracle_bo")


def test_an_unknown_method_names_the_known_ones() -> None:
    with pytest.raises(SpecError, match=r"Did you mean 'apm'.*srifty, apm"):
        get_method("amp")


class Limits:
    """Every type holds batch 256; the knee sits at 16."""

    def max_batch(self, instance: InstanceType) -> int:
        return 256

    def knee_batch(self, instance: InstanceType) -> int:
        return 16


def test_one_problem_builder_applies_each_methods_batch_policy() -> None:
    spec = spec_from_mapping(
        {
            "model": "resnet50",
            "global_batch": 512,
            "iterations": 10,
            "goal": "min_time",
            "region": "us-east-1",
            "candidates": [{"instance_type": "g4dn.12xlarge", "market": "spot", "quota": 4}],
        }
    )
    catalog = load_catalog()
    knees = build_problems(spec, catalog, Limits(), get_method("srifty").batch_policy)
    everys = build_problems(spec, catalog, Limits(), get_method("srifty_all_batches").batch_policy)
    assert len(knees) == len(everys) > 1  # one per zone with a spot price
    knee, every = knees[0], everys[0]
    assert knee.candidates[0].batches == (16, 32, 64, 128)  # 512 / 4 GPUs per VM caps it at 128
    assert every.candidates[0].batches == (1, 2, 4, 8, 16, 32, 64, 128)
    assert every.candidates[0].knee_batch == 1 and knee.overhead_s == every.overhead_s == 155.0


def test_the_cli_takes_its_methods_from_the_registry(cli) -> None:  # type: ignore[no-untyped-def]
    spec = str(REPO / "examples" / "case1-resnet50.yaml")
    code, _, err = cli("plan", spec, "--method", "oracle_bo")
    assert code == 2 and "must be one of srifty, apm" in err and "Traceback" not in err


def test_random_draws_report_the_first_draw_even_beside_feasible_ones() -> None:
    space = problem({"t4.1": 4, "t4.4": 2, "v100.4": 2}, 256, goal="min_cost")
    every = make_plan(space, predictor(), latency_ms, "srifty", mode="exhaustive").evaluated
    times = sorted(s.time_s for s in every)
    # A deadline half of the space meets: some of the 20 draws break it, some do not.
    tight = problem({"t4.1": 4, "t4.4": 2, "v100.4": 2}, 256, goal="min_cost", deadline_s=times[len(times) // 2])
    plan = make_plan(tight, predictor(), latency_ms, "random")
    # 20 draws with replacement; the plan lists each distinct configuration once, in draw order.
    assert sum(p.n_evaluated for p in plan.placements) == 20 and 1 < len(plan.evaluated) <= 20
    assert plan.best is not None and plan.best == plan.evaluated[0]
    assert not plan.best.feasible  # the case that once crashed explain(): the first draw breaks the deadline
    assert any(s.feasible for s in plan.evaluated) and any(not s.feasible for s in plan.evaluated)
    assert plan.infeasibility is None  # something it drew was feasible; nothing to explain
