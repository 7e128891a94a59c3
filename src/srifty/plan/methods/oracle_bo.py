"""Oracle BO: Bayesian optimisation that measures configurations directly on the ground truth.

The paper's strongest profile-based baseline (as in CherryPick and HeterBO): it may explore one third of
the possible configurations, and because it reads the truth itself (here, the expected outcome over the
same placement draws the true optimum uses) it is not misled by cloud variance. Like the paper's, it
searches homogeneous configurations only; with several instance types it repeats the search per type,
splitting the exploration quota equally, and keeps the best.

Per type, the search space is the type's feasible homogeneous configurations ordered by VM count (the
count fixes the local batch), one integer parameter. The sampler is Optuna's Gaussian-process
:class:`optuna.samplers.GPSampler` (a real BO library; it imports torch) with the deadline and budget
as constraints (``time/deadline − 1 ≤ 0``, ``cost/budget − 1 ≤ 0``, set with ``Trial.set_constraint``)
and the goal as the objective. A
trial that proposes a configuration already measured costs no new measurement; the search stops when its
quota of distinct measurements is spent (or after ``5 ×`` quota trials). Where a type's quota covers all
its configurations, they are all measured without a search.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic

from srifty.plan.problem import PlanProblem
from srifty.plan.scoring import Outcome, OutcomeT, best_of, objective, preference
from srifty.vocab import Config, ConfigGroup

MAX_TRIALS_PER_MEASUREMENT = 5


@dataclass(frozen=True)
class OracleBOResult(Generic[OutcomeT]):
    """What Oracle BO chose and what it cost to find.

    Attributes:
        best: the best configuration it measured (feasible if any was), or ``None`` if it measured none.
        n_measured: distinct configurations measured on the truth.
        budget: the measurements it was allowed (one third of the space, split per type).
        solve_s: wall time of the search.
    """

    best: OutcomeT | None
    n_measured: int
    budget: int
    solve_s: float


def homogeneous_configs(problem: PlanProblem) -> dict[str, list[Config]]:
    """Per candidate (``type/market``), its single-type configurations meeting the batch equation exactly,
    fewest VMs first."""
    out: dict[str, list[Config]] = {}
    for cand in problem.candidates:
        configs = []
        for count in range(1, cand.quota + 1):
            per_vm = problem.global_batch / (count * cand.gpus)
            batch = int(per_vm)
            if batch == per_vm and batch in cand.batches:
                configs.append(Config((ConfigGroup(cand.instance, count, batch, cand.market),)))
        out[cand.key] = configs
    return out


def oracle_bo(
    problem: PlanProblem,
    judge: Callable[[Config], OutcomeT],
    space_size: int,
    seed: int,
    fraction: float = 1.0 / 3.0,
) -> OracleBOResult[OutcomeT]:
    """Run Oracle BO on ``problem`` with ``judge`` as the ground truth (see the module docstring).

    Args:
        problem: the true space (candidates with every batch that fits).
        judge: true outcome of a configuration.
        space_size: number of configurations in the whole (heterogeneous) space; the quota is
            ``ceil(fraction · space_size)``.
        seed: seeds each per-type search.
        fraction: share of the space it may measure.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.perf_counter()
    per_type = {k: v for k, v in homogeneous_configs(problem).items() if v}
    budget = max(1, math.ceil(fraction * space_size))
    if not per_type:
        return OracleBOResult(None, 0, budget, time.perf_counter() - started)
    share = max(1, math.ceil(budget / len(per_type)))
    measured: list[OutcomeT] = []
    for offset, (key, configs) in enumerate(sorted(per_type.items())):
        measured.extend(_search_type(problem, configs, judge, min(share, len(configs)), seed + offset, key))
    best = best_of(problem.goal, measured)
    if best is None and measured:
        best = min(measured, key=lambda o: (len(o.violations), *preference(problem.goal, o)))
    return OracleBOResult(best, len(measured), budget, time.perf_counter() - started)


def _constraints(problem: PlanProblem, outcome: Outcome) -> dict[str, float]:
    """Optuna constraint values (feasible when ≤ 0): relative overshoot of the deadline and budget, and OOM."""
    values = {"oom": 1.0 if "oom" in outcome.violations else -1.0}
    if problem.deadline_s is not None:
        values["deadline"] = min(outcome.time_s / problem.deadline_s - 1.0, 1e6)
    if problem.budget_usd is not None:
        values["budget"] = min(outcome.cost_usd / problem.budget_usd - 1.0, 1e6)
    return values


def _search_type(
    problem: PlanProblem,
    configs: Sequence[Config],
    judge: Callable[[Config], OutcomeT],
    quota: int,
    seed: int,
    key: str,
) -> list[OutcomeT]:
    """One type's GP-BO over the index of its configurations; returns the distinct outcomes measured."""
    import optuna as opt

    if quota >= len(configs):
        # The quota covers every configuration of this type: nothing to search, measure them all.
        return [judge(c) for c in configs]
    seen: dict[int, OutcomeT] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", opt.exceptions.ExperimentalWarning)
        sampler = opt.samplers.GPSampler(
            seed=seed,
            n_startup_trials=max(2, min(5, quota // 3)),
            deterministic_objective=True,
            warn_independent_sampling=False,
        )
    study = opt.create_study(direction="minimize", sampler=sampler, study_name=f"oracle-bo {key}")

    def evaluate(trial: opt.Trial) -> float:
        index = trial.suggest_int("config_index", 0, len(configs) - 1)
        if index not in seen:
            seen[index] = judge(configs[index])
        outcome = seen[index]
        for name, value in _constraints(problem, outcome).items():
            trial.set_constraint(name, value)
        value = objective(problem.goal, outcome)[0]
        return value if math.isfinite(value) else 1e12

    trials = 0
    while len(seen) < quota and trials < MAX_TRIALS_PER_MEASUREMENT * quota:
        study.optimize(evaluate, n_trials=1)
        trials += 1
    return list(seen.values())
