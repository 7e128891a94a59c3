"""The plan: the best configuration, alternatives, the time-vs-cost Pareto front, and why, as a value."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srifty.artifacts import write_json_artifact
from srifty.plan.problem import Placement, PlanProblem
from srifty.plan.prune import Pruning
from srifty.plan.risk import Risk
from srifty.plan.scoring import OutcomeT, Scored, preference

PLAN_KIND = "plan"
PLAN_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Infeasibility:
    """Why no configuration meets the constraints, the closest one, and what would make it feasible."""

    binding_constraint: str
    message: str
    closest: Scored | None


@dataclass(frozen=True)
class PlacementOutcome:
    """One placement's search: how, over how many configurations, and its best feasible configuration.

    Attributes:
        mode: ``exhaustive``, ``ilp``, ``heuristic``, or ``skipped`` (its bound could not win; see ``note``).
        n_evaluated: configurations its own search scored.
        best: the best feasible configuration placed there (from its search or the homogeneous study).
        n_scored: configurations placed there that were scored by any step.
    """

    placement: Placement | None
    mode: str
    space_size: int
    n_evaluated: int
    best: Scored | None
    note: str = ""
    n_scored: int = 0


@dataclass(frozen=True)
class Plan:
    """What ``srifty plan`` decided.

    Attributes:
        problem: the problem (placement) the chosen configuration belongs to.
        placements: every placement searched or skipped, with its best configuration.
        pruning: what pruning dropped before search, or ``None`` when it did not run.
        n_predicted: distinct configurations the predictor was asked about (a configuration in several zones
            is predicted once).
        explanation: why this configuration and placement won, in sentences.
        time_tolerance: for ``min_time``, how much slower than the fastest job time (a fraction) the chosen
            configuration may be, the cheapest within it winning; ``None`` when not applied.
        fastest: the fastest feasible configuration found, when ``time_tolerance`` chose another.
    """

    method: str
    mode: str
    problem: PlanProblem
    best: Scored | None
    alternatives: tuple[Scored, ...]
    pareto: tuple[Scored, ...]
    n_evaluated: int
    search_space_size: int
    n_ilp_solved: int
    solve_time_s: float
    infeasibility: Infeasibility | None
    profile_sources: dict[str, str] = field(default_factory=dict)
    profile_errors: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    network_sources: dict[str, str] = field(default_factory=dict)
    spot_source: str = ""
    spec_name: str | None = None
    spec_digest: str | None = None
    evaluated: tuple[Scored, ...] = ()
    placements: tuple[PlacementOutcome, ...] = ()
    pruning: Pruning | None = None
    n_predicted: int | None = None
    explanation: tuple[str, ...] = ()
    time_tolerance: float | None = None
    fastest: Scored | None = None

    @property
    def feasible(self) -> bool:
        """Whether the chosen configuration meets every constraint (baselines may choose one that does not)."""
        return self.best is not None and self.best.feasible

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without ``kind``/``schema_version``)."""
        p = self.problem
        return {
            "spec": {"name": self.spec_name, "digest": self.spec_digest},
            "method": self.method,
            "mode": self.mode,
            "goal": p.goal,
            "global_batch": p.global_batch,
            "iterations": p.iterations,
            "deadline_s": p.deadline_s,
            "budget_usd": p.budget_usd,
            "confidence": p.confidence,
            "overhead_s": p.overhead_s,
            "time_tolerance": self.time_tolerance,
            "candidates": [
                {
                    "instance_type": c.instance.name,
                    "market": c.market,
                    "quota": c.quota,
                    "gpus_per_vm": c.gpus,
                    "price_usd_per_hour": c.price_usd_per_hour,
                    "knee_batch": c.knee_batch,
                    "max_batch": c.max_batch,
                    "batches": list(c.batches),
                    "pruning": c.pruned_note,
                }
                for c in p.candidates
            ],
            "n_evaluated": self.n_evaluated,
            "n_simulator_calls": self.n_evaluated if self.n_predicted is None else self.n_predicted,
            "search_space_size": self.search_space_size,
            "placement": None if self.best is None else placement_dict(self.best),
            "placements": [outcome_dict(o, p.goal) for o in self.placements],
            "pruning": None if self.pruning is None else pruning_dict(self.pruning),
            "n_ilp_solved": self.n_ilp_solved,
            "solve_time_s": self.solve_time_s,
            "feasible": self.feasible,
            "best": None if self.best is None else scored_dict(self.best),
            "fastest": None if self.fastest is None else scored_dict(self.fastest),
            "alternatives": [scored_dict(s) for s in self.alternatives],
            "pareto": [scored_dict(s) for s in self.pareto],
            "infeasibility": None
            if self.infeasibility is None
            else {
                "binding_constraint": self.infeasibility.binding_constraint,
                "message": self.infeasibility.message,
                "closest": None if self.infeasibility.closest is None else scored_dict(self.infeasibility.closest),
            },
            "profile_sources": self.profile_sources,
            "profile_expected_errors": self.profile_errors,
            "network_sources": self.network_sources,
            "spot_source": self.spot_source,
            "notes": list(self.notes),
            "explanation": list(self.explanation),
            "evaluated": [point_dict(s) for s in self.evaluated],
        }

    def save(self, path: str | Path) -> Path:
        """Write the plan atomically as a versioned JSON artefact."""
        return write_json_artifact(path, PLAN_KIND, PLAN_SCHEMA_VERSION, self.to_dict())


def placement_dict(s: Scored) -> dict[str, Any]:
    """Where a configuration runs: cloud, region, zone (``None``: any zone of the region, on-demand only)."""
    config = s.config
    return {
        "cloud": config.cloud,
        "region": config.region,
        "zone": config.zone,
        "price_covers_host_vm": all(g.instance.price_covers_host_vm for g in config.groups),
    }


def outcome_dict(o: PlacementOutcome, goal: str) -> dict[str, Any]:
    """JSON-ready form of one placement's search."""
    where = o.placement
    return {
        "cloud": None if where is None else where.cloud,
        "region": None if where is None else where.region,
        "zone": None if where is None else where.zone,
        "price_covers_host_vm": True if where is None else where.price_covers_host_vm,
        "mode": o.mode,
        "search_space_size": o.space_size,
        "n_evaluated": o.n_evaluated,
        "note": o.note,
        "best": None
        if o.best is None
        else {"config": o.best.config.tagged(), "time_s": o.best.time_s, "cost_usd": o.best.cost_usd},
    }


def pruning_dict(p: Pruning) -> dict[str, Any]:
    """JSON-ready form of what pruning dropped."""
    return {
        "offers_before": p.n_offers_before,
        "offers_after": p.n_offers_after,
        "search_space_before": p.space_before,
        "search_space_after": p.space_after,
        "incumbent": None if p.incumbent is None else p.incumbent.config.tagged(),
        "types": [
            {
                "instance_type": t.instance_type,
                "market": t.market,
                "cloud": t.cloud,
                "region": t.region,
                "rule": t.rule,
                "reason": t.reason,
                "zones": list(t.zones),
                "bound": t.bound,
            }
            for t in p.types
        ],
        "placements": [{"placement": d.placement.label, "reason": d.reason} for d in p.placements],
    }


def scored_dict(s: Scored) -> dict[str, Any]:
    """JSON-ready form of one scored configuration."""
    return {
        "config": s.config.notation(),
        **placement_dict(s),
        "groups": [
            {
                "instance_type": g.instance.name,
                "market": g.market,
                "count": g.count,
                "gpus_per_vm": g.instance.gpus_per_vm,
                "local_batch": g.local_batch,
                "gradient_weight": g.local_batch / s.config.global_batch,
                "price_usd_per_hour": price,
            }
            for g, price in zip(s.config.groups, s.config.group_prices_usd_per_hour(), strict=True)
        ],
        "world_size": s.config.world_size,
        "n_vms": s.config.n_vms,
        "parallelism": s.config.parallelism,
        "shard_group_size": s.config.shard_size,
        "activation_checkpointing": s.config.checkpointing,
        "memory_peak_bytes": s.estimate.memory_peak_bytes,
        "memory_usable_bytes": s.estimate.memory_usable_bytes,
        "iter_mean_s": s.estimate.iter_mean_s,
        "iter_p5_s": s.estimate.iter_p5_s,
        "iter_p95_s": s.estimate.iter_p95_s,
        "iter_std_s": s.estimate.iter_std_s,
        "iter_mean_error_s": s.estimate.iter_mean_error_s,
        "compute_s": s.estimate.compute_s,
        "comm_exposed_s": s.estimate.comm_exposed_s,
        "time_s": s.time_s,
        "cost_usd": s.cost_usd,
        "price_usd_per_hour": s.price_usd_per_hour,
        "throughput_samples_per_s": s.throughput_samples_per_s,
        "p_meet_deadline": s.p_meet_deadline,
        "p_meet_budget": s.p_meet_budget,
        "violations": list(s.violations),
        "estimated_profiles": s.estimate.estimated_profiles,
        "iteration_model": s.estimate.iteration_model,
        "risk": None if s.risk is None else risk_dict(s.risk),
    }


def risk_dict(r: Risk) -> dict[str, Any]:
    """JSON-ready form of a configuration's time and cost distributions (:mod:`srifty.plan.risk`)."""
    return {
        "confidence": r.confidence,
        "p_meet_deadline": r.p_meet_deadline,
        "p_meet_budget": r.p_meet_budget,
        "time_mean_s": r.time_mean_s,
        "time_p95_s": r.time_p95_s,
        "cost_mean_usd": r.cost_mean_usd,
        "cost_p95_usd": r.cost_p95_usd,
        "spread_s": r.spread_s,
        "expected_spot_losses": r.expected_losses,
        "expected_spot_vms_lost": r.expected_vms_lost,
        "p_obtain_spot_at_start": r.p_obtain_start,
        "checkpoint_interval_s": r.checkpoint_interval_s,
        "core_share": r.core_share,
        "fallback": None
        if r.fallback is None
        else {
            "config": r.fallback.tagged(),
            "price_usd_per_hour": r.fallback.price_usd_per_hour(),
            "p_used": r.p_fallback,
        },
        "spot_sources": [{"instance_type": name, "source": source} for name, source in r.spot_sources],
    }


def point_dict(s: Scored) -> dict[str, Any]:
    """A compact record of one evaluated configuration (for reports): what it is and what was predicted."""
    return {
        "config": s.config.notation(),
        "zone": s.config.zone,
        "instance_types": sorted({g.instance.name for g in s.config.groups}),
        "world_size": s.config.world_size,
        "n_vms": s.config.n_vms,
        "parallelism": s.config.parallelism,
        "iter_mean_s": s.estimate.iter_mean_s,
        "time_s": s.time_s,
        "cost_usd": s.cost_usd,
        "throughput_samples_per_s": s.throughput_samples_per_s,
        "feasible": s.feasible,
    }


def pareto_front(scored: Sequence[OutcomeT]) -> list[OutcomeT]:
    """Configurations no other beats on both time and cost, fastest first (predicted or true outcomes)."""
    front: list[OutcomeT] = []
    best_cost = float("inf")
    for s in sorted(scored, key=lambda x: (x.time_s, x.cost_usd, x.config.notation())):
        if s.cost_usd < best_cost - 1e-12:
            front.append(s)
            best_cost = s.cost_usd
    return front


def rank(problem: PlanProblem, scored: Sequence[Scored]) -> list[Scored]:
    """Feasible configurations, best first by the goal (ties broken by notation, for determinism)."""
    return sorted((s for s in scored if s.feasible), key=lambda s: preference(problem.goal, s))
