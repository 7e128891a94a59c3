"""Explaining an infeasible job: which constraint binds, the closest configuration, and what would fix it."""

from __future__ import annotations

from collections.abc import Sequence

from srifty.plan.problem import PlanProblem
from srifty.plan.result import Infeasibility
from srifty.plan.scoring import Scored


def _at_quota(problem: PlanProblem, s: Scored) -> list[str]:
    quotas = {(c.instance.name, c.market): c.quota for c in problem.candidates}
    return [g.instance.name for g in s.config.groups if quotas.get((g.instance.name, g.market)) == g.count]


def explain(problem: PlanProblem, scored: Sequence[Scored]) -> Infeasibility:
    """Why nothing in ``scored`` meets the constraints (``scored`` may be empty)."""
    if not scored:
        return _no_assignment(problem)
    fastest = min(scored, key=lambda s: (s.time_s, s.cost_usd))
    cheapest = min(scored, key=lambda s: (s.cost_usd, s.time_s))
    deadline, budget = problem.deadline_s, problem.budget_usd
    on_time = [s for s in scored if "deadline" not in s.violations]
    in_budget = [s for s in scored if "budget" not in s.violations]
    if deadline is not None and not on_time:
        quota_hint = ", ".join(f"the {name} quota" for name in _at_quota(problem, fastest))
        raise_what = f"raise the deadline or {quota_hint}" if quota_hint else "raise the deadline"
        return Infeasibility(
            "deadline",
            f"the fastest configuration ({fastest.config}) finishes in {fastest.time_s:.0f} s > deadline "
            f"{deadline:.0f} s (of which {problem.overhead_s:.0f} s is launch and restore overhead); {raise_what}.",
            fastest,
        )
    if budget is not None and not in_budget:
        return Infeasibility(
            "budget",
            f"the cheapest configuration ({cheapest.config}) costs ${cheapest.cost_usd:.2f} > budget "
            f"${budget:.2f}; raise the budget to at least ${cheapest.cost_usd:.2f}.",
            cheapest,
        )
    # Some meet the deadline, some the budget, none both.
    best_on_time = min(on_time, key=lambda s: s.cost_usd)
    best_in_budget = min(in_budget, key=lambda s: s.time_s)
    return Infeasibility(
        "deadline and budget",
        f"no configuration meets both: the cheapest one within the deadline ({best_on_time.config}) costs "
        f"${best_on_time.cost_usd:.2f} > budget ${budget:.2f}, and the fastest one within the budget "
        f"({best_in_budget.config}) takes {best_in_budget.time_s:.0f} s > deadline {deadline:.0f} s; raise the "
        f"budget to ${best_on_time.cost_usd:.2f} or the deadline to {best_in_budget.time_s:.0f} s.",
        best_on_time,
    )


def _no_assignment(problem: PlanProblem) -> Infeasibility:
    usable = [c for c in problem.candidates if c.batches]
    capacity = sum(c.quota * c.gpus * c.batches[-1] for c in usable)
    if capacity < problem.global_batch:
        memory_bound = [c.instance.name for c in problem.candidates if c.max_batch < problem.global_batch]
        why = f" (largest batch per GPU that fits in memory: {', '.join(memory_bound)} limited)" if memory_bound else ""
        return Infeasibility(
            "quota",
            f"at most {capacity} samples fit per iteration with every quota full at its largest batch{why}, "
            f"but global_batch is {problem.global_batch}; raise the quotas or lower global_batch.",
            None,
        )
    return Infeasibility(
        "batch",
        f"no combination of VM counts and power-of-two local batches adds up to exactly global_batch = "
        f"{problem.global_batch}; use a global batch that is a multiple of a power of two (e.g. "
        f"{1 << (problem.global_batch.bit_length() - 1)}).",
        None,
    )
