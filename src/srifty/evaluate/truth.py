"""Judging configurations on the emulated cloud's ground truth, and finding the true optimum.

A configuration's *true* outcome is its expected iteration time over a fixed set of placement draws
(``n_allocations`` allocations of ``iters`` iterations each, the same draws for every configuration), the
job time that implies, its cost and whether it meets the spec's constraints:

    true job time = E[VM launch] + checkpoint restore (the spec's) + N · E[t_iter]
    true cost     = price per hour · true job time

(the planner predicts with the spec's launch time instead, 150 s by default, as the paper did). The true
space: every type's local batch a power of two up to what its GPU really holds (no knee pruning: that is
srifty's insight, not a fact of the world), every count up to its quota, the global batch met exactly, in
every placement (zone) where its types are offered together, priced there.

**The reference.** Where the true space has at most ``exhaustive_limit`` configurations, every one is
judged and the best is the true optimum (:func:`true_optimum`). Larger spaces (the harder suite reaches
10^7) cannot be judged whole, so the reference is the *best known* configuration (:func:`best_known`): the
best of every method's choice, every homogeneous configuration, uniform draws from the space, and an anchor
sweep run on the truth's own compute latencies (each anchor latency gives every type the largest batch
that stays within it, and the fewest-VM and cheapest counts, as srifty's anchor sweep does with its
predictions), in every placement. Every method's choice is in that pool, so no ratio to it is below 1; tables
say which reference each case used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from srifty.catalog import InstanceType
from srifty.cloud import ComputeTruth, EmulatedCloud
from srifty.plan import PlanProblem, best_of, build_problems, enumerate_configs, job_time_cost
from srifty.plan.build import unplaced
from srifty.plan.methods import sample_placed
from srifty.plan.methods.oracle_bo import homogeneous_configs
from srifty.plan.solvers import cheapest_counts, fewest_vms
from srifty.plan.space import config_of
from srifty.spec import JobSpec
from srifty.vocab import Config

#: Largest true space judged whole.
DEFAULT_EXHAUSTIVE_LIMIT = 5000
#: Uniform draws added to the best-known pool of a larger space.
DEFAULT_POOL_DRAWS = 300


@dataclass(frozen=True)
class TrueOutcome:
    """What a configuration really does on the emulated cloud.

    Attributes:
        iter_s: expected iteration time (s).
        time_s: expected job time, launch and restore included (s).
        cost_usd: price × ``time_s``.
        violations: ``"deadline"``, ``"budget"``, ``"oom"`` (a local batch does not fit): what it breaks.
    """

    config: Config
    iter_s: float
    time_s: float
    cost_usd: float
    violations: tuple[str, ...] = field(default=())

    @property
    def feasible(self) -> bool:
        """Meets every constraint of the spec, for real."""
        return not self.violations

    @property
    def throughput_samples_per_s(self) -> float:
        """Global batch per expected iteration."""
        return self.config.global_batch / self.iter_s if self.iter_s > 0 else 0.0


@dataclass(frozen=True)
class TruthLimits:
    """Batch limits on the truth: what one GPU really holds; no knee (that is srifty's insight, not a fact)."""

    cloud: EmulatedCloud
    model: str

    def max_batch(self, instance: InstanceType) -> int:
        return self.cloud.max_batch(instance.gpu_name, self.model)

    def knee_batch(self, instance: InstanceType) -> int:
        return 1


class TruthJudge:
    """True outcomes of one job's configurations, cached by notation.

    Args:
        cloud: the emulated cloud.
        spec: the job (model, iterations, constraints, restore overhead).
        n_allocations: placement draws each configuration is averaged over.
        iters: iterations drawn per placement.
    """

    def __init__(self, cloud: EmulatedCloud, spec: JobSpec, n_allocations: int = 4, iters: int = 25) -> None:
        self.cloud = cloud
        self.spec = spec
        self.model = spec.model.name or cloud.model or ""
        self.n_allocations = n_allocations
        self.iters = iters
        self.overhead_s = cloud.params.mean_launch_time_s + spec.overheads.checkpoint_restore_s
        self._cache: dict[tuple[str, str, str, str | None], TrueOutcome] = {}
        self._iter_s: dict[str, float] = {}
        self._problems: tuple[PlanProblem, ...] | None = None
        self.tag = spec.name or "job"

    @property
    def n_judged(self) -> int:
        """Distinct configurations judged so far."""
        return len(self._cache)

    def judge(self, config: Config) -> TrueOutcome:
        """The true outcome of ``config`` in its zone (OOM configurations are infeasible, with infinite time)."""
        key = config.key
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if any(g.local_batch > self.cloud.max_batch(g.instance.gpu_name, self.model) for g in config.groups):
            outcome = TrueOutcome(config, float("inf"), float("inf"), float("inf"), ("oom",))
        else:
            notation = config.notation()  # the truth does not depend on the zone, only the price does
            if notation not in self._iter_s:
                self._iter_s[notation] = self.cloud.expected_iteration_s(
                    config, self.n_allocations, self.iters, model=self.model, tag=self.tag
                )
            iter_s = self._iter_s[notation]
            time_s, cost, violations = job_time_cost(self.problem, config, iter_s)
            outcome = TrueOutcome(config, iter_s, time_s, cost, violations)
        self._cache[key] = outcome
        return outcome

    @property
    def problems(self) -> tuple[PlanProblem, ...]:
        """The job on the truth, one problem per placement: every power-of-two batch that really fits, the
        cloud's mean launch time."""
        if self._problems is None:
            limits = TruthLimits(self.cloud, self.model)
            self._problems = build_problems(self.spec, self.cloud.catalog, limits, "all", self.overhead_s)
        return self._problems

    @property
    def problem(self) -> PlanProblem:
        """The job on the truth as one unplaced problem (each type at its cheapest price, for searches over
        single-type configurations, whose cheapest zone is always a real placement)."""
        return unplaced(self.problems)

    def judge_all(self, configs: Iterable[Config]) -> list[TrueOutcome]:
        """True outcomes of every configuration given."""
        return [self.judge(c) for c in configs]


def true_optimum(judge: TruthJudge) -> tuple[TrueOutcome | None, list[TrueOutcome]]:
    """Judge every configuration of the true space (every placement); returns the optimum (or ``None``) and all
    outcomes."""
    outcomes = judge.judge_all(c for p in judge.problems for c in enumerate_configs(p))
    return best_of(judge.spec.goal, outcomes), outcomes


def truth_anchor_configs(judge: TruthJudge) -> list[Config]:
    """The anchor sweep on the truth's compute latencies, in every placement (see the module docstring)."""
    out: dict[tuple[str, str, str, str | None], Config] = {}
    truths: dict[str, ComputeTruth] = {}

    def latency_ms(gpu: str, batch: int) -> float:
        if gpu not in truths:
            truths[gpu] = judge.cloud.truth(gpu, judge.model)
        return float(sum(truths[gpu].phases_ms(batch)))

    for problem in judge.problems:
        cands = [c for c in problem.candidates if c.batches]
        zone = problem.placement.zone if problem.placement is not None else None
        for target in sorted({latency_ms(c.instance.gpu_name, b) for c in cands for b in c.batches}):
            chosen = []
            for c in cands:
                fitting = [b for b in c.batches if latency_ms(c.instance.gpu_name, b) <= target * (1 + 1e-9)]
                if fitting:
                    chosen.append((c, max(fitting)))
            used = [c for c, _ in chosen]
            sizes = [b for _, b in chosen]
            per_vm = [c.gpus * b for c, b in chosen]
            for counts in (
                fewest_vms(used, per_vm, problem.global_batch),
                cheapest_counts(used, per_vm, problem.global_batch),
            ):
                if counts is not None and sum(counts) > 0:
                    config = config_of(used, counts, sizes, zone)
                    out.setdefault(config.key, config)
    return list(out.values())


def best_known(
    judge: TruthJudge, picks: Sequence[Config], seed: int, draws: int = DEFAULT_POOL_DRAWS
) -> tuple[TrueOutcome | None, list[TrueOutcome]]:
    """The best-known reference of a space too large to judge whole (see the module docstring)."""
    pool: dict[tuple[str, str, str, str | None], Config] = {}
    for config in [
        *picks,
        *(c for per_type in homogeneous_configs(judge.problem).values() for c in per_type),
        *truth_anchor_configs(judge),
        *sample_placed(judge.problems, np.random.default_rng([seed, 7]), draws),
    ]:
        pool.setdefault(config.key, config)
    outcomes = judge.judge_all(pool.values())
    return best_of(judge.spec.goal, outcomes), outcomes
