"""The reference: the judge's own search for the best configuration of its space (EMULATED cloud).

No method's choice enters it: the reference is what the judge finds by itself, in its own (wider) space.

* **Exhaustive.** When the offers allow at most ``exhaustive_limit`` shapes (VM counts per offer), every
  shape's best division of the work (:mod:`.space`) is judged in full, and the best is the true optimum.
* **Branch and bound.** Otherwise a depth-first search over the offers' VM counts ranks complete shapes by
  their *steady* outcome (:meth:`TruthJudge.steady`) and drops every partial shape whose lower bound cannot
  come within ``slack`` of the best steady outcome found (or of the deadline and budget). The bounds are the
  judge's own and hold for the steady outcome of every completion:

  - *time*: the job's overhead plus ``N ×`` the larger of (a) the least per-rank time at which the fixed VMs
    and every free VM up to its quota could hold the global batch (water-filling on the truth's per-rank
    curves, each fixed VM at a batch of at least 1) and (b) the sum of one iteration's allreduces on the fixed
    VMs' typical links (more VMs never shorten it);
  - *cost*: the larger of the fixed VMs' lowest price × that time and the overhead at their price plus
    ``N ×`` the cheapest way to process the global batch at each offer's best cost per sample (each fixed
    GPU taking at least one sample).

  The search is complete for the steady outcome (every shape within ``slack`` of the steady optimum is
  kept); the ``top_k`` best of them by the steady outcome are then judged in full (more, up to
  ``max_judged``, while none of them is feasible), and the best feasible is the reference.

Both report how many shapes the space holds, how many were divided and judged, and how long it took.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from srifty.evaluate.truth.judge import TruthJudge
from srifty.evaluate.truth.scoring import TrueOutcome, best_outcome, preference
from srifty.evaluate.truth.space import WIDE, Levels, Space, shapes_in, split
from srifty.vocab import Config

EXHAUSTIVE, BRANCH_AND_BOUND = "exhaustive", "branch and bound"
#: Searches again with tighter constraints at most this often when nothing judged in full is feasible.
MAX_TIGHTENINGS = 2


@dataclass(frozen=True)
class SearchSettings:
    """How the judge searches.

    Attributes:
        space: :data:`~.space.WIDE` (the judge's) or :data:`~.space.POWERS_OF_TWO` (srifty's rule).
        exhaustive_limit: spaces of at most this many shapes are judged whole.
        top_k: best shapes by the steady outcome judged in full.
        slack: relative margin kept over the best steady outcome and the constraints.
        max_judged: most shapes judged in full while none of the best is feasible.
    """

    space: Space = WIDE
    exhaustive_limit: int = 400
    top_k: int = 12
    slack: float = 0.05
    max_judged: int = 120


@dataclass(frozen=True)
class SearchResult:
    """What the judge's search found.

    Attributes:
        best: the best feasible configuration judged in full (``None``: none found feasible).
        judged: every configuration judged in full.
        method: :data:`EXHAUSTIVE` or :data:`BRANCH_AND_BOUND`.
        space: the space searched.
        n_shapes: shapes the offers allow.
        n_divided: shapes whose work was divided and ranked.
        search_s: wall time of the search.
    """

    best: TrueOutcome | None
    judged: tuple[TrueOutcome, ...]
    method: str
    space: Space
    n_shapes: int
    n_divided: int
    search_s: float


def search(judge: TruthJudge, settings: SearchSettings | None = None) -> SearchResult:
    """The best configuration of the judge's space (see the module docstring)."""
    chosen = settings or SearchSettings()
    started = time.perf_counter()
    curves = judge.curves
    n_shapes = shapes_in(curves)
    if n_shapes <= chosen.exhaustive_limit:
        judged, divided = _exhaustive(judge, chosen.space)
        method = EXHAUSTIVE
    else:
        judged, divided = [], 0
        tighten = 1.0
        for _ in range(MAX_TIGHTENINGS + 1):
            ranked, more = _branch_and_bound(judge, chosen, tighten)
            divided += more
            judged.extend(o for o in _judge_best(judge, ranked, chosen) if o not in judged)
            if any(o.feasible for o in judged) or not ranked:
                break
            # The steady outcomes kept promised more than the judge found: search again with the constraints
            # tightened by the worst shortfall seen (the steady outcome is not the truth).
            worst = max(o.time_s / judge.steady(o.config).time_s for o in judged if math.isfinite(o.time_s))
            tighten *= max(worst, 1.0 + chosen.slack)
        method = BRANCH_AND_BOUND
    best = best_outcome(judge.terms.goal, judged)
    return SearchResult(best, tuple(judged), method, chosen.space, n_shapes, divided, time.perf_counter() - started)


def _exhaustive(judge: TruthJudge, space: Space) -> tuple[list[TrueOutcome], int]:
    curves = judge.curves
    levels = Levels.of(curves)
    judged = []
    divided = 0
    for counts in itertools.product(*(range(c.offer.quota + 1) for c in curves)):
        parts = split(space, curves, counts, judge.terms.global_batch, levels)
        if parts is None:
            continue
        divided += 1
        config = judge.config_of(parts)
        if config is not None:
            judged.append(judge.judge(config))
    return judged, divided


def _judge_best(judge: TruthJudge, ranked: list[TrueOutcome], settings: SearchSettings) -> list[TrueOutcome]:
    """Judge the best steady outcomes in full: ``top_k`` of them, more while none is feasible."""
    judged: list[TrueOutcome] = []
    for steady in ranked:
        if len(judged) >= settings.max_judged or (len(judged) >= settings.top_k and any(o.feasible for o in judged)):
            break
        judged.append(judge.judge(steady.config))
    return judged


class _Bounds:
    """Lower bounds on the steady outcome of every completion of a partial shape (see the module docstring)."""

    def __init__(self, judge: TruthJudge) -> None:
        self.judge = judge
        self.curves = judge.curves
        self.levels = Levels.of(self.curves)
        terms = judge.terms
        # each offer's least price-seconds per sample (USD/h × s / sample) at its best batch
        self.per_sample = []
        for c in self.curves:
            if c.max_batch == 0:
                self.per_sample.append(math.inf)
                continue
            batches = np.arange(1, c.max_batch + 1)
            s_per_sample = judge.slowest_speed * float(np.min(c.rank_ms / 1e3 / (c.gpus * batches)))
            self.per_sample.append(c.offer.lowest_price_usd_per_hour * s_per_sample)
        self.terms = terms
        self._floors: dict[tuple[int, ...], float] = {}

    def allreduce_floor_s(self, counts: tuple[int, ...]) -> float:
        hit = self._floors.get(counts)
        if hit is None:
            hit = self.judge.allreduce_floor_s(counts)
            self._floors[counts] = hit
        return hit

    def lower(self, counts: list[int], depth: int, network: bool = True) -> tuple[float, float] | None:
        """``(time, cost)`` lower bounds with the first ``depth`` offers fixed at ``counts`` (the rest free up
        to their quotas); ``None`` when no completion can divide the global batch. ``network=False`` leaves
        the allreduce floor out (weaker, cheaper)."""
        curves, terms = self.curves, self.terms
        fixed = counts[:depth]
        gpus_fixed = sum(n * curves[i].gpus for i, n in enumerate(fixed))
        if gpus_fixed > terms.global_batch:
            return None
        weights = [n * curves[i].gpus for i, n in enumerate(fixed)]
        weights += [c.offer.quota * c.gpus for c in curves[depth:]]
        floor = max((curves[i].ms(1) for i, n in enumerate(fixed) if n > 0 and curves[i].max_batch), default=0.0)
        level = self.levels.lowest_level(weights, terms.global_batch, floor)
        if level is None or any(n > 0 and curves[i].max_batch == 0 for i, n in enumerate(fixed)):
            return None
        compute_s = self.judge.slowest_speed * float(self.levels.levels_ms[level]) / 1e3
        key = tuple(fixed) + (0,) * (len(curves) - depth)
        iter_s = max(compute_s, self.allreduce_floor_s(key)) if network else compute_s
        time_s = terms.time_s(iter_s)
        price = self.judge.price_floor_usd_per_hour(key)
        usable = [self.per_sample[i] for i, n in enumerate(fixed) if n > 0]
        usable += [self.per_sample[depth + j] for j, c in enumerate(curves[depth:]) if c.offer.quota > 0]
        cheapest = min(usable, default=math.inf)
        fixed_work = sum(n * curves[i].gpus * self.per_sample[i] for i, n in enumerate(fixed) if n > 0)
        work = fixed_work + (terms.global_batch - gpus_fixed) * cheapest
        cost = max(
            terms.cost_usd(price, time_s),
            terms.cost_usd(price, terms.overhead_s) + terms.iterations * work / 3600.0,
        )
        return time_s, cost


def _branch_and_bound(
    judge: TruthJudge, settings: SearchSettings, tighten: float = 1.0
) -> tuple[list[TrueOutcome], int]:
    """Every shape within ``slack`` of the steady optimum (and of the constraints divided by ``tighten``), best
    first; and how many shapes were divided."""
    bounds = _Bounds(judge)
    curves, terms = bounds.curves, bounds.terms
    goal = terms.goal
    widen = 1.0 + settings.slack
    kept: list[TrueOutcome] = []
    best: list[float] = [math.inf]  # the best steady-feasible objective so far
    divided = [0]

    deadline = None if terms.deadline_s is None else terms.deadline_s / tighten
    budget = None if terms.budget_usd is None else terms.budget_usd / tighten

    def hopeless(time_s: float, cost: float) -> bool:
        if deadline is not None and time_s > deadline * widen:
            return True
        if budget is not None and cost > budget * widen:
            return True
        return (time_s if goal == "min_time" else cost) > best[0] * widen

    def steady_feasible(outcome: TrueOutcome) -> bool:
        return (deadline is None or outcome.time_s <= deadline) and (budget is None or outcome.cost_usd <= budget)

    def leaf(counts: list[int]) -> None:
        parts = split(settings.space, curves, counts, terms.global_batch, bounds.levels)
        if parts is None:
            return
        divided[0] += 1
        config = judge.config_of(parts)
        if config is None:
            return
        outcome = judge.steady(config)
        if hopeless(outcome.time_s, outcome.cost_usd):
            return
        kept.append(outcome)
        if steady_feasible(outcome) and math.isfinite(outcome.time_s):
            best[0] = min(best[0], outcome.time_s if goal == "min_time" else outcome.cost_usd)

    def visit(counts: list[int], depth: int) -> None:
        if depth == len(curves):
            if any(counts):
                leaf(counts)
            return
        for n in range(curves[depth].offer.quota, -1, -1):
            counts[depth] = n
            lower = bounds.lower(counts, depth + 1, network=False)
            if lower is None or hopeless(*lower):
                continue
            lower = bounds.lower(counts, depth + 1)
            if lower is None or hopeless(*lower):
                continue
            visit(counts, depth + 1)
        counts[depth] = 0

    # A good incumbent first: every offer alone at every count.
    for i, c in enumerate(curves):
        for n in range(1, c.offer.quota + 1):
            counts = [0] * len(curves)
            counts[i] = n
            leaf(counts)
    visit([0] * len(curves), 0)
    cut = best[0] * widen
    ranked = {
        o.config.key: o
        for o in kept
        if (o.time_s if goal == "min_time" else o.cost_usd) <= cut or not math.isfinite(best[0])
    }
    return sorted(ranked.values(), key=lambda o: (not steady_feasible(o), *preference(goal, o))), divided[0]


def best_single_offer(judge: TruthJudge, settings: SearchSettings | None = None) -> SearchResult:
    """The best configuration of one instance type and market alone: every offer at every VM count ranked by
    its steady outcome, the ``top_k`` best judged in full (more while none is feasible)."""
    chosen = settings or SearchSettings()
    started = time.perf_counter()
    curves = judge.curves
    levels = Levels.of(curves)
    ranked: dict[tuple[str, str, str, str | None], TrueOutcome] = {}
    divided = 0
    for i, c in enumerate(curves):
        for n in range(1, c.offer.quota + 1):
            counts = [0] * len(curves)
            counts[i] = n
            parts = split(chosen.space, curves, counts, judge.terms.global_batch, levels)
            config = None if parts is None else judge.config_of(parts)
            if config is not None:
                divided += 1
                outcome = judge.steady(config)
                ranked[config.key] = outcome
    order = sorted(ranked.values(), key=lambda o: (not o.feasible, *preference(judge.terms.goal, o)))
    judged = _judge_best(judge, order, chosen)
    return SearchResult(
        best_outcome(judge.terms.goal, judged),
        tuple(judged),
        BRANCH_AND_BOUND,
        chosen.space,
        sum(c.offer.quota for c in curves),
        divided,
        time.perf_counter() - started,
    )


def sample_shapes(judge: TruthJudge, rng: np.random.Generator, draws: int, space: Space = WIDE) -> list[Config]:
    """Every single-offer shape and ``draws`` uniform draws of shapes (each offer's VM count uniform from 0 to its
    quota), each dividing the work as well as ``space`` allows; configurations that cannot run are left out."""
    curves = judge.curves
    levels = Levels.of(curves)
    shapes: list[list[int]] = []
    for i, c in enumerate(curves):
        for n in range(1, c.offer.quota + 1):
            shapes.append([n if j == i else 0 for j in range(len(curves))])
    for _ in range(draws):
        shapes.append([int(rng.integers(0, c.offer.quota + 1)) for c in curves])
    out: dict[tuple[str, str, str, str | None], Config] = {}
    for counts in shapes:
        parts = split(space, curves, counts, judge.terms.global_batch, levels)
        config = None if parts is None else judge.config_of(parts)
        if config is not None:
            out.setdefault(config.key, config)
    return list(out.values())
