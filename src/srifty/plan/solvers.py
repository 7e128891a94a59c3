"""The two search modes over the pruned space: exhaustive, and the paper's anchor + ILP approximation.

Both take the problem and a :class:`~srifty.plan.predict.Predictor` and return every configuration they
predicted, scored; the planner picks from those. :func:`optimize` chooses between them.

**Anchor + ILP** (paper, "Hybrid Solving Strategy"). Iteration time is set by the slowest VM, so good
configurations balance compute latency across types. For each *anchor* batch of the slowest type, its
compute latency ``L`` is the target; every type gets the largest allowed batch whose compute latency is at
most ``L`` (binary search on its latency model). Beyond the paper, every type's allowed batches serve as
anchors too (see :func:`anchor_latencies_ms`). With batches fixed, counts solve an integer
program::

    minimise    Σ_i counts_i                    (the paper's proxy; also solved with Σ_i price_i·counts_i)
    subject to  Σ_i counts_i · gpus_i · batch_i = B_global
                0 ≤ counts_i ≤ quota_i,  counts_i integer
                Σ_i price_i · counts_i · T_L / 3600 ≤ budget      (T_L = N·L + overhead: compute only)

and anchors whose compute-only time ``T_L`` already misses the deadline are skipped. Without the budget row
each objective is a bounded knapsack, solved exactly by dynamic programming over samples
(:func:`min_weight_counts`; the fewest-VM one over classes of VMs that take the same number of samples,
ties to the cheaper VMs), once per distinct batch assignment. The budget row is then checked: the cheapest
counts are the least any counts cost at those batches, so when they break it the anchor has no solution;
fewest-VM counts that break it give way to the cheapest. Each solution is then simulated, so the
linearisation only steers the search; constraints are checked on the simulated time.

When that leaves nothing (every anchor misses the deadline, or the budget admits no counts), the sweep
takes the anchors again from the fastest, without the deadline skip and the budget check, and scores the
first configuration found: the job is then infeasible for the deadline or the budget, and the explanation
must say so (as exhaustive search does), not that no counts place the global batch.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from srifty.plan.predict import Predictor
from srifty.plan.problem import Candidate, PlanProblem
from srifty.plan.scoring import Scored, score
from srifty.plan.space import config_of, count_configs, enumerate_configs
from srifty.vocab import Config

LatencyFn = Callable[[Candidate, int], float]
Mode = Literal["auto", "exhaustive", "ilp"]
DEFAULT_MAX_SIM_CALLS = 10_000
#: An anchor sweep's solutions (not yet predicted) and the number of integer programs it solved.
AnchorSweep = tuple[list[Config], int]


@dataclass(frozen=True)
class SearchOutcome:
    """What a search predicted and how.

    Attributes:
        scored: every configuration it predicted, scored.
        mode: ``"exhaustive"``, ``"ilp"`` or, for a heuristic, ``"heuristic"``.
        space_size: configurations in the (pruned) space.
        n_ilp_solved: integer programs solved (anchor + ILP).
    """

    scored: list[Scored]
    mode: str
    space_size: int
    n_ilp_solved: int = 0


def optimize(
    problem: PlanProblem,
    predictor: Predictor,
    latency_ms: LatencyFn,
    mode: Mode = "auto",
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
    anchors: AnchorSweep | None = None,
) -> SearchOutcome:
    """srifty's search: the pruned space exhaustively when it is small enough, else anchor + ILP.

    Args:
        latency_ms: compute latency (ms) of one GPU of a candidate at a local batch, for anchoring.
        anchors: this problem's anchor sweep (:func:`anchor_configs`), where :func:`warm` already computed it.
    """
    size = count_configs(problem)
    if size == 0:  # nothing places the global batch: the explanation says why, without searching
        return SearchOutcome([], "exhaustive" if mode == "auto" else mode, 0)
    use = _mode_for(size, mode, max_sim_calls)
    if use == "exhaustive":
        bounded = latency_ms if getattr(predictor, "name", "") == "srifty" else None
        return SearchOutcome(exhaustive(problem, predictor, bounded), "exhaustive", size)
    scored, n_ilp = anchor_ilp(problem, predictor, latency_ms, anchors)
    return SearchOutcome(scored, "ilp", size, n_ilp)


def _mode_for(size: int, mode: Mode, max_sim_calls: int) -> str:
    """The search :func:`optimize` runs over a space of ``size`` configurations."""
    return mode if mode != "auto" else ("exhaustive" if size <= max_sim_calls else "ilp")


def warm(
    problems: Sequence[PlanProblem],
    predictor: Predictor,
    latency_ms: LatencyFn,
    mode: Mode = "auto",
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
) -> dict[int, AnchorSweep]:
    """Ask the bandwidth model, in one call, the network questions :func:`optimize` asks first in each of
    ``problems`` (the anchor sweep's solutions; the exhaustive search's :data:`FIRST_ASKED` most promising
    configurations), instead of one call per placement: a call's fixed cost outweighs its size, and the zones
    of a region ask nearly the same questions. Answers are cached, so the searches predict exactly as without.

    Returns the anchor sweeps it computed, by index in ``problems``, for :func:`optimize` to take (``anchors``)
    instead of sweeping again; none without a predictor that prefetches."""
    prefetch = getattr(predictor, "prefetch", None)
    if prefetch is None:
        return {}
    asked: list[Config] = []
    sweeps: dict[int, AnchorSweep] = {}
    for i, problem in enumerate(problems):
        size = count_configs(problem)
        if size == 0:
            continue
        if _mode_for(size, mode, max_sim_calls) == "ilp":
            sweeps[i] = anchor_configs(problem, latency_ms)
            asked += sweeps[i][0]
        elif getattr(predictor, "name", "") == "srifty":
            configs, _, order = _front(problem, latency_ms)
            asked += [configs[j] for j in order[:FIRST_ASKED]]
    if asked:
        prefetch(asked)
    return sweeps


#: Feasible configurations the bounded exhaustive search keeps beating before it stops (the best and the
#: alternatives ``srifty plan`` shows).
KEEP_BEST = 6
#: Configurations whose network questions the bounded search asks first (the rest in a second call, if needed).
FIRST_ASKED = 64


def exhaustive(problem: PlanProblem, predictor: Predictor, latency_ms: LatencyFn | None = None) -> list[Scored]:
    """Evaluate the pruned space (network queries first, in batches, where the predictor can).

    With ``latency_ms`` (srifty's predictor, whose iteration time is never below the slowest group's compute
    latency), only the front is evaluated: configurations in order of a lower bound on the goal's expected
    value (``N·max_g t_c(b_g) + overhead`` seconds, times the price per second for cost; spot losses and model
    error only add to either), stopping once the bound passes the :data:`KEEP_BEST`-th best feasible value
    found. The optimum is the same as evaluating everything; configurations that could not be among the best
    are not predicted. Without it, every configuration is evaluated.
    """
    prefetch = getattr(predictor, "prefetch", None)
    if latency_ms is None:
        every = list(enumerate_configs(problem))
        if prefetch is not None:
            prefetch(every)
        return [score(problem, config, predictor.predict(config)) for config in every]
    configs, bounds, order = _front(problem, latency_ms)
    scored: list[Scored] = []
    best: list[float] = []
    for rank, i in enumerate(order):
        if len(best) >= KEEP_BEST and bounds[i] > best[KEEP_BEST - 1]:
            break
        if prefetch is not None and rank in (0, FIRST_ASKED):
            # the network questions of the most promising first, then of all the rest: at most two
            # bandwidth-model calls, whose fixed cost outweighs asking about a few too many
            prefetch([configs[j] for j in order[rank : FIRST_ASKED if rank == 0 else None]])
        s = score(problem, configs[i], predictor.predict(configs[i]))
        scored.append(s)
        if s.feasible:
            best = sorted([*best, s.time_s if problem.goal == "min_time" else s.cost_usd])[:KEEP_BEST]
    return scored


@functools.lru_cache(maxsize=16)
def _front(
    problem: PlanProblem, latency_ms: LatencyFn
) -> tuple[tuple[Config, ...], tuple[float, ...], tuple[int, ...]]:
    """Every configuration of ``problem``, its :func:`goal_bound`, and their order by it (remembered: :func:`warm`
    asks for the same front the search then walks)."""
    configs = tuple(enumerate_configs(problem))
    bounds = tuple(goal_bound(problem, config, latency_ms) for config in configs)
    return configs, bounds, tuple(sorted(range(len(configs)), key=lambda i: bounds[i]))


def goal_bound(problem: PlanProblem, config: Config, latency_ms: LatencyFn) -> float:
    """A lower bound on ``config``'s expected job time (``min_time``) or cost (``min_cost``): compute alone,
    the slowest group's latency, with nothing lost."""
    cands = {(c.instance.name, c.market): c for c in problem.candidates}
    slowest_ms = max(latency_ms(cands[(g.instance.name, g.market)], g.local_batch) for g in config.groups)
    time_s = problem.job_time_s(slowest_ms / 1000.0)
    if problem.goal == "min_time":
        return time_s
    return problem.cost_usd(problem.place(config).price_usd_per_hour(), time_s)


def _largest_batch_within(batches: Sequence[int], latencies: Sequence[float], target_ms: float) -> int | None:
    """Largest allowed batch whose compute latency is at most ``target_ms`` (binary search; latency models are
    non-decreasing in the batch, so ``latencies`` is sorted)."""
    index = bisect.bisect_right(latencies, target_ms * (1 + 1e-9))
    return batches[index - 1] if index > 0 else None


def min_weight_counts(
    sizes: Sequence[int], quotas: Sequence[int], weights: Sequence[float], total: int
) -> list[int] | None:
    """Exact integer counts minimising ``Σ weights·counts`` with ``Σ counts·sizes = total`` and
    ``0 ≤ counts ≤ quotas``: a bounded knapsack by dynamic programming over samples (in units of the sizes'
    greatest common divisor), each quota split into powers of two. ``None`` when no counts add up.

    Only the offers the program needs enter it (:func:`needed_offers`); the others get 0, and the answer is the
    same as with every offer in it, ties included: a catalog-wide placement poses dozens of offers, most of
    them never needed. Remembered twice: whole programs (a search poses one for many anchors, :func:`warm`
    before its search does, and a plan run again poses them all again), and the knapsack by the offers it needs
    (the zones of a region pose the same ones; the fewest-VM program does not depend on prices at all)."""
    found = _program_counts(tuple(sizes), tuple(quotas), tuple(float(w) for w in weights), total)
    return None if found is None else list(found)


@functools.lru_cache(maxsize=16384)
def _program_counts(
    sizes: tuple[int, ...], quotas: tuple[int, ...], weights: tuple[float, ...], total: int
) -> tuple[int, ...] | None:
    """:func:`min_weight_counts` of one program, every offer's count (a pure function of its arguments)."""
    kept = needed_offers(sizes, quotas, weights, total)
    found = _min_weight_counts(
        tuple(sizes[i] for i in kept), tuple(quotas[i] for i in kept), tuple(weights[i] for i in kept), total
    )
    if found is None:
        return None
    counts = [0] * len(sizes)
    for i, n in zip(kept, found, strict=True):
        counts[i] = n
    return tuple(counts)


@functools.lru_cache(maxsize=4096)
def _min_weight_counts(
    sizes: tuple[int, ...], quotas: tuple[int, ...], weights: tuple[float, ...], total: int
) -> tuple[int, ...] | None:
    unit = math.gcd(total, *sizes)
    steps = total // unit
    best = np.full(steps + 1, np.inf)
    best[0] = 0.0
    pieces: list[tuple[int, int, int, np.ndarray]] = []
    for i, (size, quota, weight) in enumerate(zip(sizes, quotas, weights, strict=True)):
        chunk, left = 1, quota
        while left > 0:
            m = min(chunk, left)
            left -= m
            chunk *= 2
            span = m * size // unit
            if span > steps:
                continue
            offered = best[: steps + 1 - span] + m * weight
            tail = best[span:]  # a view: updated in place
            take = offered < tail
            np.minimum(tail, offered, out=tail)
            pieces.append((i, m, span, take))
    if not np.isfinite(best[steps]):
        return None
    counts = [0] * len(sizes)
    at = steps
    for i, m, span, take in reversed(pieces):
        if at >= span and take[at - span]:
            counts[i] += m
            at -= span
    return tuple(counts)


def fewest_vms(cands: Sequence[Candidate], per_vm: Sequence[int], total: int) -> list[int] | None:
    """Counts placing ``total`` samples on the fewest VMs (``per_vm``: samples one VM of each takes), ties to the
    cheaper VMs: VMs that take the same number of samples are interchangeable for the count, so the knapsack
    runs over those classes and each class is filled cheapest first."""
    classes: dict[int, list[int]] = {}
    for i, size in enumerate(per_vm):
        classes.setdefault(size, []).append(i)
    sizes = sorted(classes)
    quotas = [sum(cands[i].quota for i in classes[size]) for size in sizes]
    totals = min_weight_counts(sizes, quotas, [1.0] * len(sizes), total)
    if totals is None:
        return None
    counts = [0] * len(cands)
    for size, n in zip(sizes, totals, strict=True):
        for i in sorted(classes[size], key=lambda i: (cands[i].price_usd_per_hour, cands[i].key)):
            counts[i] = min(n, cands[i].quota)
            n -= counts[i]
    return counts


def cheapest_counts(cands: Sequence[Candidate], per_vm: Sequence[int], total: int) -> list[int] | None:
    """Counts placing ``total`` samples at the lowest price per hour (``per_vm``: samples one VM of each takes)."""
    return min_weight_counts(per_vm, [c.quota for c in cands], [c.price_usd_per_hour for c in cands], total)


def needed_offers(sizes: Sequence[int], quotas: Sequence[int], prices: Sequence[float], total: int) -> list[int]:
    """Indices (in order) of the offers the knapsack of :func:`min_weight_counts` needs to place ``total``
    samples at the least weight (``prices``).

    An offer is left out when the offers of its size *before it* that cost no more have quota enough for
    ``total // size`` VMs, as many of that size as any partial sum holds. When the program reaches it, those
    can take each of its VMs at no higher price in every partial solution, so it improves no entry of the
    table (the program takes an offer only where it is strictly better); left out, it changes none of the
    tables, and the counts are the same, ties included. (A cheaper offer *after* it could change which of
    several equally cheap answers the program returns; such an offer is kept.)"""
    kept = []
    before: dict[int, list[tuple[float, int]]] = {}  # (price, quota) of the offers so far, by size
    for i, (size, quota, price) in enumerate(zip(sizes, quotas, prices, strict=True)):
        same_size = before.setdefault(size, [])
        if sum(q for p, q in same_size if p <= price) < total // size:
            kept.append(i)
        same_size.append((price, quota))
    return kept


def anchor_latencies_ms(cands: Sequence[Candidate], latency_ms: LatencyFn) -> list[float]:
    """Target compute latencies to sweep: the paper's anchors (each allowed batch of the slowest type) and,
    beyond the paper, the latency of every other type's allowed batches, so that configurations whose
    slowest member is a different type at a large batch are reachable too. Ascending, de-duplicated."""
    return sorted({latency_ms(c, b) for c in cands for b in c.batches})


def anchor_ilp(
    problem: PlanProblem, predictor: Predictor, latency_ms: LatencyFn, anchors: AnchorSweep | None = None
) -> tuple[list[Scored], int]:
    """The anchor sweep (see the module docstring). Returns the scored solutions and the number of integer
    programs solved.

    Args:
        latency_ms: compute latency (ms) of one GPU of a candidate at a local batch.
        anchors: :func:`anchor_configs` of this problem with this ``latency_ms``, if already computed.
    """
    configs, n_ilp = anchor_configs(problem, latency_ms) if anchors is None else anchors
    prefetch = getattr(predictor, "prefetch", None)
    if prefetch is not None:  # every solution's network question in one bandwidth-model call
        prefetch(configs)
    return [score(problem, config, predictor.predict(config)) for config in configs], n_ilp


def anchor_configs(problem: PlanProblem, latency_ms: LatencyFn) -> tuple[list[Config], int]:
    """The anchor sweep's solutions, not yet predicted, and the number of integer programs solved."""
    cands = [c for c in problem.candidates if c.batches]
    if not cands:
        return [], 0
    table = [[latency_ms(c, b) for b in c.batches] for c in cands]
    found: dict[str, Config] = {}
    solved: dict[tuple[object, ...], tuple[list[int] | None, list[int] | None]] = {}
    for target in sorted({t for row in table for t in row}):
        est_time_s = problem.job_time_s(target / 1000.0)
        if problem.deadline_s is not None and est_time_s > problem.deadline_s:
            continue
        chosen = [(c, _largest_batch_within(c.batches, row, target)) for c, row in zip(cands, table, strict=True)]
        used = [c for c, b in chosen if b is not None]
        sizes = [int(b) for _, b in chosen if b is not None]
        key = tuple(sizes) + tuple(id(c) for c in used)
        if key not in solved:  # the programs depend on the batches, not on the anchor's time
            per_vm = [c.gpus * b for c, b in zip(used, sizes, strict=True)]
            total = problem.global_batch
            solved[key] = (fewest_vms(used, per_vm, total), cheapest_counts(used, per_vm, total))
        for counts in _within_budget(problem, used, est_time_s, *solved[key]):
            config = config_of(used, counts, sizes)
            if problem.requires_spot and not any(g.market == "spot" for g in config.groups):
                continue  # on-demand VMs only: planned in the region's own problem
            found.setdefault(config.tagged(), config)
    if not found:  # nothing within the deadline or linear budget: find the fastest placement to explain why
        for target in sorted({t for row in table for t in row}):
            chosen = [(c, _largest_batch_within(c.batches, row, target)) for c, row in zip(cands, table, strict=True)]
            used = [c for c, b in chosen if b is not None]
            sizes = [int(b) for _, b in chosen if b is not None]
            per_vm = [c.gpus * b for c, b in zip(used, sizes, strict=True)]
            fewest = fewest_vms(used, per_vm, problem.global_batch)
            solved[("fallback", target)] = (fewest, None)
            if fewest is not None and sum(fewest) > 0:
                config = config_of(used, fewest, sizes)
                if not problem.requires_spot or any(g.market == "spot" for g in config.groups):
                    found[config.tagged()] = config
                    break
    return list(found.values()), 2 * len(solved)


def _within_budget(
    problem: PlanProblem,
    cands: Sequence[Candidate],
    est_time_s: float,
    fewest: list[int] | None,
    cheapest: list[int] | None,
) -> list[list[int]]:
    """The anchor's solutions that keep its compute-only cost ``Σ price·counts·T_L`` within the budget.

    The cheapest counts are the least cost any counts reach at these batches: when they break the budget,
    nothing here keeps it. The fewest-VM counts that break it are replaced by the cheapest (the program
    with the budget row would pick between the two).
    """
    out = [c for c in (fewest, cheapest) if c is not None and sum(c) > 0]
    if problem.budget_usd is None or cheapest is None:
        return out

    def cost(counts: list[int]) -> float:
        return sum(n * c.price_usd_per_hour for n, c in zip(counts, cands, strict=True)) * est_time_s / 3600.0

    if cost(cheapest) > problem.budget_usd:
        return []
    return [c for c in out if cost(c) <= problem.budget_usd] or [cheapest]


#: A search that needs neither the mode nor the simulation budget: the problem, the predictor, compute latency.
SimpleSearch = Callable[[PlanProblem, Predictor, LatencyFn], SearchOutcome]


def full_signature(search: SimpleSearch) -> Callable[[PlanProblem, Predictor, LatencyFn, Mode, int], SearchOutcome]:
    """``search`` with the signature every plan search has (the mode and simulation budget, unused)."""

    def run(
        problem: PlanProblem, predictor: Predictor, latency_ms: LatencyFn, mode: Mode, max_sim_calls: int
    ) -> SearchOutcome:
        return search(problem, predictor, latency_ms)

    return run


def single(problem: PlanProblem, predictor: Predictor, config: Config | None) -> list[Scored]:
    """Score one heuristic configuration (or nothing)."""
    return [] if config is None else [score(problem, config, predictor.predict(config))]
