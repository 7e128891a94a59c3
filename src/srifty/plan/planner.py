"""Run a search (srifty's, or a baseline's) and assemble the :class:`~srifty.plan.result.Plan`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from srifty.plan import baselines, solvers
from srifty.plan.evaluate import Evaluator, Scored
from srifty.plan.explain import explain
from srifty.plan.problem import Candidate, PlanProblem
from srifty.plan.result import Plan, pareto_front, rank
from srifty.plan.space import count_configs

Mode = Literal["auto", "exhaustive", "ilp"]
Method = Literal["srifty", "apm", "cgf", "fgf", "paleo"]
DEFAULT_MAX_SIM_CALLS = 10_000

LatencyFn = Callable[[Candidate, int], float]


def search(
    problem: PlanProblem,
    evaluator: Evaluator,
    latency_ms: LatencyFn,
    mode: Mode = "auto",
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
) -> tuple[list[Scored], str, int, int]:
    """Evaluate the pruned space exhaustively when it is small enough, else by anchor + ILP.

    Returns ``(scored, mode used, search space size, integer programs solved)``.
    """
    size = count_configs(problem)
    use = mode if mode != "auto" else ("exhaustive" if size <= max_sim_calls else "ilp")
    if use == "exhaustive":
        return solvers.exhaustive(problem, evaluator), "exhaustive", size, 0
    scored, n_ilp = solvers.anchor_ilp(problem, evaluator, latency_ms)
    return scored, "ilp", size, n_ilp


def make_plan(
    problem: PlanProblem,
    evaluator: Evaluator,
    latency_ms: LatencyFn,
    method: Method = "srifty",
    mode: Mode = "auto",
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
    top_k: int = 5,
) -> Plan:
    """Plan with ``method``: ``srifty``/``apm``/``paleo`` search with their evaluator; ``cgf``/``fgf`` are
    greedy heuristics whose single configuration is then scored by ``evaluator``.

    Args:
        latency_ms: compute latency (ms) of one GPU of a candidate at a batch, for anchoring and FGF.
    """
    started = time.perf_counter()
    n_ilp = 0
    if method in ("cgf", "fgf"):
        size = count_configs(problem)
        config = (
            baselines.cgf(problem)
            if method == "cgf"
            else baselines.fgf(problem, lambda c, b: b / max(latency_ms(c, b), 1e-12))
        )
        scored = solvers.single(problem, evaluator, config)
        used_mode = "heuristic"
        # The heuristics ignore the constraints; their configuration is reported even when it violates them.
        ranked = sorted(scored, key=lambda s: s.time_s)
    else:
        scored, used_mode, size, n_ilp = search(problem, evaluator, latency_ms, mode, max_sim_calls)
        ranked = rank(problem, scored)
    elapsed = time.perf_counter() - started
    best = ranked[0] if ranked else None
    feasible_best = best if best is not None and best.feasible else None
    notes: tuple[str, ...] = ()
    if best is not None and not best.feasible:
        notes = (f"{method} ignores constraints; its configuration violates: {', '.join(best.violations)}",)
    return Plan(
        method=method,
        mode=used_mode,
        problem=problem,
        best=best if method in ("cgf", "fgf") else feasible_best,
        alternatives=tuple(ranked[1 : 1 + top_k]),
        pareto=tuple(pareto_front(scored)),
        n_evaluated=len(scored),
        search_space_size=size,
        n_ilp_solved=n_ilp,
        solve_time_s=elapsed,
        infeasibility=None if feasible_best is not None else explain(problem, scored),
        notes=notes,
        evaluated=tuple(scored),
    )
