"""Pruning the search before it starts: instance types and zones that cannot be in the optimum.

The paper prunes its VM search space with a throughput and cost-efficiency study across instance types.
Plain pairwise dominance ("the same GPU at a higher price per GPU, network no better") is not safe here:
every configuration must place the global batch *exactly*, with one power-of-two batch per type and a quota
per type, so a dearer twin can still complete the cheapest configuration (a cheaper type at its quota,
or at 128 while the twin takes the remaining 64). srifty therefore drops a type only where a **bound**
proves that no configuration containing it can be chosen; the dominance it sees is named in the reason.

Bounds (``N`` iterations, overhead ``O``, ``t_c(b)`` a floor under the compute time of one iteration of
type ``c`` at local batch ``b``, see :func:`compute_floor_fn`; ``g_c`` GPUs per VM, ``p_c`` price per hour):

* any configuration with ``c`` at batch ``b`` takes ``T ≥ T_c(b) = N·t_c(b) + O`` (the slowest rank sets
  the iteration), so at least ``LB_time(c) = T_c(b_min)``;
* it costs ``Σ_i p_i·n_i·T``, and each group ``i`` holds ``s_i = n_i·g_i·b_i`` samples for at least
  ``max(T_i(b_i), T_c(b))``, so the cost is at least ``Σ_i s_i·κ_i(b_i)`` with the cost per sample
  ``κ_i(b_i) = p_i·max(T_i(b_i), T_c(b)) / (g_i·b_i)``; ``c`` holds at least one VM, the rest at best at the
  cheapest ``κ``: ``LB_cost(c) = min_b [g_c·b·κ_c(b) + (B − g_c·b)·min_{i,b'} κ_i(b')]``.

A type is dropped from a zone when its bound misses the deadline or budget, or exceeds the objective of a
feasible configuration already found (the *incumbent*: the best of the homogeneous study, every type at
every allowed batch on its own, which is also part of the search). The deadline is judged at the problem's
confidence: every outcome of a job's time is at least ``LB_time``, and its spread at least the VM launch's,
so a type with ``LB_time > deadline − z_c·σ_launch`` cannot meet it with probability ``c``
(:func:`deadline_reach_s`). A zone is dropped when another zone of its region offers every remaining type at
no higher price and the spot model judges its spot types alike there (predictions do not depend on the zone,
so each of its configurations costs no less there and risks no more). The floor under compute time is the
profile's mean less four standard errors of the simulator's sample mean, so the simulator's noise cannot
undercut it in practice.

Spot risk (on-demand fallback, waits for capacity, losses) is otherwise left out of the bounds: they price
spot VMs at their bare compute cost (at the lower of the spot and on-demand prices: the fallback runs
on-demand), which stays a lower bound (a spot configuration's expected cost and time are never below it) but a
loose one. A sound bound with the fallback's cost or the start wait in it needs a
floor under the tail of the delay distribution (:func:`srifty.spot.losses.delay_nodes`, a moment-matched
log-normal), whose log-spread no instance type alone bounds usefully.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist

import numpy as np

from srifty.compute import Profile
from srifty.plan.predict import Predictor
from srifty.plan.problem import Candidate, Placement, PlanProblem
from srifty.plan.risk import LAUNCH_SPREAD
from srifty.plan.scoring import Scored, best_of, score
from srifty.plan.space import count_configs
from srifty.sim import profile_for
from srifty.units import SECONDS_PER_HOUR, usd_text
from srifty.vocab import Config, ConfigGroup

FloorFn = Callable[[Candidate, int], float]

#: Standard errors of the simulator's mean iteration time kept below the profile's mean compute time.
NOISE_SIGMAS = 4.0
_STANDARD_NORMAL = NormalDist()


@dataclass(frozen=True)
class PrunedType:
    """One offer (instance type, market, region) dropped before search, and why.

    Attributes:
        rule: ``no profile``, ``no batch``, ``deadline``, ``budget`` or ``bound``.
        zones: the zones it was dropped from (empty: everywhere it is offered).
        bound: the lower bound that proved it (s for time rules, USD for cost rules), where one did.
    """

    instance_type: str
    market: str
    cloud: str
    region: str
    rule: str
    reason: str
    zones: tuple[str, ...] = ()
    bound: float | None = None

    @property
    def key(self) -> str:
        """``"aws us-east-1 p4d.24xlarge/spot"``."""
        return f"{self.cloud} {self.region} {self.instance_type}/{self.market}"


@dataclass(frozen=True)
class PrunedPlacement:
    """A zone (or region) searched nowhere, and why."""

    placement: Placement
    reason: str


@dataclass(frozen=True)
class Pruning:
    """What pruning kept and dropped.

    Attributes:
        problems: the placements left to search, each with its remaining candidates.
        types: offers dropped, one entry and one reason per (type, market, region).
        placements: placements dropped.
        n_offers_before, n_offers_after: distinct (type, market, region) offers before and after.
        space_before, space_after: configurations in every placement before, and in what is left after.
        study: the homogeneous configurations predicted (the incumbent is the best feasible one).
        incumbent: the best feasible configuration of the study, or ``None``.
        lower_bounds: per remaining placement, a bound under the objective of any configuration there.
        original: every placement before pruning (configurations found are priced in each that offers them).
    """

    problems: tuple[PlanProblem, ...]
    types: tuple[PrunedType, ...]
    placements: tuple[PrunedPlacement, ...]
    n_offers_before: int
    n_offers_after: int
    space_before: int
    space_after: int
    study: tuple[Scored, ...] = ()
    incumbent: Scored | None = None
    lower_bounds: Mapping[Placement, float] = field(default_factory=dict)
    original: tuple[PlanProblem, ...] = ()


def compute_floor_fn(
    profiles: Mapping[str, Profile],
    iters: int,
    spread_scale: float = 1.0,
    phases: tuple[str, ...] = ("fw", "bw", "step"),
) -> FloorFn:
    """``t_c(b)`` in seconds: the mean time of ``phases`` (forward + backward + step; a sharded configuration's
    step is over its shard, so its floor leaves the step out) of one GPU of ``c`` at batch ``b``, less
    :data:`NOISE_SIGMAS` standard errors of a mean over ``iters`` simulated iterations."""
    cache: dict[tuple[int, int], float] = {}

    def floor_s(cand: Candidate, batch: int) -> float:
        profile = profile_for(profiles, cand.instance)
        key = (id(profile), batch)
        if key not in cache:
            mean = sum(float(profile.predict_ms(ph, batch)) for ph in phases)
            std = math.sqrt(sum(float(profile.std_ms(ph, batch)) ** 2 for ph in phases)) * spread_scale
            cache[key] = max(mean - NOISE_SIGMAS * std / math.sqrt(max(iters, 1)), 0.0) / 1000.0
        return cache[key]

    return floor_s


def homogeneous(problem: PlanProblem) -> list[Config]:
    """Every single-type configuration of ``problem`` that places the global batch exactly, placed there."""
    out = []
    zone = problem.placement.zone if problem.placement is not None else None
    for cand in problem.candidates:
        if problem.requires_spot and cand.market != "spot":
            continue
        for b in cand.batches:
            count, rest = divmod(problem.global_batch, cand.gpus * b)
            if rest == 0 and 1 <= count <= cand.quota:
                out.append(Config((ConfigGroup(cand.instance, count, b, cand.market),), zone))
    return out


@dataclass(frozen=True)
class _Bounds:
    """Per candidate of one problem: the time and cost lower bounds and the batch that attains each."""

    time_s: np.ndarray
    cost_usd: np.ndarray


def _bounds(problem: PlanProblem, floor_s: FloorFn) -> _Bounds:
    """``LB_time`` and ``LB_cost`` of every candidate (``inf`` where it has no batch)."""
    n, big_b = problem.iterations, problem.global_batch
    rows = [(i, c, b) for i, c in enumerate(problem.candidates) for b in c.batches]
    times = np.array([n * floor_s(c, b) + problem.overhead_s for _, c, b in rows])
    per_sample = np.array([_price_floor(c) / (SECONDS_PER_HOUR * c.gpus * b) for _, c, b in rows])
    samples = np.array([c.gpus * b for _, c, b in rows], dtype=float)
    owner = np.array([i for i, _, _ in rows], dtype=int)
    k = len(problem.candidates)
    lb_time = np.full(k, np.inf)
    lb_cost = np.full(k, np.inf)
    if not rows:
        return _Bounds(lb_time, lb_cost)
    # kappa[r, q]: cost per sample of row q when the job takes at least row r's time.
    kappa = per_sample[None, :] * np.maximum(times[None, :], times[:, None])
    cheapest = kappa.min(axis=1)
    own = per_sample * times
    cost = samples * own + (big_b - samples) * cheapest
    np.minimum.at(lb_time, owner, times)
    np.minimum.at(lb_cost, owner, cost)
    return _Bounds(lb_time, lb_cost)


def _price_floor(cand: Candidate) -> float:
    """The least a VM of ``cand`` can cost an hour: a spot VM's part of the job may run on the on-demand
    fallback, so its floor is the lower of its spot and on-demand prices (a spot price above the on-demand one
    exists: hypothesis found the bound unsound there)."""
    on_demand = cand.instance.on_demand_usd_per_hour
    if cand.market == "spot" and on_demand is not None:
        return min(cand.price_usd_per_hour, on_demand)
    return cand.price_usd_per_hour


def _problem_bound(problem: PlanProblem, bounds: _Bounds, keep: Sequence[bool]) -> float:
    """A bound under the goal's objective of any configuration of ``problem`` with the kept candidates."""
    values = (bounds.time_s if problem.goal == "min_time" else bounds.cost_usd)[np.asarray(keep, dtype=bool)]
    return float(values.min()) if len(values) else math.inf


def deadline_reach_s(problem: PlanProblem) -> float | None:
    """The latest a configuration's job time can be sure to reach and still meet the deadline with the
    problem's confidence ``c``: ``deadline − z_c·σ_launch`` (``None`` without a deadline).

    Every outcome of a configuration's job time (:mod:`srifty.plan.risk`; an on-demand fallback's too) is at
    least its compute time plus the launch and restore overhead, and its normal spread ``σ`` is at least the
    launch's, ``σ_launch`` (:data:`~srifty.plan.risk.LAUNCH_SPREAD` of the launch time; model error,
    iterations and spot losses only add). So with every outcome at ``T ≥ L``, ``P(deadline) = Σ w Φ((D − T)/σ)
    ≤ Φ((D − L)/σ_launch)`` when ``L ≤ D``, and ``< 0.5 ≤ c`` when ``L > D``: below ``c`` once
    ``L > D − z_c·σ_launch``."""
    if problem.deadline_s is None:
        return None
    spread = LAUNCH_SPREAD * problem.vm_launch_s
    return problem.deadline_s - _STANDARD_NORMAL.inv_cdf(max(problem.confidence, 0.5)) * spread


def _outcome_floor_s(problem: PlanProblem, lb_time: float) -> float:
    """A floor under every job-time outcome from ``lb_time`` (``N·t_c + overhead``): an on-demand fallback's
    outcome pays one launch and one restore, which a caller's ``overhead_s`` may exceed."""
    restart = problem.vm_launch_s + problem.checkpoint_restore_s
    return lb_time - max(problem.overhead_s - restart, 0.0)


def _rule(
    problem: PlanProblem, lb_time: float, lb_cost: float, incumbent: Scored | None
) -> tuple[str, float, str] | None:
    """The first rule that drops a candidate with these bounds: ``(rule, bound, why)``, or ``None``."""
    if not math.isfinite(lb_time):
        return None
    reach = deadline_reach_s(problem)
    if problem.deadline_s is not None and lb_time > problem.deadline_s:
        return "deadline", lb_time, f"its compute alone takes ≥ {lb_time:,.0f} s > deadline {problem.deadline_s:,.0f} s"
    if reach is not None and _outcome_floor_s(problem, lb_time) > reach:
        return (
            "deadline",
            lb_time,
            f"its compute alone takes ≥ {lb_time:,.0f} s, and the VM launch alone spreads a job's time by "
            f"±{LAUNCH_SPREAD * problem.vm_launch_s:,.0f} s (1σ): P(deadline {problem.deadline_s:,.0f} s) < "
            f"confidence {problem.confidence:g}",
        )
    if problem.budget_usd is not None and lb_cost > problem.budget_usd:
        return (
            "budget",
            lb_cost,
            f"any configuration with it costs ≥ {usd_text(lb_cost)} > budget {usd_text(problem.budget_usd)}",
        )
    if incumbent is None:
        return None
    if problem.goal == "min_time" and lb_time > incumbent.time_s:
        return (
            "bound",
            lb_time,
            f"any configuration with it takes ≥ {lb_time:,.0f} s, more than {incumbent.time_s:,.0f} s for "
            f"{incumbent.config} ({incumbent.config.where()})",
        )
    if problem.goal == "min_cost" and lb_cost > incumbent.cost_usd:
        return (
            "bound",
            lb_cost,
            f"any configuration with it costs ≥ {usd_text(lb_cost)}, more than {usd_text(incumbent.cost_usd)} for "
            f"{incumbent.config} ({incumbent.config.where()})",
        )
    return None


def _dominator(problem: PlanProblem, cand: Candidate, study_best: Mapping[str, tuple[float, float]]) -> str:
    """The dominance the paper's study would see, in words (empty when none): the same GPU at a higher price
    per GPU with no better network, or a type beating it on best throughput and throughput per dollar."""
    mine = cand.price_usd_per_hour / cand.gpus
    rated = cand.instance.rated_network_gbps
    for other in sorted(problem.candidates, key=lambda o: o.price_usd_per_hour / o.gpus):
        if other is cand or other.instance.gpu_name != cand.instance.gpu_name:
            continue
        theirs = other.price_usd_per_hour / other.gpus
        other_rated = other.instance.rated_network_gbps
        no_better = rated is None or (other_rated is not None and other_rated >= rated)
        if theirs < mine and no_better:
            net = f"{rated:g} Gbps" if rated is not None else "unrated"
            return (
                f"same {cand.instance.gpu_name} as {other.key} at {mine / theirs:.1f}× its price per GPU, network no "
                f"better ({net}); "
            )
    best = study_best.get(cand.key)
    if best is not None:
        for other in problem.candidates:
            theirs_best = study_best.get(other.key)
            beaten = theirs_best is not None and theirs_best[0] > best[0] and theirs_best[1] > best[1]
            if other is not cand and theirs_best is not None and beaten:
                return (
                    f"{other.key} beats it on best throughput ({theirs_best[0]:,.0f} vs {best[0]:,.0f} samples/s) and "
                    f"on samples per dollar; "
                )
    return ""


def _study_best(problem: PlanProblem, scored: Sequence[Scored]) -> dict[str, tuple[float, float]]:
    """Per candidate key: its best throughput (samples/s) and best samples per dollar, homogeneous."""
    out: dict[str, tuple[float, float]] = {}
    for s in scored:
        group = s.config.groups[0]
        key = f"{group.instance.name}/{group.market}"
        rate = s.throughput_samples_per_s
        per_usd = rate * SECONDS_PER_HOUR / max(s.price_usd_per_hour, 1e-12)
        old = out.get(key, (0.0, 0.0))
        out[key] = (max(old[0], rate), max(old[1], per_usd))
    return out


def _holds(incumbent: Scored, problem: PlanProblem, cand: Candidate) -> bool:
    """Whether ``cand`` in ``problem``'s placement is the incumbent's own (never dropped, so that the search
    always keeps the incumbent's placement)."""
    config = incumbent.config
    group = config.groups[0]
    here = problem.placement is None or (config.region, config.zone) == (
        problem.placement.region,
        problem.placement.zone,
    )
    return here and group.instance == cand.instance and group.market == cand.market


def _scope(problem: PlanProblem) -> bool:
    """Whether the problem's prices cover whole VMs (``False`` for GPU-attachment prices)."""
    return problem.placement is None or problem.placement.price_covers_host_vm


def _dominated_by(mine: PlanProblem, other: PlanProblem, ignore_prices: bool = False) -> bool:
    """Whether ``other`` (a zone of the same region) offers every candidate of ``mine`` at no higher price
    (``ignore_prices``: at any price; see :func:`_drop_dominated_zones`)."""
    if other.placement is None or mine.placement is None or other.requires_spot != mine.requires_spot:
        return False
    if (other.placement.cloud, other.placement.region) != (mine.placement.cloud, mine.placement.region):
        return False
    theirs = {c.key: c for c in other.candidates}
    for cand in mine.candidates:
        twin = theirs.get(cand.key)
        if twin is None or twin.quota < cand.quota:
            return False
        if not ignore_prices and twin.price_usd_per_hour > cand.price_usd_per_hour:
            return False
        if twin.batches != cand.batches:
            return False
        if cand.market == "spot" and not _same_spot_figures(mine, other, cand.instance.name):
            return False
    return True


def _same_spot_figures(mine: PlanProblem, other: PlanProblem, instance_type: str) -> bool:
    """Whether the spot model judges ``instance_type``'s spot VMs alike in both zones (a zone with a trace
    of its own may lose VMs more or less often than its neighbours; prices alone then decide nothing)."""
    if mine.spot is None and other.spot is None:
        return True
    if mine.spot is None or other.spot is None or mine.placement is None or other.placement is None:
        return False
    here = mine.spot.figures_for(instance_type, mine.placement.zone, mine.placement.region)
    there = other.spot.figures_for(instance_type, other.placement.zone, other.placement.region)
    return here.figures == there.figures


def prune(
    problems: Sequence[PlanProblem],
    predictor: Predictor,
    floor_s: FloorFn,
    excluded: Sequence[PrunedType] = (),
) -> Pruning:
    """Drop the offers and zones of ``problems`` that cannot hold the optimum (see the module docstring).

    Args:
        predictor: predicts the homogeneous study (each configuration's prediction is the search's own).
        floor_s: ``t_c(b)``, a floor under one iteration's compute time (see :func:`compute_floor_fn`).
        excluded: offers already dropped before the problems were built (no profile), reported with the rest.
    """
    offer_ids = {(c.instance.cloud, c.instance.region, c.key) for p in problems for c in p.candidates}
    offer_ids |= {(t.cloud, t.region, f"{t.instance_type}/{t.market}") for t in excluded}
    space_before = sum(count_configs(p) for p in problems)
    study: list[Scored] = []
    per_problem: list[list[Scored]] = []
    configs_of = [homogeneous(problem) for problem in problems]
    prefetch = getattr(predictor, "prefetch", None)
    if prefetch is not None:  # the whole study's network questions in one bandwidth-model call
        prefetch([c for configs in configs_of for c in configs])
    for problem, configs in zip(problems, configs_of, strict=True):
        scored = [score(problem, c, predictor.predict(c)) for c in configs]
        per_problem.append(scored)
        study.extend(scored)
    goal = problems[0].goal if problems else "min_time"
    # Prices that cover only a GPU attachment (GCP rows) are never compared with full-VM prices: one
    # incumbent per price scope.
    incumbents = {
        scope: best_of(goal, [s for p, ss in zip(problems, per_problem, strict=True) if _scope(p) == scope for s in ss])
        for scope in {_scope(p) for p in problems}
    }
    incumbent = incumbents.get(True) or incumbents.get(False)
    drops: dict[tuple[str, str, str], list[tuple[Placement | None, str, float, str]]] = {}
    present: dict[tuple[str, str, str], int] = {}
    kept_problems: list[PlanProblem] = []
    dropped_places: list[PrunedPlacement] = []
    bounds_of: dict[int, tuple[_Bounds, list[bool]]] = {}
    for index, (problem, scored) in enumerate(zip(problems, per_problem, strict=True)):
        bounds = _bounds(problem, floor_s)
        best_here = _study_best(problem, scored)
        keep = []
        for j, cand in enumerate(problem.candidates):
            ident = (cand.instance.cloud, cand.instance.region, cand.key)
            present[ident] = present.get(ident, 0) + 1
            if not cand.batches:
                drops.setdefault(ident, []).append((problem.placement, "no batch", math.nan, cand.pruned_note))
                keep.append(False)
                continue
            inc = incumbents[_scope(problem)]
            found = _rule(problem, float(bounds.time_s[j]), float(bounds.cost_usd[j]), inc)
            if found is None or (inc is not None and _holds(inc, problem, cand)):
                keep.append(True)
                continue
            rule, value, why = found
            prefix = _dominator(problem, cand, best_here) if rule == "bound" else ""
            drops.setdefault(ident, []).append((problem.placement, rule, value, prefix + why))
            keep.append(False)
        if not any(keep):
            if problem.placement is not None:
                dropped_places.append(PrunedPlacement(problem.placement, "every type offered there was pruned"))
            continue
        remaining = tuple(c for c, k in zip(problem.candidates, keep, strict=True) if k)
        bounds_of[index] = (bounds, keep)
        kept_problems.append(replace(problem, candidates=remaining))
    ignore_prices = goal == "min_time" and all(p.budget_usd is None for p in problems)
    kept_problems, dominated = _drop_dominated_zones(kept_problems, ignore_prices)
    dropped_places.extend(dominated)
    lower = {}
    for index, problem in enumerate(problems):
        if index in bounds_of and problem.placement is not None:
            lower[problem.placement] = _problem_bound(problem, *bounds_of[index])
    types = _report(drops, present, excluded)
    kept_ids = {(c.instance.cloud, c.instance.region, c.key) for p in kept_problems for c in p.candidates}
    return Pruning(
        problems=tuple(kept_problems),
        types=types,
        placements=tuple(dropped_places),
        n_offers_before=len(offer_ids),
        n_offers_after=len(kept_ids),
        space_before=space_before,
        space_after=sum(count_configs(p) for p in kept_problems),
        study=tuple(study),
        incumbent=incumbent,
        lower_bounds={p: v for p, v in lower.items() if any(q.placement == p for q in kept_problems)},
        original=tuple(problems),
    )


def unpruned(problems: Sequence[PlanProblem], excluded: Sequence[PrunedType] = ()) -> Pruning:
    """No pruning: every problem kept (only the ``excluded`` offers, which had no profile, are reported)."""
    offer_ids = {(c.instance.cloud, c.instance.region, c.key) for p in problems for c in p.candidates}
    size = sum(count_configs(p) for p in problems)
    return Pruning(
        problems=tuple(problems),
        types=tuple(excluded),
        placements=(),
        n_offers_before=len(offer_ids) + len({(t.cloud, t.region, t.instance_type, t.market) for t in excluded}),
        n_offers_after=len(offer_ids),
        space_before=size,
        space_after=size,
        original=tuple(problems),
    )


def _drop_dominated_zones(
    problems: list[PlanProblem], ignore_prices: bool = False
) -> tuple[list[PlanProblem], list[PrunedPlacement]]:
    """Zones another zone of the same region dominates (ties: the first by name is kept).

    With ``ignore_prices`` (minimum time, no budget), a zone is dominated by one that offers every type it
    offers at any price: a configuration's time does not depend on its zone, and the planner prices every
    configuration it finds in every zone that offers it (:func:`srifty.plan.planner.make_plan`), so the
    cheaper zone still wins the tie.
    """
    kept: list[PlanProblem] = []
    dropped: list[PrunedPlacement] = []
    for i, mine in enumerate(problems):
        if mine.placement is None or mine.placement.zone is None:
            kept.append(mine)
            continue
        winner = next(
            (
                other
                for j, other in enumerate(problems)
                if j != i
                and other.placement is not None
                and other.placement.zone is not None
                and _dominated_by(mine, other, ignore_prices)
                and (not _dominated_by(other, mine, ignore_prices) or j < i)
            ),
            None,
        )
        if winner is None:
            kept.append(mine)
        else:
            assert winner.placement is not None and mine.placement is not None
            dropped.append(
                PrunedPlacement(
                    mine.placement,
                    f"zone {winner.placement.zone} offers every type left in {mine.placement.zone}"
                    + (" (what is found there is priced here too)" if ignore_prices else " at no higher price"),
                )
            )
    return kept, dropped


def _report(
    drops: Mapping[tuple[str, str, str], list[tuple[Placement | None, str, float, str]]],
    present: Mapping[tuple[str, str, str], int],
    excluded: Sequence[PrunedType],
) -> tuple[PrunedType, ...]:
    """One entry per offer dropped from every placement it was in, with the reason where its bound was lowest
    (the zone where it came closest to staying)."""
    out = list(excluded)
    for ident, entries in sorted(drops.items()):
        if len(entries) < present.get(ident, 0):
            continue  # kept somewhere
        cloud, region, key = ident
        name, market = key.rsplit("/", 1)
        finite = [e for e in entries if math.isfinite(e[2])]
        placement, rule, value, why = min(finite, key=lambda e: e[2]) if finite else entries[0]
        zones = tuple(sorted({e[0].zone for e in entries if e[0] is not None and e[0].zone is not None}))
        where = f" (in {placement.zone}, its closest zone)" if placement is not None and len(zones) > 1 else ""
        out.append(
            PrunedType(name, market, cloud, region, rule, why + where, zones, value if math.isfinite(value) else None)
        )
    return tuple(sorted(out, key=lambda t: (t.cloud, t.region, t.rule, t.instance_type, t.market)))


__all__ = [
    "NOISE_SIGMAS",
    "PrunedPlacement",
    "PrunedType",
    "Pruning",
    "compute_floor_fn",
    "deadline_reach_s",
    "homogeneous",
    "prune",
    "unpruned",
]
