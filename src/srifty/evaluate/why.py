"""Why srifty's choice lost: to the true optimum, or to a baseline's choice (computed, not guessed).

Given srifty's choice ``chosen`` and a truly better configuration ``better``:

* **search**: ``better`` was outside srifty's search space (a local batch below the knee floor it prunes at,
  or above the memory limit its profile predicts), or inside it but never simulated by the anchor + ILP search
  while srifty's own prediction would have preferred it;
* otherwise srifty evaluated both and **mispredicted** their order. Each prediction error splits into three
  parts, measured on the truth with the same placements:

  - **compute shape**: srifty's predicted compute (forward, backward, step of the slowest rank) against the
    truth's mean compute of the slowest group (no noise, no communication);
  - **network**: srifty's predicted exposed communication against what the truth adds over its compute with
    stragglers switched off (allreduces on the stream, launch skew, placement);
  - **stragglers**: what the truth's straggler process adds (srifty models only a normal spread per rank).

  The part that moved ``chosen`` ahead of ``better`` the most (weighted by price for ``min_cost``) is the
  cause. A constraint ``chosen`` broke is put on the part that underestimated it most; a feasible plan srifty
  missed, on the part that overestimated ``better`` most.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from srifty.cloud import EmulatedCloud
from srifty.plan import PlanProblem, Predictor
from srifty.vocab import Config

CAUSES = ("search", "compute shape", "network", "stragglers")


@dataclass(frozen=True)
class TruthParts:
    """A configuration's true iteration time (s) and the parts of it the explanation compares."""

    compute_s: float
    steady_s: float
    full_s: float


def truth_parts(cloud: EmulatedCloud, steady: EmulatedCloud, model: str, config: Config, tag: str) -> TruthParts:
    """Compute-only, without-stragglers and full true iteration time of ``config`` (same placements)."""
    compute = max(sum(cloud.truth(g.instance.gpu_name, model).phases_ms(g.local_batch)) for g in config.groups) / 1e3
    return TruthParts(
        compute_s=compute,
        steady_s=steady.expected_iteration_s(config, model=model, tag=tag),
        full_s=cloud.expected_iteration_s(config, model=model, tag=tag),
    )


def in_space(problems: Sequence[PlanProblem], config: Config) -> bool:
    """Whether ``config`` is in the search space of one of ``problems`` (one per placement: its candidates'
    allowed batches and quotas)."""

    def fits(problem: PlanProblem) -> bool:
        by_key = {(c.instance.name, c.market): c for c in problem.candidates}
        for g in config.groups:
            cand = by_key.get((g.instance.name, g.market))
            if cand is None or g.local_batch not in cand.batches or g.count > cand.quota:
                return False
        return True

    return any(fits(p) for p in problems)


def _errors(predictor: Predictor, config: Config, truth: TruthParts) -> dict[str, float]:
    estimate = predictor.predict(config)
    return {
        "compute shape": estimate.compute_s - truth.compute_s,
        "network": estimate.comm_exposed_s - (truth.steady_s - truth.compute_s),
        "stragglers": -(truth.full_s - truth.steady_s),
    }


def explain(
    *,
    problems: Sequence[PlanProblem],
    evaluated: Sequence[str],
    searched_exhaustively: bool,
    predictor: Predictor,
    cloud: EmulatedCloud,
    steady: EmulatedCloud,
    model: str,
    goal: str,
    chosen: Config | None,
    chosen_violates: bool,
    better: Config,
    tag: str,
) -> dict[str, Any]:
    """The cause of srifty's loss to ``better`` (see the module docstring), with the numbers behind it."""
    weight = (lambda c: c.price_usd_per_hour()) if goal == "min_cost" else (lambda c: 1.0)
    if not in_space(problems, better):
        return {"cause": "search", "detail": f"{better.notation()} is outside srifty's pruned space"}
    if chosen is not None and not searched_exhaustively and better.notation() not in evaluated:
        mine, theirs = predictor.predict(chosen), predictor.predict(better)
        if weight(better) * theirs.iter_mean_s < weight(chosen) * mine.iter_mean_s:
            return {
                "cause": "search",
                "detail": f"anchor + ILP never simulated {better.notation()}, which srifty would have preferred",
            }
    better_errors = _errors(predictor, better, truth_parts(cloud, steady, model, better, tag))
    if chosen is None:
        part = max(better_errors, key=lambda k: better_errors[k])
        return {"cause": part, "detail": f"overestimated {better.notation()}", "better_errors_s": better_errors}
    chosen_errors = _errors(predictor, chosen, truth_parts(cloud, steady, model, chosen, tag))
    if chosen_violates:
        part = min(chosen_errors, key=lambda k: chosen_errors[k])
        return {
            "cause": part,
            "detail": f"underestimated {chosen.notation()}, which broke a constraint",
            "chosen_errors_s": chosen_errors,
        }
    shift = {k: weight(chosen) * chosen_errors[k] - weight(better) * better_errors[k] for k in chosen_errors}
    part = min(shift, key=lambda k: shift[k])
    return {
        "cause": part,
        "detail": f"its error moved {chosen.notation()} ahead of {better.notation()} in srifty's ranking",
        "chosen_errors_s": chosen_errors,
        "better_errors_s": better_errors,
    }
