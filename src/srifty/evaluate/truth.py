"""Judging configurations on the emulated cloud's ground truth, and finding the true optimum.

A configuration's *true* outcome is its expected iteration time over a fixed set of placement draws
(``n_allocations`` allocations of ``iters`` iterations each, the same draws for every configuration), the
job time that implies, its cost and whether it meets the spec's constraints:

    true job time = E[VM launch] + checkpoint restore (the spec's) + N · E[t_iter]
    true cost     = price per hour · true job time

(the planner predicts with the spec's launch time instead, 150 s by default, as the paper did). The true
optimum is found by judging *every* feasible configuration: every type's local batch a power of two up
to what its GPU really holds (no knee pruning: that is srifty's insight, not a fact of the world),
every count up to its quota, the global batch met exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from srifty.catalog import Catalog
from srifty.cloud import EmulatedCloud
from srifty.plan import Candidate, PlanProblem, enumerate_configs
from srifty.plan.space import powers_of_two
from srifty.spec import JobSpec
from srifty.units import usd_for
from srifty.vocab import Config


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


def objective(goal: str, outcome: TrueOutcome) -> tuple[float, float]:
    """Sort key, smaller is better: (time, cost) for ``min_time``, (cost, time) for ``min_cost``."""
    return (outcome.time_s, outcome.cost_usd) if goal == "min_time" else (outcome.cost_usd, outcome.time_s)


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
        self._cache: dict[str, TrueOutcome] = {}
        self.tag = spec.name or "job"

    @property
    def n_judged(self) -> int:
        """Distinct configurations judged so far."""
        return len(self._cache)

    def judge(self, config: Config) -> TrueOutcome:
        """The true outcome of ``config`` (OOM configurations are infeasible, with infinite time)."""
        key = config.notation()
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if any(g.local_batch > self.cloud.max_batch(g.instance.gpu_name, self.model) for g in config.groups):
            outcome = TrueOutcome(config, float("inf"), float("inf"), float("inf"), ("oom",))
        else:
            iter_s = self.cloud.expected_iteration_s(
                config, self.n_allocations, self.iters, model=self.model, tag=self.tag
            )
            time_s = self.overhead_s + self.spec.iterations * iter_s
            cost = usd_for(config.price_usd_per_hour(), time_s)
            violations = []
            if self.spec.deadline_s is not None and time_s > self.spec.deadline_s:
                violations.append("deadline")
            if self.spec.budget_usd is not None and cost > self.spec.budget_usd:
                violations.append("budget")
            outcome = TrueOutcome(config, iter_s, time_s, cost, tuple(violations))
        self._cache[key] = outcome
        return outcome

    def true_problem(self, catalog: Catalog) -> PlanProblem:
        """The space the true optimum is searched in: every power-of-two batch that really fits."""
        spec = self.spec
        candidates = []
        for cand in spec.candidates:
            instance = catalog.get(cand.instance_type, region=spec.region, cloud=spec.cloud)
            limit = self.cloud.max_batch(instance.gpu_name, self.model)
            upper = min(limit, spec.global_batch // instance.gpus_per_vm)
            candidates.append(
                Candidate(
                    instance=instance,
                    market=cand.market,
                    quota=cand.quota,
                    price_usd_per_hour=instance.price_usd_per_hour(cand.market, cand.zone),
                    batches=powers_of_two(1, upper),
                    knee_batch=1,
                    max_batch=limit,
                    pruned_note="true space: every power of two that fits",
                )
            )
        return PlanProblem(
            candidates=tuple(candidates),
            global_batch=spec.global_batch,
            iterations=spec.iterations,
            goal=spec.goal,
            deadline_s=spec.deadline_s,
            budget_usd=spec.budget_usd,
            overhead_s=self.overhead_s,
        )

    def judge_all(self, configs: Iterable[Config]) -> list[TrueOutcome]:
        """True outcomes of every configuration given."""
        return [self.judge(c) for c in configs]


def best_of(goal: str, outcomes: Sequence[TrueOutcome]) -> TrueOutcome | None:
    """The best feasible outcome by the goal (ties by notation), or ``None`` when none is feasible."""
    feasible = [o for o in outcomes if o.feasible]
    if not feasible:
        return None
    return min(feasible, key=lambda o: (*objective(goal, o), o.config.notation()))


def true_optimum(judge: TruthJudge, catalog: Catalog) -> tuple[TrueOutcome | None, list[TrueOutcome]]:
    """Judge every configuration of the true space; returns the optimum (or ``None``) and all outcomes."""
    outcomes = judge.judge_all(enumerate_configs(judge.true_problem(catalog)))
    return best_of(judge.spec.goal, outcomes), outcomes
