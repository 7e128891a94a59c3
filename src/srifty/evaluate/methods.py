"""Plan one job with srifty and with each baseline, every one from what it learned on the emulated cloud.

As in the paper, the baselines replace srifty's learned models and keep its optimizer:

* ``srifty``: the simulator on srifty's profiles and its learned bandwidth model;
* ``apm``: Nexus' linear compute model through the same 4 profiled batches, Daydream's alpha-beta
  allreduce (fitted on the same probe rows), Cynthia's no-overlap iteration model;
* ``paleo``: Paleo's analytical model from the profiles' op counts and the GPUs' datasheets;
* ``cgf`` and ``fgf``: the greedy heuristics (cheapest GPU at full batch; fastest GPU at batch 64);
* ``srifty_all_batches``: an ablation, not a baseline: srifty with its knee pruning (the paper's second
  insight: no local batch below the knee) turned off, every power-of-two batch that fits allowed.

Oracle BO is in :mod:`srifty.evaluate.oracle_bo`: it does not plan from a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from srifty.compute import Profile
from srifty.plan import Candidate, Evaluator, Plan, PlanProblem, SimEvaluator, apm_evaluator, make_plan
from srifty.plan.build import compute_latency_ms
from srifty.plan.space import powers_of_two
from srifty.sim import BusBandwidthModel, SimOptions, Simulator

PLAN_METHODS = ("srifty", "apm", "paleo", "cgf", "fgf", "srifty_all_batches")
ALL_METHODS = (*PLAN_METHODS, "oracle_bo")
ABLATIONS = ("srifty_all_batches",)


def srifty_evaluator(
    profiles: Mapping[str, Profile], net_model: BusBandwidthModel, seed: int, iters: int = 100
) -> SimEvaluator:
    """srifty's predictor: the simulator over ``profiles`` and the learned bandwidth model."""
    return SimEvaluator(Simulator(profiles, net_model, SimOptions(iters=iters)), seed=seed)


def evaluator_for(
    method: str, profiles: Mapping[str, Profile], net_model: BusBandwidthModel, alpha_beta: BusBandwidthModel, seed: int
) -> Evaluator:
    """The predictor a method plans with (the greedy heuristics are scored by srifty's)."""
    if method == "apm":
        return apm_evaluator(profiles, alpha_beta)
    if method == "paleo":
        from srifty.plan import paleo_evaluator

        return paleo_evaluator(profiles)
    return srifty_evaluator(profiles, net_model, seed)


def plan_method(
    method: str,
    problem: PlanProblem,
    profiles: Mapping[str, Profile],
    net_model: BusBandwidthModel,
    alpha_beta: BusBandwidthModel,
    seed: int,
) -> Plan:
    """Plan ``problem`` with ``method`` (one of :data:`PLAN_METHODS`)."""
    evaluator = evaluator_for(method, profiles, net_model, alpha_beta, seed)

    def latency(cand: Candidate, batch: int) -> float:
        return compute_latency_ms(profiles, cand, batch)

    if method == "srifty_all_batches":
        return make_plan(without_knee(problem), evaluator, latency, "srifty", "auto")
    return make_plan(problem, evaluator, latency, method, "auto")  # type: ignore[arg-type]


def without_knee(problem: PlanProblem) -> PlanProblem:
    """``problem`` with every power-of-two local batch up to each type's largest allowed (no knee floor)."""
    candidates = []
    for cand in problem.candidates:
        upper = min(cand.max_batch, problem.global_batch // cand.gpus)
        batches = powers_of_two(1, upper)
        candidates.append(replace(cand, batches=batches, knee_batch=1, pruned_note=f"ablation: 1..{upper}"))
    return replace(problem, candidates=tuple(candidates))
