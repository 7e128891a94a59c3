"""Run a method's search (srifty's, or a baseline's) over every placement and assemble the
:class:`~srifty.plan.result.Plan`.

A configuration lives in one placement (a zone, or a region for on-demand VMs only), so the search runs once
per placement, all of them sharing one predictor (a configuration is predicted once, whatever its zone).
Placements are searched in order of a lower bound on their objective, and one whose bound is already worse
than the best feasible configuration found is skipped (branch and bound over placements).

Prices that cover only a GPU attachment (the bundled GCP rows) are not compared with full-VM prices: where
both kinds are present, configurations priced per GPU rank after every full-VM configuration, and the plan
says so.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence

from srifty.plan.explain import explain
from srifty.plan.methods.registry import Method, get_method
from srifty.plan.predict import MemoPredictor, Predictor
from srifty.plan.problem import Placement, PlanProblem
from srifty.plan.prune import Pruning
from srifty.plan.result import Infeasibility, PlacementOutcome, Plan, pareto_front
from srifty.plan.scoring import Scored, best_of, objective, preference, score
from srifty.plan.solvers import DEFAULT_MAX_SIM_CALLS, AnchorSweep, LatencyFn, Mode, optimize, warm
from srifty.plan.space import count_configs
from srifty.units import usd_text


def full_vm_price(s: Scored) -> bool:
    """Whether a configuration's price covers whole VMs (``False`` for GPU-attachment prices)."""
    return all(g.instance.price_covers_host_vm for g in s.config.groups)


def runnable(s: Scored) -> bool:
    """Whether a configuration fits its GPUs' memory (the Pareto front ignores deadline and budget, not memory)."""
    return "memory" not in s.violations


def _order_key(goal: str, s: Scored, scopes_mixed: bool) -> tuple[object, ...]:
    return (scopes_mixed and not full_vm_price(s), *preference(goal, s))


def make_plan(
    problems: PlanProblem | Sequence[PlanProblem],
    predictor: Predictor,
    latency_ms: LatencyFn,
    method: str | Method = "srifty",
    mode: Mode = "auto",
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
    top_k: int = 5,
    pruning: Pruning | None = None,
) -> Plan:
    """Plan with ``method`` (a name in :data:`~srifty.plan.methods.METHODS`, or its entry): its search over
    each problem (one per placement) with ``predictor``. A method that ignores the constraints (the greedy
    heuristics) reports its configuration even when it violates them.

    Args:
        latency_ms: compute latency (ms) of one GPU of a candidate at a batch, for anchoring and FGF.
        pruning: what pruning kept (``problems`` should be its ``problems``); its homogeneous study joins the
            search, and its lower bounds let placements that cannot win be skipped.

    Raises:
        SpecError: an unknown method, or one that measures on a ground truth instead of planning.
    """
    batch = (problems,) if isinstance(problems, PlanProblem) else tuple(problems)
    if not batch:
        raise ValueError("make_plan needs at least one problem (see nothing_left for a plan without one)")
    entry = get_method(method) if isinstance(method, str) else method
    search = entry.require_planning()
    started = time.perf_counter()
    memo = predictor if isinstance(predictor, MemoPredictor) else MemoPredictor(predictor)
    goal = batch[0].goal
    pool: dict[tuple[str, str, str, str | None], Scored] = {}
    if pruning is not None and entry.honours_constraints:
        pool.update((s.config.key, s) for s in pruning.study)
    bounds: Mapping[Placement, float] = pruning.lower_bounds if pruning is not None else {}
    order = sorted(range(len(batch)), key=lambda i: (_bound(bounds, batch[i]), i))
    swept: dict[int, AnchorSweep] = {}
    if search is optimize:  # srifty's optimizer: every placement's first network questions in one call
        swept = warm(batch, memo, latency_ms, mode, max_sim_calls)
    outcomes: dict[int, PlacementOutcome] = {}
    modes: set[str] = set()
    n_ilp = 0
    space = 0
    for i in order:
        problem = batch[i]
        skip = _skip_reason(goal, problem, bounds, list(pool.values())) if entry.honours_constraints else None
        if skip is not None:
            outcomes[i] = PlacementOutcome(problem.placement, "skipped", count_configs(problem), 0, None, skip)
            continue
        if i in swept:  # srifty's optimizer, whose anchor sweep warm() already computed
            found = optimize(problem, memo, latency_ms, mode, max_sim_calls, anchors=swept[i])
        else:
            found = search(problem, memo, latency_ms, mode, max_sim_calls)
        pool.update((s.config.key, s) for s in found.scored)
        modes.add(found.mode)
        n_ilp += found.n_ilp_solved
        space += found.space_size
        outcomes[i] = PlacementOutcome(problem.placement, found.mode, found.space_size, len(found.scored), None)
    if pruning is not None and entry.honours_constraints:
        _price_everywhere(pool, pruning.original or batch, memo)
    scored = list(pool.values())
    mixed = len({full_vm_price(s) for s in scored}) > 1
    if entry.draws:
        ranked = list(scored)  # random draws: the first draw stands for the method (an evaluation takes the median)
    elif entry.honours_constraints:
        ranked = sorted((s for s in scored if s.feasible), key=lambda s: _order_key(goal, s, mixed))
    else:
        ranked = sorted(scored, key=lambda s: (mixed and not full_vm_price(s), *objective(goal, s)))
    elapsed = time.perf_counter() - started
    best = ranked[0] if ranked else None
    feasible_best = best if best is not None and best.feasible else None
    alternatives = _distinct(ranked[1:], best)[:top_k]
    notes: list[str] = []
    if best is not None and not best.feasible:
        notes.append(f"{entry.name} ignores constraints; its configuration violates: {', '.join(best.violations)}")
    if mixed:
        notes.append(
            "some prices cover only the GPU attachment (GCP: the n1 host VM is not included); those configurations "
            "are ranked after every configuration priced per whole VM, never against them"
        )
    placed = tuple(_with_best(goal, outcomes[i], scored) for i in range(len(batch)))
    return Plan(
        method=entry.name,
        mode=_mode_name(modes),
        problem=_problem_of(batch, best),
        best=feasible_best if entry.honours_constraints else best,
        alternatives=tuple(alternatives),
        pareto=tuple(pareto_front([s for s in scored if runnable(s) and (full_vm_price(s) or not mixed)])),
        n_evaluated=len(scored),
        search_space_size=space,
        n_ilp_solved=n_ilp,
        solve_time_s=elapsed,
        # A method that ignores the constraints may show an infeasible choice beside feasible ones it scored.
        infeasibility=None if feasible_best is not None or any(x.feasible for x in scored) else explain(batch, scored),
        notes=tuple(notes),
        evaluated=tuple(scored),
        placements=placed,
        pruning=pruning,
        n_predicted=memo.n_predicted,
    )


def _price_everywhere(
    pool: dict[tuple[str, str, str, str | None], Scored], problems: Sequence[PlanProblem], predictor: Predictor
) -> None:
    """Add every zoned configuration found, placed in every other zone of its region that offers all of its
    groups (its prediction is the same there; only its price differs), so each is judged in its best zone."""
    offered: dict[tuple[str, str], list[tuple[PlanProblem, dict[str, float]]]] = {}
    for problem in problems:
        where = problem.placement
        if where is not None and where.zone is not None:
            prices = {c.key: c.price_usd_per_hour for c in problem.candidates}
            offered.setdefault((where.cloud, where.region), []).append((problem, prices))
    for s in list(pool.values()):
        config = s.config
        if config.zone is None:
            continue
        keys = [f"{g.instance.name}/{g.market}" for g in config.groups]
        for problem, prices in offered.get((config.cloud, config.region), []):
            assert problem.placement is not None
            zone = problem.placement.zone
            if zone == config.zone or not all(k in prices for k in keys):
                continue
            moved = dataclasses.replace(config, zone=zone)
            if moved.key not in pool:
                pool[moved.key] = score(problem, moved, predictor.predict(moved))


def cheapest_within(
    fast: Plan, cheap: Plan | None, problems: Sequence[PlanProblem], tolerance: float, top_k: int = 5
) -> Plan:
    """``goal: min_time`` with a time tolerance: the cheapest feasible configuration whose job time is within
    ``tolerance`` (a fraction) of the fastest one's, from both searches.

    Args:
        fast: the min-time plan; its best sets the limit ``time · (1 + tolerance)``.
        cheap: a min-cost search of ``problems`` under that limit as a deadline (``None`` when pruning left
            nothing); its configurations are scored again against ``problems`` (the user's own constraints).
        problems: the job's problems, one per placement, with the user's goal and constraints.
    """
    fastest = fast.best
    if fastest is None or not fastest.feasible:
        return fast
    limit = fastest.time_s * (1.0 + tolerance)
    by_place = {_where(p.placement): p for p in problems if p.placement is not None}
    pool = {s.config.key: s for s in fast.evaluated}
    for s in cheap.evaluated if cheap is not None else ():
        problem = by_place.get(_placement_of(s))
        if s.config.key not in pool and problem is not None:
            pool[s.config.key] = score(problem, s.config, s.estimate)
    scored = list(pool.values())
    mixed = len({full_vm_price(s) for s in scored}) > 1

    def key(s: Scored) -> tuple[object, ...]:
        within = s.time_s <= limit
        first = s.cost_usd if within else s.time_s
        return (mixed and not full_vm_price(s), not within, first, *preference("min_time", s))

    ranked = sorted((s for s in scored if s.feasible), key=key)
    best = ranked[0]
    return dataclasses.replace(
        fast,
        problem=_problem_of(problems, best),
        best=best,
        alternatives=tuple(_distinct(ranked[1:], best)[:top_k]),
        pareto=tuple(pareto_front([s for s in scored if full_vm_price(s)] if mixed else scored)),
        n_evaluated=len(scored),
        evaluated=tuple(scored),
        n_predicted=cheap.n_predicted if cheap is not None else fast.n_predicted,
        time_tolerance=tolerance,
        fastest=None if best.config.key == fastest.config.key else fastest,
    )


def nothing_left(problems: Sequence[PlanProblem], pruning: Pruning, method: str) -> Plan:
    """The plan when pruning left nothing to search: every type misses the deadline or budget on its bound, or
    no configuration places the global batch; the homogeneous study shows the closest configurations."""
    study = list(pruning.study)
    rules = {t.rule for t in pruning.types}
    infeasibility = explain(problems, study)
    for rule in ("deadline", "budget"):
        hits = [t for t in pruning.types if t.rule == rule and t.bound is not None]
        if rule in rules and hits and infeasibility.binding_constraint not in ("deadline", "budget"):
            best = min(hits, key=lambda t: t.bound or math.inf)
            infeasibility = Infeasibility(
                rule,
                f"every instance type misses the {rule} on its own bound; the closest is {best.key}: {best.reason}",
                None,
            )
    return Plan(
        method=method,
        mode="none",
        problem=problems[0],
        best=None,
        alternatives=(),
        pareto=tuple(pareto_front([s for s in study if runnable(s)])),
        n_evaluated=len(study),
        search_space_size=0,
        n_ilp_solved=0,
        solve_time_s=0.0,
        infeasibility=infeasibility,
        notes=("pruning left nothing to search",),
        evaluated=tuple(study),
        pruning=pruning,
        n_predicted=len(study),
    )


def _distinct(ranked: Sequence[Scored], best: Scored | None) -> list[Scored]:
    """Each configuration once (in its best placement), without the chosen one: a configuration priced in
    several zones is one alternative, not several."""
    seen = {best.config.tagged()} if best is not None else set()
    out = []
    for s in ranked:
        if s.config.tagged() not in seen:
            seen.add(s.config.tagged())
            out.append(s)
    return out


def _bound(bounds: Mapping[Placement, float], problem: PlanProblem) -> float:
    return float(bounds.get(problem.placement, -math.inf)) if problem.placement is not None else -math.inf


def _skip_reason(
    goal: str, problem: PlanProblem, bounds: Mapping[Placement, float], pool: Sequence[Scored]
) -> str | None:
    """Why ``problem`` need not be searched (its bound already loses to a feasible configuration of the same
    price scope), or ``None``."""
    bound = _bound(bounds, problem)
    if not math.isfinite(bound) or problem.placement is None:
        return None
    scope = problem.placement.price_covers_host_vm
    same = [s for s in pool if full_vm_price(s) == scope]
    incumbent = best_of(goal, same)
    if incumbent is None:
        return None
    value = objective(goal, incumbent)[0]
    if bound <= value:
        return None
    unit = (lambda v: f"{v:,.0f} s") if goal == "min_time" else usd_text
    return f"nothing here can beat {unit(value)} ({incumbent.config}, {incumbent.config.where()}): bound {unit(bound)}"


def _with_best(goal: str, outcome: PlacementOutcome, scored: Sequence[Scored]) -> PlacementOutcome:
    """The outcome with the best feasible configuration found in its placement (from any search step)."""
    if outcome.placement is None:
        return outcome
    here = [s for s in scored if _placement_of(s) == _where(outcome.placement)]
    best = best_of(goal, here)
    return PlacementOutcome(
        outcome.placement, outcome.mode, outcome.space_size, outcome.n_evaluated, best, outcome.note, len(here)
    )


def _where(placement: Placement) -> tuple[str, str, str | None]:
    return (placement.cloud, placement.region, placement.zone)


def _placement_of(s: Scored) -> tuple[str, str, str | None]:
    return (s.config.cloud, s.config.region, s.config.zone)


def _problem_of(problems: Sequence[PlanProblem], best: Scored | None) -> PlanProblem:
    """The problem the chosen configuration came from (the first, without one)."""
    if best is not None:
        for problem in problems:
            if problem.placement is not None and _where(problem.placement) == _placement_of(best):
                return problem
    return problems[0]


def _mode_name(modes: set[str]) -> str:
    if not modes:
        return "none"
    return "+".join(sorted(modes))
