"""Two reference baselines: random feasible configurations, and the best homogeneous configuration.

* **Random** (:func:`sample_configs`): configurations drawn uniformly from the space, every assignment that
  places the global batch exactly within the quotas equally likely (dynamic programming over "samples still
  to place", the same count as :func:`srifty.plan.space.count_configs`, so a draw costs no enumeration even
  in a space of 10^7). It knows nothing of speed or price; an evaluation judges every draw and reports the
  median, the typical outcome of picking blindly.
* **Homogeneous** (:func:`homogeneous_search`): every configuration of one instance type and market (every
  allowed batch, every count that places the global batch), scored by the method's predictor; the planner
  keeps the best. Against srifty it measures what mixing types buys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from srifty.plan import solvers
from srifty.plan.methods.oracle_bo import homogeneous_configs
from srifty.plan.predict import Predictor
from srifty.plan.problem import PlanProblem
from srifty.plan.scoring import score
from srifty.plan.space import count_configs
from srifty.vocab import Config, ConfigGroup

DEFAULT_DRAWS = 20
Search = Callable[[PlanProblem, Predictor, solvers.LatencyFn, solvers.Mode, int], solvers.SearchOutcome]


def _options(problem: PlanProblem) -> list[list[tuple[int, int]]]:
    """Per candidate, its ``(count, batch)`` choices, ``(0, 0)`` first."""
    return [[(0, 0)] + [(c, b) for b in cand.batches for c in range(1, cand.quota + 1)] for cand in problem.candidates]


def sample_configs(problem: PlanProblem, rng: np.random.Generator, n: int) -> list[Config]:
    """``n`` configurations drawn uniformly (with replacement) from the space; none if it is empty."""
    total = problem.global_batch
    cands = problem.candidates
    options = _options(problem)
    # ways[i][r]: assignments of candidates i.. that place exactly r samples.
    ways = np.zeros((len(cands) + 1, total + 1))
    ways[len(cands), 0] = 1.0
    for i in range(len(cands) - 1, -1, -1):
        row = np.zeros(total + 1)
        for count, batch in options[i]:
            shift = count * cands[i].gpus * batch
            if shift <= total:
                row[shift:] += ways[i + 1, : total + 1 - shift]
        ways[i] = row
    if ways[0, total] <= 0:
        return []
    zone = problem.placement.zone if problem.placement is not None else None
    out = []
    for _ in range(n):
        remaining, groups = total, []
        for i, cand in enumerate(cands):
            placed = [count * cand.gpus * batch for count, batch in options[i]]
            weights = np.array([ways[i + 1, remaining - s] if s <= remaining else 0.0 for s in placed])
            pick = int(rng.choice(len(weights), p=weights / weights.sum()))
            count, batch = options[i][pick]
            if count:
                groups.append(ConfigGroup(cand.instance, count, batch, cand.market))
            remaining -= placed[pick]
        out.append(Config(tuple(groups), zone))
    return out


def sample_placed(problems: Sequence[PlanProblem], rng: np.random.Generator, n: int) -> list[Config]:
    """``n`` configurations drawn uniformly from the union of the placements' spaces (each placement drawn in
    proportion to its size, then a configuration within it; on-demand-only draws of a placement that plans
    spot VMs only are drawn again, as :func:`srifty.plan.space.count_configs` leaves them out)."""
    sizes = np.array([float(count_configs(p)) for p in problems])
    if not len(problems) or sizes.sum() <= 0:
        return []
    out: list[Config] = []
    for i, k in enumerate(rng.multinomial(n, sizes / sizes.sum())):
        problem = problems[i]
        while k > 0:
            drawn = [
                c
                for c in sample_configs(problem, rng, int(k))
                if not problem.requires_spot or any(g.market == "spot" for g in c.groups)
            ]
            out.extend(drawn)
            k -= len(drawn)
    return out


def random_search(n: int = DEFAULT_DRAWS, seed: int = 0) -> Search:
    """A plan search returning ``n`` uniform draws, in draw order, scored by the predictor."""

    def run(problem: PlanProblem, predictor: Predictor, _latency_ms: solvers.LatencyFn) -> solvers.SearchOutcome:
        draws = sample_configs(problem, np.random.default_rng(seed), n)
        return solvers.SearchOutcome(
            [score(problem, c, predictor.predict(c)) for c in draws], "random", count_configs(problem)
        )

    return solvers.full_signature(run)


def _homogeneous(problem: PlanProblem, predictor: Predictor, _latency_ms: solvers.LatencyFn) -> solvers.SearchOutcome:
    """Every single-type configuration, scored (see the module docstring)."""
    configs = [c for per_type in homogeneous_configs(problem).values() for c in per_type]
    prefetch = getattr(predictor, "prefetch", None)
    if prefetch is not None:
        prefetch(configs)
    return solvers.SearchOutcome(
        [score(problem, c, predictor.predict(c)) for c in configs], "homogeneous", len(configs)
    )


#: Every single-type configuration, scored, as a plan search.
homogeneous_search = solvers.full_signature(_homogeneous)
