"""Plan: search heterogeneous and spot configurations under quotas, deadline and budget."""

from srifty.plan.build import build_problem, compute_latency_ms, max_batch_on
from srifty.plan.evaluate import (
    AdditiveEvaluator,
    Estimate,
    Evaluator,
    Scored,
    SimEvaluator,
    apm_evaluator,
    paleo_evaluator,
    score,
)
from srifty.plan.planner import DEFAULT_MAX_SIM_CALLS, make_plan, search
from srifty.plan.problem import Candidate, PlanProblem
from srifty.plan.result import Infeasibility, Plan, pareto_front
from srifty.plan.space import count_configs, enumerate_configs

__all__ = [
    "DEFAULT_MAX_SIM_CALLS",
    "AdditiveEvaluator",
    "Candidate",
    "Estimate",
    "Evaluator",
    "Infeasibility",
    "Plan",
    "PlanProblem",
    "Scored",
    "SimEvaluator",
    "apm_evaluator",
    "build_problem",
    "compute_latency_ms",
    "count_configs",
    "enumerate_configs",
    "make_plan",
    "max_batch_on",
    "paleo_evaluator",
    "pareto_front",
    "score",
    "search",
]
