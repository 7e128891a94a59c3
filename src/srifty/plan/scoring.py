"""Scoring: a configuration's job time, cost and constraint checks from its iteration time.

:func:`job_time_cost` turns a mean iteration time into job time, cost and violated constraints (the
evaluation scores the emulated cloud's truth with it); the planner scores its predictions as distributions
(:func:`score`, :mod:`srifty.plan.risk`): expected time and cost, and a constraint met only with the problem's
confidence. :func:`objective` and :func:`preference` order anything that has a time, a cost and
violations (a predicted :class:`Scored` or a true outcome) by the job's goal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from srifty.plan.predict import Estimate
from srifty.plan.problem import PlanProblem
from srifty.plan.risk import Risk, assess
from srifty.vocab import Config, JobOutcome


class Outcome(Protocol):
    """A configuration with a job time, a cost and the constraints it breaks (predicted or true)."""

    @property
    def config(self) -> Config: ...

    @property
    def time_s(self) -> float: ...

    @property
    def cost_usd(self) -> float: ...

    @property
    def violations(self) -> tuple[str, ...]: ...

    @property
    def feasible(self) -> bool: ...


OutcomeT = TypeVar("OutcomeT", bound=Outcome)


def job_time_cost(problem: PlanProblem, config: Config, iter_mean_s: float) -> tuple[float, float, tuple[str, ...]]:
    """``(job time s, cost USD, violated constraints)`` of ``config`` at a mean iteration time.

    Job time is ``N·t_iter + overhead``; cost is the configuration's price for that time; the violations
    are ``"deadline"`` and ``"budget"``, where the problem has them (:func:`score` adds ``"memory"`` for a
    configuration predicted not to fit its GPUs).
    """
    time_s = problem.job_time_s(iter_mean_s)
    cost = problem.cost_usd(config.price_usd_per_hour(), time_s)
    violations = []
    if problem.deadline_s is not None and time_s > problem.deadline_s:
        violations.append("deadline")
    if problem.budget_usd is not None and cost > problem.budget_usd:
        violations.append("budget")
    return time_s, cost, tuple(violations)


@dataclass(frozen=True)
class Scored(JobOutcome):
    """A configuration with its predicted job time, cost and constraint checks (feasible: as predicted).

    ``time_s`` and ``cost_usd`` are expected values; ``risk`` holds their distributions, and a constraint is
    violated when its probability falls short of the problem's confidence.
    """

    config: Config
    estimate: Estimate
    time_s: float
    cost_usd: float
    price_usd_per_hour: float
    p_meet_deadline: float | None
    violations: tuple[str, ...] = field(default=())
    risk: Risk | None = None

    @property
    def p_meet_budget(self) -> float | None:
        """P(cost within budget), ``None`` without a budget."""
        return None if self.risk is None else self.risk.p_meet_budget

    @property
    def mean_iter_s(self) -> float:
        """Predicted mean iteration time (s)."""
        return self.estimate.iter_mean_s


def score(problem: PlanProblem, config: Config, estimate: Estimate) -> Scored:
    """Expected job time and cost, their distributions (:func:`~srifty.plan.risk.assess`) and the constraints
    ``config`` breaks at the problem's confidence (``"memory"`` first for a configuration predicted not to fit
    its GPUs), placed in the problem's zone."""
    config = problem.place(config).sharded(estimate.parallelism, estimate.checkpointing)  # type: ignore[arg-type]
    risk = assess(problem, config, estimate)
    violations = [] if estimate.fits_memory else ["memory"]
    if risk.p_meet_deadline is not None and risk.p_meet_deadline < problem.confidence:
        violations.append("deadline")
    if risk.p_meet_budget is not None and risk.p_meet_budget < problem.confidence:
        violations.append("budget")
    return Scored(
        config,
        estimate,
        risk.time_mean_s,
        risk.cost_mean_usd,
        config.price_usd_per_hour(),
        risk.p_meet_deadline,
        tuple(violations),
        risk,
    )


def deadline_probability(problem: PlanProblem, estimate: Estimate) -> float:
    """P(job time ≤ deadline) from model error and iteration variance alone (no spot losses, no launch
    spread). The sum of N independent iterations is normal with mean ``N·μ`` and standard deviation
    ``√N·σ``; the error of the mean is the same in every iteration, so it adds ``N·ε`` (not ``√N·ε``), in
    quadrature."""
    if problem.deadline_s is None:
        return 1.0
    slack = problem.deadline_s - problem.job_time_s(estimate.iter_mean_s)
    n = problem.iterations
    spread = math.hypot(math.sqrt(n) * estimate.iter_std_s, n * estimate.iter_mean_error_s)
    if spread <= 0:
        return 1.0 if slack >= 0 else 0.0
    return 0.5 * (1.0 + math.erf(slack / (spread * math.sqrt(2.0))))


def objective(goal: str, outcome: Outcome) -> tuple[float, float]:
    """Sort key, smaller is better: (time, cost) for ``min_time``; (cost, time) for ``min_cost``."""
    return (outcome.time_s, outcome.cost_usd) if goal == "min_time" else (outcome.cost_usd, outcome.time_s)


def preference(goal: str, outcome: Outcome) -> tuple[float, float, str, str, str]:
    """:func:`objective`, ties broken by the configuration's notation, markets and zone (for determinism)."""
    config = outcome.config
    return (*objective(goal, outcome), config.notation(), config.tagged(), config.zone or "")


def best_of(goal: str, outcomes: Sequence[OutcomeT]) -> OutcomeT | None:
    """The best feasible outcome by the goal, or ``None`` when none is feasible."""
    feasible = [o for o in outcomes if o.feasible]
    return min(feasible, key=lambda o: preference(goal, o)) if feasible else None
