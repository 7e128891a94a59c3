"""Run a method's search (srifty's, or a baseline's) and assemble the :class:`~srifty.plan.result.Plan`."""

from __future__ import annotations

import time

from srifty.plan.explain import explain
from srifty.plan.methods.registry import Method, get_method
from srifty.plan.predict import Predictor
from srifty.plan.problem import PlanProblem
from srifty.plan.result import Plan, pareto_front, rank
from srifty.plan.solvers import DEFAULT_MAX_SIM_CALLS, LatencyFn, Mode


def make_plan(
    problem: PlanProblem,
    predictor: Predictor,
    latency_ms: LatencyFn,
    method: str | Method = "srifty",
    mode: Mode = "auto",
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
    top_k: int = 5,
) -> Plan:
    """Plan with ``method`` (a name in :data:`~srifty.plan.methods.METHODS`, or its entry): its search over
    ``problem`` with ``predictor``. A method that ignores the constraints (the greedy heuristics) reports its
    configuration even when it violates them.

    Args:
        latency_ms: compute latency (ms) of one GPU of a candidate at a batch, for anchoring and FGF.

    Raises:
        SpecError: an unknown method, or one that measures on a ground truth instead of planning.
    """
    entry = get_method(method) if isinstance(method, str) else method
    search = entry.require_planning()
    started = time.perf_counter()
    found = search(problem, predictor, latency_ms, mode, max_sim_calls)
    scored = found.scored
    ranked = rank(problem, scored) if entry.honours_constraints else sorted(scored, key=lambda s: s.time_s)
    elapsed = time.perf_counter() - started
    best = ranked[0] if ranked else None
    feasible_best = best if best is not None and best.feasible else None
    notes: tuple[str, ...] = ()
    if best is not None and not best.feasible:
        notes = (f"{entry.name} ignores constraints; its configuration violates: {', '.join(best.violations)}",)
    return Plan(
        method=entry.name,
        mode=found.mode,
        problem=problem,
        best=feasible_best if entry.honours_constraints else best,
        alternatives=tuple(ranked[1 : 1 + top_k]),
        pareto=tuple(pareto_front(scored)),
        n_evaluated=len(scored),
        search_space_size=found.space_size,
        n_ilp_solved=found.n_ilp_solved,
        solve_time_s=elapsed,
        infeasibility=None if feasible_best is not None else explain(problem, scored),
        notes=notes,
        evaluated=tuple(scored),
    )
