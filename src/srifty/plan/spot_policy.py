"""srifty's spot policy for a planned configuration: its predicted times, fallback, loss rate and checkpoint
interval, as :class:`~srifty.spot.policy.SriftyPolicy` needs them. ``srifty run`` and ``srifty eval spot``
build the policy they call from here, so both act on the same object."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import replace

from srifty.catalog import Catalog, load_catalog
from srifty.errors import SpecError
from srifty.plan.problem import PlanProblem
from srifty.plan.scoring import Scored
from srifty.spec import JobSpec
from srifty.spot.losses import loss_process
from srifty.spot.policy import BASELINE_CHECKPOINT_S, JobPace, SriftyPolicy
from srifty.vocab import Config


def pace_of(problem: PlanProblem, scored: Scored) -> JobPace:
    """What a policy knows of ``scored``'s configurations: its predicted iteration time (the on-demand
    fallback is the same groups, so the same time), the restart overheads and the model's relative error."""
    estimate = scored.estimate
    fallback = scored.risk.fallback if scored.risk is not None else None
    error = estimate.iter_mean_error_s / estimate.iter_mean_s if estimate.iter_mean_s > 0 else 0.0
    return JobPace(
        spot_iter_s=estimate.iter_mean_s,
        on_demand_iter_s=estimate.iter_mean_s if fallback is not None else None,
        restart_s=problem.vm_launch_s + problem.checkpoint_restore_s,
        error_rel=error,
    )


def zone_prices(config: Config, zones: Collection[str] | None = None) -> tuple[tuple[str, float], ...]:
    """``config``'s price per hour (USD) in each zone of its region that offers every one of its spot groups
    (only those of ``zones`` when given), cheapest first; empty without spot groups."""
    common = config.spot_zones_offered()
    if zones is not None:
        common &= set(zones)
    priced = [(zone, replace(config, zone=zone).price_usd_per_hour()) for zone in sorted(common)]
    return tuple(sorted(priced, key=lambda item: (item[1], item[0])))


def other_zones(config: Config, allowed: Collection[str] = ()) -> list[str]:
    """The zones ``config``'s spot VMs may move to: the other zones of its region offering all its spot groups
    (only those of ``allowed`` when given), cheapest first."""
    home = config.spot_zone()
    return [zone for zone, _ in zone_prices(config, allowed or None) if zone != home]


def policy_for(problem: PlanProblem, scored: Scored, move_zones: Sequence[str] = ()) -> SriftyPolicy:
    """srifty's policy for running ``scored`` (a scored, placed configuration of ``problem``), allowed to move
    its spot VMs to the zones of ``move_zones`` (none: it stays in its zone)."""
    pace = pace_of(problem, scored)
    risk = scored.risk
    spot = [g for g in scored.config.groups if g.market == "spot"]
    if risk is None or not spot or problem.spot is None:
        return SriftyPolicy(pace, problem.confidence)
    where = (scored.config.zone, scored.config.region)
    figures = [(problem.spot.figures_for(g.instance.name, *where), g.count) for g in spot]
    process = loss_process(figures)
    interval = risk.checkpoint_interval_s or BASELINE_CHECKPOINT_S
    event_cost = pace.restart_s + interval / 2 + process.downtime_mean_s
    home = scored.config.spot_zone()
    prices = zone_prices(scored.config, {*move_zones, *([home] if home else [])}) if move_zones else ()
    groups = scored.config.groups
    offered = all(g.instance.on_demand_usd_per_hour is not None for g in groups)
    on_demand = sum(g.count * g.instance.price_usd_per_hour("on_demand") for g in groups) if offered else None
    return SriftyPolicy(
        pace,
        problem.confidence,
        process.events_per_s,
        event_cost,
        interval,
        zone_prices_usd_per_hour=prices,
        on_demand_usd_per_hour=on_demand,
        capacity_wait_s=process.downtime_mean_s,
        capacity_wait_sd_s=math.sqrt(max(process.downtime_var_s2, 0.0)),
    )


def scored_config(spec: JobSpec, config: Config, catalog: Catalog | None = None) -> tuple[PlanProblem, Scored]:
    """A configuration given by the user (``--config``, or a plan file) scored as ``srifty plan`` would: in the
    spec's problem of its zone (the cheapest zone offering all its spot groups when it names none), with the
    spec's profiles, bandwidth model and spot model.

    Raises:
        SpecError: no placement of the spec offers every group of ``config``.
    """
    from srifty.plan.api import load_spot_model
    from srifty.plan.build import ProfileLimits, build_problems
    from srifty.plan.inputs import resolve
    from srifty.plan.methods import Knowledge, get_method
    from srifty.plan.scoring import score

    cat = catalog or load_catalog()
    inputs = resolve(spec, cat, [g.instance for g in config.groups])
    spot, _ = load_spot_model(spec)
    problems = build_problems(spec, cat, ProfileLimits(inputs.profiles), spot=spot)
    wanted = {(g.instance.name, g.market) for g in config.groups}
    fits = [
        p
        for p in problems
        if p.placement is not None
        and p.placement.region == config.region
        and wanted <= {(c.instance.name, c.market) for c in p.candidates}
        and (config.zone is None or p.placement.zone in (config.zone, None))
    ]
    if not fits:
        raise SpecError(f"the spec offers no single placement with every group of {config.tagged()}")
    problem = min(fits, key=lambda p: (p.placement is None or p.placement.zone != config.zone, _price(p, config)))
    predictor = get_method("srifty").make_predictor(Knowledge(inputs.profiles, inputs.net_model, seed=spec.seed))
    return problem, score(problem, config, predictor.predict(config))


def _price(problem: PlanProblem, config: Config) -> float:
    prices = {(c.instance.name, c.market): c.price_usd_per_hour for c in problem.candidates}
    return sum(g.count * prices[(g.instance.name, g.market)] for g in config.groups)
