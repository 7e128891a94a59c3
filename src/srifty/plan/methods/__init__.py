"""Every planning method in one registry (:mod:`srifty.plan.methods.registry`), and the baselines together.

* :mod:`~srifty.plan.methods.additive`: the APM and Paleo baselines' no-overlap predictor;
* :mod:`~srifty.plan.methods.alpha_beta`: APM's alpha-beta allreduce model (fitted on probe rows);
* :mod:`~srifty.plan.methods.paleo`, :mod:`~srifty.plan.methods.paleo_net`: Paleo's analytical compute
  and allreduce models;
* :mod:`~srifty.plan.methods.greedy`: the CGF and FGF heuristics;
* :mod:`~srifty.plan.methods.oracle_bo`: Bayesian optimisation on a ground truth;
* :mod:`~srifty.plan.methods.draws`: random feasible draws and the best homogeneous configuration.
"""

from srifty.plan.methods.draws import sample_configs, sample_placed
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
    "Knowledge",
    "Method",
    "PlanSearch",
    "TruthSearch",
    "get_method",
    "planning_methods",
    "sample_configs",
    "sample_placed",
]
