"""The judge's scoring: a configuration's true job time, cost and broken constraints, and how outcomes rank.

    true job time = E[VM launch] (the cloud's) + checkpoint restore (the spec's) + N · E[t_iter]
    true cost     = price per hour of the configuration where it runs × true job time

A configuration breaks ``deadline`` when its true job time exceeds the spec's, ``budget`` when its true cost
does, ``oom`` when a local batch does not fit its GPU, ``batch`` when its local batches do not add up to the
job's global batch. Goals rank by (time, cost) for ``min_time`` and (cost, time) for ``min_cost``, ties
broken by notation and zone so that rankings are deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from srifty.spec import JobSpec
from srifty.vocab import Config, JobOutcome


@dataclass(frozen=True)
class JobTerms:
    """What the judge scores a configuration against.

    Attributes:
        goal: ``min_time`` or ``min_cost``.
        global_batch: samples per iteration the configuration must process.
        iterations: iterations of the job.
        overhead_s: the cloud's mean VM launch plus the spec's checkpoint restore (s).
        deadline_s, budget_usd: the spec's constraints (``None``: none).
    """

    goal: str
    global_batch: int
    iterations: int
    overhead_s: float
    deadline_s: float | None = None
    budget_usd: float | None = None

    @classmethod
    def of(cls, spec: JobSpec, mean_launch_s: float) -> JobTerms:
        """The terms of ``spec`` on a cloud whose VMs take ``mean_launch_s`` to launch on average."""
        return cls(
            goal=spec.goal,
            global_batch=spec.global_batch,
            iterations=spec.iterations,
            overhead_s=mean_launch_s + spec.overheads.checkpoint_restore_s,
            deadline_s=spec.deadline_s,
            budget_usd=spec.budget_usd,
        )

    def time_s(self, iter_s: float) -> float:
        """Job time (s) at a mean iteration time."""
        return self.overhead_s + self.iterations * iter_s

    def cost_usd(self, price_usd_per_hour: float, time_s: float) -> float:
        """What ``time_s`` seconds cost at ``price_usd_per_hour``."""
        return price_usd_per_hour * time_s / 3600.0

    def violations(self, time_s: float, cost_usd: float) -> tuple[str, ...]:
        """The constraints a job time and cost break."""
        out = []
        if self.deadline_s is not None and time_s > self.deadline_s:
            out.append("deadline")
        if self.budget_usd is not None and cost_usd > self.budget_usd:
            out.append("budget")
        return tuple(out)

    def rank_key(self, time_s: float, cost_usd: float) -> tuple[float, float]:
        """Smaller is better: (time, cost) or (cost, time)."""
        return (time_s, cost_usd) if self.goal == "min_time" else (cost_usd, time_s)


@dataclass(frozen=True)
class TrueOutcome(JobOutcome):
    """What a configuration really does on the emulated cloud (``feasible``: meets every constraint of the
    spec, for real; ``throughput_samples_per_s``: global batch per expected iteration, as a prediction's).

    Attributes:
        config: the configuration, placed where it runs.
        iter_s: expected iteration time (s).
        time_s: expected job time, launch and restore included (s).
        cost_usd: price × ``time_s``.
        violations: what it breaks: ``deadline``, ``budget``, ``oom``, ``batch``.
    """

    config: Config
    iter_s: float
    time_s: float
    cost_usd: float
    violations: tuple[str, ...] = field(default=())

    @property
    def mean_iter_s(self) -> float:
        """Expected iteration time (s)."""
        return self.iter_s


def outcome_of(config: Config, terms: JobTerms, iter_s: float, price_usd_per_hour: float) -> TrueOutcome:
    """The outcome of ``config`` at a true mean iteration time and price."""
    time_s = terms.time_s(iter_s)
    cost = terms.cost_usd(price_usd_per_hour, time_s)
    return TrueOutcome(config, iter_s, time_s, cost, terms.violations(time_s, cost))


def infeasible(config: Config, reason: str) -> TrueOutcome:
    """An outcome that cannot run at all (``oom``, ``batch``): infinite time and cost."""
    return TrueOutcome(config, math.inf, math.inf, math.inf, (reason,))


def objective(goal: str, outcome: TrueOutcome) -> tuple[float, float]:
    """Sort key, smaller is better: (time, cost) for ``min_time``; (cost, time) for ``min_cost``."""
    return (outcome.time_s, outcome.cost_usd) if goal == "min_time" else (outcome.cost_usd, outcome.time_s)


def preference(goal: str, outcome: TrueOutcome) -> tuple[float, float, str, str]:
    """:func:`objective`, ties broken by markets-tagged notation and zone."""
    return (*objective(goal, outcome), outcome.config.tagged(), outcome.config.zone or "")


def best_outcome(goal: str, outcomes: Iterable[TrueOutcome]) -> TrueOutcome | None:
    """The best feasible outcome, or ``None`` when none is feasible."""
    feasible = [o for o in outcomes if o.feasible]
    return min(feasible, key=lambda o: preference(goal, o)) if feasible else None


def time_cost_front(outcomes: Sequence[TrueOutcome]) -> list[TrueOutcome]:
    """The (time, cost) Pareto front of finite outcomes, fastest first."""
    finite = sorted(
        (o for o in outcomes if math.isfinite(o.time_s)), key=lambda o: (o.time_s, o.cost_usd, o.config.tagged())
    )
    front: list[TrueOutcome] = []
    for o in finite:
        if not front or o.cost_usd < front[-1].cost_usd:
            front.append(o)
    return front
