"""Explaining a plan: for an infeasible job, which constraint binds, the closest configuration and what would
fix it; for a feasible one, why this configuration and this placement won, and by how much."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from srifty.plan.problem import PlanProblem
from srifty.plan.result import Infeasibility, Plan
from srifty.plan.scoring import Scored, preference
from srifty.units import usd_text
from srifty.vocab import Config

#: Sort key of a configuration in a plan's own ranking (smaller is better).
RankKey = Callable[[Scored], tuple[object, ...]]


def _at_quota(problems: Sequence[PlanProblem], s: Scored) -> list[str]:
    quotas = {(c.instance.name, c.instance.region, c.market): c.quota for p in problems for c in p.candidates}
    return [
        g.instance.name
        for g in s.config.groups
        if quotas.get((g.instance.name, g.instance.region, g.market)) == g.count
    ]


def explain(problems: PlanProblem | Sequence[PlanProblem], scored: Sequence[Scored]) -> Infeasibility:
    """Why nothing in ``scored`` meets the constraints (``scored`` may be empty); ``problems`` are the
    placements searched."""
    batch = (problems,) if isinstance(problems, PlanProblem) else tuple(problems)
    if not batch:
        return Infeasibility("quota", "nothing is left to rent: every instance type was pruned or filtered out.", None)
    problem = batch[0]
    if not scored:
        return _no_assignment(batch)
    deadline, budget, level = problem.deadline_s, problem.budget_usd, problem.confidence
    on_time = [s for s in scored if "deadline" not in s.violations]
    in_budget = [s for s in scored if "budget" not in s.violations]
    if deadline is not None and not on_time:
        likeliest = max(scored, key=lambda s: (round(s.p_meet_deadline or 0.0, 3), -s.time_s))
        quota_hint = ", ".join(f"the {name} quota" for name in dict.fromkeys(_at_quota(batch, likeliest)))
        raise_what = f"raise the deadline or {quota_hint}" if quota_hint else "raise the deadline"
        return Infeasibility(
            "deadline",
            f"P(deadline) binds: the configuration likeliest to finish in time ({likeliest.config}) does so with "
            f"probability {_p_below(likeliest.p_meet_deadline, level)} < confidence {level:g} (expected "
            f"{likeliest.time_s:.0f} s{_p95(likeliest, 'time')} against a deadline of {deadline:.0f} s, of which "
            f"{problem.overhead_s:.0f} s is launch and restore overhead); {raise_what}, or lower `confidence`.",
            likeliest,
        )
    if budget is not None and not in_budget:
        likeliest = max(scored, key=lambda s: (round(s.p_meet_budget or 0.0, 3), -s.cost_usd))
        return Infeasibility(
            "budget",
            f"P(budget) binds: the configuration likeliest to stay within the budget ({likeliest.config}) does "
            f"so with probability {_p_below(likeliest.p_meet_budget, level)} < confidence {level:g} (expected "
            f"{usd_text(likeliest.cost_usd)}{_p95(likeliest, 'cost')} against a budget of {usd_text(budget)}); raise "
            f"the budget to at least {usd_text(_p95_value(likeliest, 'cost'))}, or lower `confidence`.",
            likeliest,
        )
    # Some meet the deadline, some the budget, none both (each judged on its probability when it has one).
    best_on_time = min(on_time, key=lambda s: s.cost_usd)
    best_in_budget = min(in_budget, key=lambda s: s.time_s)
    return Infeasibility(
        "deadline and budget",
        f"no configuration meets both: the cheapest one within the deadline ({best_on_time.config}) costs "
        f"{_over_budget(best_on_time, budget, level)}, and the fastest one within the budget "
        f"({best_in_budget.config}) {_over_deadline(best_in_budget, deadline, level)}; raise the budget to "
        f"{usd_text(_p95_value(best_on_time, 'cost'))} or the deadline to "
        f"{_p95_value(best_in_budget, 'time'):.0f} s.",
        best_on_time,
    )


def _over_budget(s: Scored, budget: float | None, level: float) -> str:
    """Why ``s`` breaks the budget: its expected cost above it, or its chance of staying within it too low."""
    if s.risk is None or s.p_meet_budget is None or (budget is not None and s.cost_usd > budget):
        return f"{usd_text(s.cost_usd)} > budget {usd_text(budget or 0.0)}"
    return (
        f"{usd_text(s.cost_usd)} expected, p95 {usd_text(s.risk.cost_p95_usd)}: within the budget of "
        f"{usd_text(budget or 0.0)} with probability {_p_below(s.p_meet_budget, level)} < confidence {level:g}"
    )


def _over_deadline(s: Scored, deadline: float | None, level: float) -> str:
    """Why ``s`` misses the deadline: its expected time beyond it, or its chance of meeting it too low."""
    if s.risk is None or s.p_meet_deadline is None or (deadline is not None and s.time_s > deadline):
        return f"takes {s.time_s:.0f} s > deadline {deadline or 0.0:.0f} s"
    return (
        f"takes {s.time_s:.0f} s expected, p95 {s.risk.time_p95_s:,.0f} s: by the deadline of {deadline or 0.0:.0f} s "
        f"with probability {_p_below(s.p_meet_deadline, level)} < confidence {level:g}"
    )


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _p_below(value: float | None, bound: float) -> str:
    """A probability known to be below ``bound``, with as many decimals (3 to 6) as it takes to read so."""
    if value is None:
        return _p(value)
    for decimals in range(3, 7):
        text = f"{value:.{decimals}f}"
        if float(text) < bound:
            return text
    return f"{value:.6f}"


def _p95_value(s: Scored, what: str) -> float:
    if s.risk is None:
        return s.time_s if what == "time" else s.cost_usd
    return s.risk.time_p95_s if what == "time" else s.risk.cost_p95_usd


def _p95(s: Scored, what: str) -> str:
    if s.risk is None:
        return ""
    value = _p95_value(s, what)
    return f", p95 {value:,.0f} s" if what == "time" else f", p95 {usd_text(value)}"


def capacity(problem: PlanProblem) -> int:
    """Samples per iteration ``problem`` holds with every quota full, each type at its largest batch."""
    return sum(c.quota * c.gpus * c.batches[-1] for c in problem.candidates if c.batches)


def _no_assignment(problems: Sequence[PlanProblem]) -> Infeasibility:
    problem = max(problems, key=capacity)
    most = capacity(problem)
    if most < problem.global_batch:
        memory_bound = sorted({c.instance.name for p in problems for c in p.candidates if c.max_batch < p.global_batch})
        why = f" (largest batch per GPU that fits in memory: {', '.join(memory_bound)} limited)" if memory_bound else ""
        where = (
            f" in any one placement (most: {problem.placement.label})"
            if len(problems) > 1 and problem.placement
            else ""
        )
        return Infeasibility(
            "quota",
            f"at most {most} samples fit per iteration{where} with every quota full at its largest batch{why}, "
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


def _gap(goal: str, s: Scored, best: Scored) -> str:
    """How ``s`` compares with ``best`` on the goal, ``"+12.0% cost ($1.20 vs $1.07)"``, and on the other
    quantity when the goal's is a tie."""
    cost = f"{_change(s.cost_usd, best.cost_usd)} cost ({usd_text(s.cost_usd)} vs {usd_text(best.cost_usd)})"
    time = f"{_change(s.time_s, best.time_s)} time ({s.time_s:,.0f} s vs {best.time_s:,.0f} s)"
    first, second = (cost, time) if goal == "min_cost" else (time, cost)
    mine, theirs = (s.cost_usd, best.cost_usd) if goal == "min_cost" else (s.time_s, best.time_s)
    return f"{first}, {second}" if abs(mine - theirs) <= 5e-4 * abs(theirs) else first


def _pct(value: float, base: float) -> str:
    return f"{100.0 * (value - base) / base:.1f}%" if base > 0 else "n/a"


def _change(value: float, base: float) -> str:
    """``"+12.0%"`` or ``"-2.5%"``."""
    return f"{100.0 * (value - base) / base:+.1f}%" if base > 0 else "n/a"


def per_type_cheapest_usd_per_hour(config: Config) -> float:
    """What ``config`` would cost per hour if each spot type were priced at its own cheapest zone (the pricing
    srifty used before placements; no single zone offers that price when the cheapest zones differ)."""
    return sum(g.price_usd_per_hour(None) for g in config.groups)


def count_text(n: int) -> str:
    """A configuration count for people: exact with thousands separators below a billion, else ``1.234e+56``."""
    return f"{n:,}" if n < 1_000_000_000 else f"{n:.3e}"


def _ranking(plan: Plan) -> tuple[Callable[[Scored], str], RankKey]:
    """How the plan's choice was ranked: the goal a configuration is compared on, and a sort key. That is the
    plan's goal, or with a time tolerance, cost among configurations within it of the fastest (time beyond)."""
    goal = plan.problem.goal
    fastest = plan.fastest or plan.best
    if not plan.time_tolerance or fastest is None:
        return (lambda _: goal), (lambda s: preference(goal, s))
    limit = fastest.time_s * (1.0 + plan.time_tolerance)

    def goal_of(s: Scored) -> str:
        return "min_cost" if s.time_s <= limit else "min_time"

    def key(s: Scored) -> tuple[object, ...]:
        within = s.time_s <= limit
        return (not within, s.cost_usd if within else s.time_s, *preference("min_time", s))

    return goal_of, key


def tolerance_line(plan: Plan) -> str | None:
    """What the time tolerance chose against the fastest configuration found, or ``None``."""
    best, fastest, tolerance = plan.best, plan.fastest, plan.time_tolerance
    if tolerance is None or best is None:
        return None
    limit = (fastest or best).time_s * (1.0 + tolerance)
    head = f"Time tolerance {100 * tolerance:g}% (`time_tolerance`; 0 asks for the fastest): "
    if fastest is None:
        return head + f"the fastest configuration found is also the cheapest within {limit:,.1f} s."
    return (
        head
        + f"the fastest found, {fastest.config.tagged()} ({fastest.config.where()}), takes {fastest.time_s:,.1f} s "
        f"for {usd_text(fastest.cost_usd)}; the cheapest within {limit:,.1f} s takes {best.time_s:,.1f} s for "
        f"{usd_text(best.cost_usd)} ({_change(best.cost_usd, fastest.cost_usd)} cost, "
        f"{_change(best.time_s, fastest.time_s)} time)."
    )


def explain_choice(plan: Plan) -> list[str]:
    """Why the plan chose what it chose, in sentences: how much was searched and pruned, which region (and
    cloud, and zone) won and by how much, and what pricing each type at its own cheapest zone would claim."""
    lines: list[str] = []
    pruning = plan.pruning
    goal_of, rank = _ranking(plan)
    skipped = [o for o in plan.placements if o.mode == "skipped"]
    if pruning is not None:
        dominated = len(pruning.placements)
        lines.append(
            f"Offers (instance type × market × region): {pruning.n_offers_before} considered, "
            f"{pruning.n_offers_after} left after pruning ({len(pruning.types)} pruned; --show-pruned says why). "
            f"Configurations: {count_text(pruning.space_before)} before pruning, "
            f"{count_text(pruning.space_after)} after."
        )
        lines.append(
            f"Placements: {len(plan.placements) - len(skipped)} searched, {len(skipped)} skipped by bound, "
            f"{dominated} dropped (dominated or emptied by pruning)."
        )
    best = plan.best
    if best is None or not best.feasible:
        return lines
    where = best.config.where()
    spot = " (spot VMs in one zone)" if best.config.zone else " (on-demand, any zone of the region)"
    lines.append(f"Chosen: {best.config.tagged()} in {where}{spot}.")
    tolerance = tolerance_line(plan)
    if tolerance is not None:
        lines.append(tolerance)
    mine = f"{best.config.cloud} {best.config.region}"
    by_area: dict[str, Scored] = {}
    by_zone: dict[str, Scored] = {}
    for s in plan.evaluated:
        if not s.feasible:
            continue
        area = f"{s.config.cloud} {s.config.region}"
        if area not in by_area or rank(s) < rank(by_area[area]):
            by_area[area] = s
        place = s.config.where()
        if area == mine and place != where and (place not in by_zone or rank(s) < rank(by_zone[place])):
            by_zone[place] = s
    for area, other in sorted(by_area.items()):
        if area == mine:
            continue
        scope = "" if all(g.instance.price_covers_host_vm for g in other.config.groups) else " (GPU-only price)"
        lines.append(
            f"Best found in {area}: {other.config.tagged()} ({other.config.where()}), "
            f"{_gap(goal_of(other), other, best)}{scope}."
        )
    if by_zone:
        place, other = min(by_zone.items(), key=lambda kv: rank(kv[1]))
        gap = _gap(goal_of(other), other, best)
        lines.append(f"Next best placement in {mine}: {place}, {other.config.tagged()}, {gap}.")
    if pruning is not None and pruning.incumbent is not None and pruning.incumbent.config.key != best.config.key:
        inc = pruning.incumbent
        lines.append(
            f"Best single-type configuration: {inc.config.tagged()} ({inc.config.where()}), "
            f"{_gap(goal_of(inc), inc, best)}."
        )
    old = per_type_cheapest_usd_per_hour(best.config)
    new = best.config.price_usd_per_hour()
    if abs(old - new) > 1e-9:
        lines.append(
            f"Pricing each type at its own cheapest zone would claim {usd_text(old)}/h instead of {usd_text(new)}/h "
            f"({_pct(old, new)}); no single zone offers that."
        )
    if not all(g.instance.price_covers_host_vm for g in best.config.groups):
        lines.append("Its price covers only the GPU attachment (GCP): the n1 host VM is not included.")
    return lines
