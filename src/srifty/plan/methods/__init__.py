"""Every planning method in one registry (:mod:`srifty.plan.methods.registry`), and the baselines together.

* :mod:`~srifty.plan.methods.additive`: the APM and Paleo baselines' no-overlap predictor;
* :mod:`~srifty.plan.methods.alpha_beta`: APM's alpha-beta allreduce model (fitted on probe rows);
* :mod:`~srifty.plan.methods.paleo`, :mod:`~srifty.plan.methods.paleo_net`: Paleo's analytical compute
  and allreduce models;
* :mod:`~srifty.plan.methods.greedy`: the CGF and FGF heuristics;
* :mod:`~srifty.plan.methods.oracle_bo`: Bayesian optimisation on a ground truth;
* :mod:`~srifty.plan.methods.draws`: random feasible draws and the best homogeneous configuration.
"""

from srifty.plan.methods.additive import apm_predictor
from srifty.plan.methods.alpha_beta import AlphaBetaModel, fit_alpha_beta
from srifty.plan.methods.draws import sample_configs, sample_placed
from srifty.plan.methods.oracle_bo import homogeneous_configs, oracle_bo
from srifty.plan.methods.paleo import paleo_profile
from srifty.plan.methods.paleo_net import PaleoBandwidthModel
from srifty.plan.methods.registry import (
    METHODS,
    Knowledge,
    Method,
    PlanSearch,
    TruthSearch,
    get_method,
    planning_methods,
)

__all__ = [
    "METHODS",
    "AlphaBetaModel",
    "Knowledge",
    "Method",
    "PaleoBandwidthModel",
    "PlanSearch",
    "TruthSearch",
    "apm_predictor",
    "fit_alpha_beta",
    "get_method",
    "homogeneous_configs",
    "oracle_bo",
    "paleo_profile",
    "planning_methods",
    "sample_configs",
    "sample_placed",
]
