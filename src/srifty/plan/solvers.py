"""The two search modes over the pruned space: exhaustive, and the paper's anchor + ILP approximation.

Both take the problem and a :class:`~srifty.plan.predict.Predictor` and return every configuration they
predicted, scored; the planner picks from those. :func:`optimize` chooses between them.

**Anchor + ILP** (paper, "Hybrid Solving Strategy"). Iteration time is set by the slowest VM, so good
configurations balance compute latency across types. For each *anchor* batch of the slowest type, its
compute latency ``L`` is the target; every type gets the largest allowed batch whose compute latency is at
most ``L`` (binary search on its latency model). Beyond the paper, every type's allowed batches serve as
anchors too (see :func:`anchor_latencies_ms`). With batches fixed, counts solve an integer
program (HiGHS, through ``scipy.optimize.milp``)::

    minimise    Σ_i counts_i                    (the paper's proxy; also solved with Σ_i price_i·counts_i)
    subject to  Σ_i counts_i · gpus_i · batch_i = B_global
                0 ≤ counts_i ≤ quota_i,  counts_i integer
                Σ_i price_i · counts_i · T_L / 3600 ≤ budget      (T_L = N·L + overhead: compute only)

and anchors whose compute-only time ``T_L`` already misses the deadline are skipped. Each solution is then
simulated, so the linearisation only steers the search; constraints are checked on the simulated time.

When that leaves nothing (every anchor misses the deadline, or the linear budget admits no counts), the
sweep solves the anchors again from the fastest, without the deadline skip and the budget row, and scores
the first configuration found: the job is then infeasible for the deadline or the budget, and the
explanation must say so (as exhaustive search does), not that no counts place the global batch.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from srifty.plan.predict import Predictor
from srifty.plan.problem import Candidate, PlanProblem
from srifty.plan.scoring import Scored, score
from srifty.plan.space import config_of, count_configs, enumerate_configs
from srifty.vocab import Config

LatencyFn = Callable[[Candidate, int], float]
Mode = Literal["auto", "exhaustive", "ilp"]
DEFAULT_MAX_SIM_CALLS = 10_000


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
) -> SearchOutcome:
    """srifty's search: the pruned space exhaustively when it is small enough, else anchor + ILP.

    Args:
        latency_ms: compute latency (ms) of one GPU of a candidate at a local batch, for anchoring.
    """
    size = count_configs(problem)
    if size == 0:  # nothing places the global batch: the explanation says why, without searching
        return SearchOutcome([], "exhaustive" if mode == "auto" else mode, 0)
    use = mode if mode != "auto" else ("exhaustive" if size <= max_sim_calls else "ilp")
    if use == "exhaustive":
        return SearchOutcome(exhaustive(problem, predictor), "exhaustive", size)
    scored, n_ilp = anchor_ilp(problem, predictor, latency_ms)
    return SearchOutcome(scored, "ilp", size, n_ilp)


def exhaustive(problem: PlanProblem, predictor: Predictor) -> list[Scored]:
    """Evaluate every configuration in the pruned space (network queries first, in one batch, where the
    predictor can)."""
    configs = list(enumerate_configs(problem))
    prefetch = getattr(predictor, "prefetch", None)
    if prefetch is not None:
        prefetch(configs)
    return [score(problem, config, predictor.predict(config)) for config in configs]


def _largest_batch_within(cand: Candidate, target_ms: float, latency_ms: LatencyFn) -> int | None:
    """Largest allowed batch of ``cand`` whose compute latency is at most ``target_ms`` (binary search)."""
    latencies = [latency_ms(cand, b) for b in cand.batches]
    # Latency models are non-decreasing in the batch, so this is a sorted list.
    index = bisect.bisect_right(latencies, target_ms * (1 + 1e-9))
    return cand.batches[index - 1] if index > 0 else None


def solve_counts(
    cands: Sequence[Candidate],
    batches: Sequence[int],
    problem: PlanProblem,
    est_time_s: float,
    weights: Sequence[float],
    with_budget: bool = True,
) -> list[int] | None:
    """Integer counts minimising ``Σ weights·counts`` under the batch equation, quotas and (unless
    ``with_budget`` is off) the linear budget."""
    n = len(cands)
    per_vm = np.array([c.gpus * b for c, b in zip(cands, batches, strict=True)], dtype=float)
    rows = [per_vm]
    lower = [float(problem.global_batch)]
    upper = [float(problem.global_batch)]
    if with_budget and problem.budget_usd is not None:
        rows.append(np.array([c.price_usd_per_hour * est_time_s / 3600.0 for c in cands]))
        lower.append(-np.inf)
        upper.append(problem.budget_usd)
    result = milp(
        c=np.asarray(weights, dtype=float),
        integrality=np.ones(n),
        bounds=Bounds(np.zeros(n), np.array([c.quota for c in cands], dtype=float)),
        constraints=LinearConstraint(np.vstack(rows), np.array(lower), np.array(upper)),
    )
    if result.status != 0 or result.x is None:
        return None
    return [round(x) for x in result.x]


def anchor_latencies_ms(cands: Sequence[Candidate], latency_ms: LatencyFn) -> list[float]:
    """Target compute latencies to sweep: the paper's anchors (each allowed batch of the slowest type) and,
    beyond the paper, the latency of every other type's allowed batches, so that configurations whose
    slowest member is a different type at a large batch are reachable too. Ascending, de-duplicated."""
    return sorted({latency_ms(c, b) for c in cands for b in c.batches})


def anchor_ilp(problem: PlanProblem, predictor: Predictor, latency_ms: LatencyFn) -> tuple[list[Scored], int]:
    """The anchor sweep (see the module docstring). Returns the scored solutions and the number of integer
    programs solved.

    Args:
        latency_ms: compute latency (ms) of one GPU of a candidate at a local batch.
    """
    cands = [c for c in problem.candidates if c.batches]
    if not cands:
        return [], 0
    seen: dict[str, Scored] = {}
    n_solved = 0
    for target in anchor_latencies_ms(cands, latency_ms):
        chosen = [(c, _largest_batch_within(c, target, latency_ms)) for c in cands]
        usable = [(c, b) for c, b in chosen if b is not None]
        est_time_s = problem.job_time_s(target / 1000.0)
        if problem.deadline_s is not None and est_time_s > problem.deadline_s:
            continue
        used = [c for c, _ in usable]
        sizes = [int(b) for _, b in usable]
        for weights in ([1.0] * len(used), [c.price_usd_per_hour for c in used]):
            counts = solve_counts(used, sizes, problem, est_time_s, weights)
            n_solved += 1
            if counts is None or sum(counts) == 0:
                continue
            config = config_of(used, counts, sizes)
            key = config.notation()
            if key not in seen:
                seen[key] = score(problem, config, predictor.predict(config))
    if not seen:  # nothing within the deadline or linear budget: find the fastest placement to explain why
        for target in anchor_latencies_ms(cands, latency_ms):
            usable = [(c, b) for c in cands if (b := _largest_batch_within(c, target, latency_ms)) is not None]
            used, sizes = [c for c, _ in usable], [int(b) for _, b in usable]
            counts = solve_counts(used, sizes, problem, 0.0, [1.0] * len(used), with_budget=False)
            n_solved += 1
            if counts is not None and sum(counts) > 0:
                config = config_of(used, counts, sizes)
                return [score(problem, config, predictor.predict(config))], n_solved
    return list(seen.values()), n_solved


def single(problem: PlanProblem, predictor: Predictor, config: Config | None) -> list[Scored]:
    """Score one heuristic configuration (or nothing)."""
    return [] if config is None else [score(problem, config, predictor.predict(config))]
