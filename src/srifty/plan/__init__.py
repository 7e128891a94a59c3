"""Plan: search heterogeneous and spot configurations under quotas, deadline and budget.

Predictors (:mod:`~srifty.plan.predict`) say how long an iteration takes; scoring (:mod:`~srifty.plan.scoring`)
turns that into job time, cost and constraint checks; the methods' registry (:mod:`~srifty.plan.methods`)
says which predictor and search each method (srifty or a baseline) uses.
"""

from srifty.plan.build import BatchLimits, ProfileLimits, build_problems, compute_latency_ms, max_batch_on
from srifty.plan.methods import METHODS, Knowledge, Method, get_method, planning_methods
from srifty.plan.offers import Offer, expand_offers
from srifty.plan.planner import make_plan
from srifty.plan.predict import Estimate, MemoPredictor, Predictor, SimPredictor
from srifty.plan.problem import Candidate, Placement, PlanProblem
from srifty.plan.prune import PrunedPlacement, PrunedType, Pruning, prune
from srifty.plan.result import Infeasibility, PlacementOutcome, Plan, pareto_front
from srifty.plan.scoring import Scored, best_of, job_time_cost, objective, score
from srifty.plan.solvers import DEFAULT_MAX_SIM_CALLS, SearchOutcome, optimize
from srifty.plan.space import BatchPolicy, count_configs, enumerate_configs

__all__ = [
    "DEFAULT_MAX_SIM_CALLS",
    "METHODS",
    "BatchLimits",
    "BatchPolicy",
    "Candidate",
    "Estimate",
    "Infeasibility",
    "Knowledge",
    "MemoPredictor",
    "Method",
    "Offer",
    "Placement",
    "PlacementOutcome",
    "Plan",
    "PlanProblem",
    "Predictor",
    "ProfileLimits",
    "PrunedPlacement",
    "PrunedType",
    "Pruning",
    "Scored",
    "SearchOutcome",
    "SimPredictor",
    "best_of",
    "build_problems",
    "compute_latency_ms",
    "count_configs",
    "enumerate_configs",
    "expand_offers",
    "get_method",
    "job_time_cost",
    "make_plan",
    "max_batch_on",
    "objective",
    "optimize",
    "pareto_front",
    "planning_methods",
    "prune",
    "score",
]
