"""Plan: search heterogeneous and spot configurations under quotas, deadline and budget.

Predictors (:mod:`~srifty.plan.predict`) say how long an iteration takes; scoring (:mod:`~srifty.plan.scoring`)
turns that into job time, cost and constraint checks; the methods' registry (:mod:`~srifty.plan.methods`)
says which predictor and search each method (srifty or a baseline) uses.
"""

from srifty.plan.api import (
    area_type_names,
    plan_job,
    plan_spec,
    require_fits,
    require_global_batch,
    spec_area,
    spec_config,
)
from srifty.plan.build import (
    BatchLimits,
    ProfileLimits,
    build_problems,
    compute_latency_ms,
    max_batch_on,
    unplaced,
)
from srifty.plan.explain import count_text, per_type_cheapest_usd_per_hour
from srifty.plan.export import (
    cluster_name,
    controlled_task,
    controller_command,
    job_id,
    shared_network,
    sky_resources,
    skypilot_tasks,
    torchrun_commands,
    with_install,
    workdir_path,
    write_controlled,
    write_skypilot,
)
from srifty.plan.inputs import PlanInputs, check_model_name, resolve
from srifty.plan.install_source import HOW as INSTALL_HOW
from srifty.plan.install_source import InstallSource, install_source
from srifty.plan.methods import (
    METHODS,
    AlphaBetaModel,
    Knowledge,
    Method,
    PaleoBandwidthModel,
    apm_predictor,
    fit_alpha_beta,
    get_method,
    homogeneous_configs,
    oracle_bo,
    paleo_profile,
    planning_methods,
    sample_configs,
    sample_placed,
)
from srifty.plan.offers import Offer, expand_offers
from srifty.plan.planner import make_plan
from srifty.plan.predict import Estimate, MemoPredictor, Predictor, SimPredictor
from srifty.plan.problem import Candidate, Placement, PlanProblem
from srifty.plan.prune import PrunedPlacement, PrunedType, Pruning, compute_floor_fn, prune, unpruned
from srifty.plan.result import PLAN_KIND, PLAN_SCHEMA_VERSION, Infeasibility, PlacementOutcome, Plan, pareto_front
from srifty.plan.risk import core_config
from srifty.plan.scoring import Scored, best_of, deadline_probability, job_time_cost, objective, preference, score
from srifty.plan.solvers import DEFAULT_MAX_SIM_CALLS, SearchOutcome, cheapest_counts, fewest_vms, optimize
from srifty.plan.space import BatchPolicy, allowed_batches, config_of, count_configs, enumerate_configs, powers_of_two
from srifty.plan.spot_policy import other_zones, pace_of, policy_for, scored_config, zone_prices

__all__ = [
    "DEFAULT_MAX_SIM_CALLS",
    "INSTALL_HOW",
    "METHODS",
    "PLAN_KIND",
    "PLAN_SCHEMA_VERSION",
    "AlphaBetaModel",
    "BatchLimits",
    "BatchPolicy",
    "Candidate",
    "Estimate",
    "Infeasibility",
    "InstallSource",
    "Knowledge",
    "MemoPredictor",
    "Method",
    "Offer",
    "PaleoBandwidthModel",
    "Placement",
    "PlacementOutcome",
    "Plan",
    "PlanInputs",
    "PlanProblem",
    "Predictor",
    "ProfileLimits",
    "PrunedPlacement",
    "PrunedType",
    "Pruning",
    "Scored",
    "SearchOutcome",
    "SimPredictor",
    "allowed_batches",
    "apm_predictor",
    "area_type_names",
    "best_of",
    "build_problems",
    "cheapest_counts",
    "check_model_name",
    "cluster_name",
    "compute_floor_fn",
    "compute_latency_ms",
    "config_of",
    "controlled_task",
    "controller_command",
    "core_config",
    "count_configs",
    "count_text",
    "deadline_probability",
    "enumerate_configs",
    "expand_offers",
    "fewest_vms",
    "fit_alpha_beta",
    "get_method",
    "homogeneous_configs",
    "install_source",
    "job_id",
    "job_time_cost",
    "make_plan",
    "max_batch_on",
    "objective",
    "optimize",
    "oracle_bo",
    "other_zones",
    "pace_of",
    "paleo_profile",
    "pareto_front",
    "per_type_cheapest_usd_per_hour",
    "plan_job",
    "plan_spec",
    "planning_methods",
    "policy_for",
    "powers_of_two",
    "preference",
    "prune",
    "require_fits",
    "require_global_batch",
    "resolve",
    "sample_configs",
    "sample_placed",
    "score",
    "scored_config",
    "shared_network",
    "sky_resources",
    "skypilot_tasks",
    "spec_area",
    "spec_config",
    "torchrun_commands",
    "unplaced",
    "unpruned",
    "with_install",
    "workdir_path",
    "write_controlled",
    "write_skypilot",
    "zone_prices",
]
