"""``srifty eval spot``: spot policies judged by replaying real spot traces on the emulated cloud.

srifty learns the emulated cloud as it would a real one (4-probe profiles per GPU type, a bandwidth model
fitted on its probes: :func:`~srifty.evaluate.scenario.learned_inputs`) and plans the spec with its spot
model. Its plan ``P`` (spot, on-demand or mixed, in one zone) fixes the configurations every policy runs:

* ``srifty``: ``P`` under srifty's policy (:func:`srifty.plan.spot_policy.policy_for`), its on-demand twin
  as the fallback, its on-demand core (if any) while spot is away;
* ``on_demand``: the on-demand twin (``P``'s groups, every VM on-demand);
* ``spot_restart``: the spot twin (every VM spot), relaunched whenever capacity returns;
* ``uniform_progress``: the spot twin and the on-demand twin under Uniform Progress;
* ``oracle``: the spot twin and the on-demand twin, knowing the trace (a lower bound on cost).

Every policy runs from the same start times (spread over the traces) with the same launch-time draws; the
judge (:mod:`srifty.evaluate.spot_replay`) reads the traces and the emulated cloud's truth only.

Zone moves (``move_zones``, on by default): a run replayed on a trace may also be given the traces recorded
with it (the same folder, gap and length) of other zones of its region, as the region's other zones. Trace
files name zones (``us-west-2b``) and the catalog zone IDs (``usw2-az2``), which AWS maps per account, so the
pairing is an assumption, stated: the other traces (by zone name) go to the catalog's other zones that offer
the plan's spot types (cheapest first). srifty's policy may move there; the baselines stay in their zone
(``spot_restart`` and ``uniform_progress`` are single-zone rules); the oracle may use every zone, so it stays a
lower bound. Policies that
need a configuration the spec does not offer (no on-demand, no spot) are left out, and the result says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srifty.artifacts import write_json_artifact
from srifty.catalog import Catalog, load_catalog
from srifty.cloud import named_rng
from srifty.errors import SpecError
from srifty.evaluate.scenario import learned_inputs
from srifty.evaluate.spot_replay import ReplayJob, RunRecord, oracle_run, replay, start_times_s, summarise
from srifty.evaluate.world import World, make_world
from srifty.plan import PlanInputs, core_config, expand_offers, other_zones, pace_of, plan_job, policy_for, spec_area
from srifty.spec import JobSpec
from srifty.spot import SpotModel
from srifty.spot.policy import OnDemandOnly, SpotRestart, UniformProgress
from srifty.vocab import Config, ConfigGroup, SpotPolicy, SpotTrace

EVAL_SPOT_KIND = "eval-spot"
EVAL_SPOT_SCHEMA_VERSION = 1
POLICIES = ("srifty", "on_demand", "spot_restart", "uniform_progress", "oracle")


@dataclass
class SpotEvalResult:
    """Every policy's replayed runs and their summaries.

    Attributes:
        plan: srifty's configuration, its twins and its promise (predicted).
        policies: per policy, the judge's figures (:func:`~srifty.evaluate.spot_replay.summarise`).
        notes: policies left out and why.
    """

    spec: str
    plan: dict[str, Any]
    traces: list[str]
    starts: int
    seed: int
    policies: dict[str, dict[str, Any]]
    records: list[RunRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"policies": {NAME: {...}}, ...}`` with what was judged beside it."""
        return {
            "policies": self.policies,
            "spec": self.spec,
            "plan": self.plan,
            "traces": self.traces,
            "starts": self.starts,
            "seed": self.seed,
            "notes": self.notes,
        }

    def save(self, path: str | Path) -> Path:
        """Write the result atomically as a versioned JSON artefact (kind ``eval-spot``)."""
        return write_json_artifact(path, EVAL_SPOT_KIND, EVAL_SPOT_SCHEMA_VERSION, self.to_dict())


def learn_for(
    spec: JobSpec, seed: int, catalog: Catalog, profile_dirs: Sequence[Path] = ()
) -> tuple[World, PlanInputs]:
    """The emulated cloud of ``seed`` training the spec's model, and what srifty learns of it (profiles and a
    bandwidth model, as ``srifty run --emulated`` does)."""
    cloud_name, region = spec_area(spec, catalog)
    dirs = (*profile_dirs, *spec.model.profiles)
    world = make_world([spec.model.name or ""], seed, catalog, region, cloud_name, dirs, spec.model.precision)
    return world, learned_inputs(spec, world, seed, catalog)


def twin(config: Config, market: str, zone: str | None) -> Config:
    """``config``'s groups all on ``market`` (a type's groups merged when their batches agree)."""
    merged: dict[tuple[str, int], int] = {}
    first: dict[tuple[str, int], ConfigGroup] = {}
    for g in config.groups:
        key = (g.instance.name, g.local_batch)
        merged[key] = merged.get(key, 0) + g.count
        first.setdefault(key, g)
    groups = tuple(ConfigGroup(first[k].instance, n, k[1], market) for k, n in merged.items())  # type: ignore[arg-type]
    return Config(groups, zone if market == "spot" else None)


def eval_spot(
    spec: JobSpec,
    traces: Sequence[SpotTrace],
    starts: int = 50,
    seed: int = 0,
    spot_model: SpotModel | None = None,
    catalog: Catalog | None = None,
    profile_dirs: Sequence[Path] = (),
    learned: tuple[World, PlanInputs] | None = None,
    move_zones: bool = True,
    zone_pool: Sequence[SpotTrace] = (),
) -> SpotEvalResult:
    """Judge srifty's spot policy and the baselines on ``traces`` (see the module docstring).

    Args:
        learned: the emulated cloud and what srifty learned of it (:func:`learn_for`), to reuse across calls.
        move_zones: give each run the traces recorded with its own as the region's other zones.
        zone_pool: more traces that may stand for other zones (never replayed as a run's own).

    Raises:
        SpecError: no traces, fewer than one start, a spec planned in several regions, or one srifty finds no
            plan for (the infeasibility named).
    """
    if not traces:
        raise SpecError("srifty eval spot needs at least one trace (--trace FILE)")
    if starts < 1:
        raise SpecError(f"--starts must be at least 1, got {starts}")
    cat = catalog or load_catalog()
    world, inputs = learned or learn_for(spec, seed, cat, profile_dirs)
    cloud = world.cloud
    plan, _ = plan_job(spec, cat, inputs, spot_model=spot_model)
    if plan.best is None:
        why = plan.infeasibility.message if plan.infeasibility else "no feasible configuration"
        raise SpecError(f"srifty finds no plan for {spec.name or 'the spec'} to replay: {why}")
    best, problem = plan.best, plan.problem
    chosen = best.config
    offered = {(o.instance.name, o.market) for o in expand_offers(spec, cat)}
    types = {g.instance.name for g in chosen.groups}
    spot_zone = chosen.zone or _cheapest_common_zone(chosen)
    spot_twin = twin(chosen, "spot", spot_zone) if all((t, "spot") in offered for t in types) and spot_zone else None
    od_twin = twin(chosen, "on_demand", None) if all((t, "on_demand") in offered for t in types) else None
    core = core_config(problem, chosen)
    truth = cloud.expected_iteration_s(twin(chosen, "on_demand", None))
    iter_s = {"spot": truth, "on_demand": truth}
    if core is not None:
        iter_s["core"] = cloud.expected_iteration_s(core)
    restore = spec.overheads.checkpoint_restore_s
    fallback = best.risk.fallback if best.risk is not None else None

    def job(spot: Config, on_demand: Config | None, with_core: Config | None) -> ReplayJob:
        return ReplayJob(
            spec.iterations,
            spec.deadline_s,
            spec.budget_usd,
            spot,
            on_demand,
            with_core,
            iter_s,
            restore,
            max(restore, 1.0),
            cloud.launch_time_s,
        )

    pace = pace_of(problem, best)
    movable = other_zones(chosen.placed(spot_zone), spec.zones) if move_zones else []
    runs: dict[str, tuple[SpotPolicy | None, ReplayJob]] = {
        "srifty": (
            policy_for(problem, best, movable),
            job(chosen.placed(spot_zone), od_twin if fallback is not None else None, core),
        )
    }
    notes = []
    if od_twin is not None:
        runs["on_demand"] = (OnDemandOnly(), job(od_twin, od_twin, None))
    else:
        notes.append("on_demand left out: the spec offers no on-demand VMs of the plan's types")
    if spot_twin is not None:
        runs["spot_restart"] = (SpotRestart(), job(spot_twin, od_twin, None))
        if od_twin is not None:
            baseline_pace = type(pace)(pace.spot_iter_s, pace.spot_iter_s, pace.restart_s, pace.error_rel)
            runs["uniform_progress"] = (UniformProgress(baseline_pace), job(spot_twin, od_twin, None))
        runs["oracle"] = (None, job(spot_twin, od_twin, None))
    else:
        notes.append("spot_restart, uniform_progress and oracle left out: the plan's types have no spot offer")
    records: dict[str, list[RunRecord]] = {name: [] for name in runs}
    pool = [*traces, *zone_pool]
    zones_of = {id(trace): zone_traces(trace, pool, movable) for trace in traces}
    for index, (trace, start) in enumerate(start_times_s(traces, starts, named_rng(seed, "spot-starts"))):
        zones = zones_of[id(trace)]
        for name, (policy, replay_job) in runs.items():
            if policy is None:
                records[name].append(oracle_run(replay_job, trace, start, zones))
                continue

            def launch_rng(k: int, index: int = index) -> Any:
                return named_rng(seed, "spot-launch", index, k)

            moves = zones if name == "srifty" else None
            records[name].append(replay(replay_job, trace, start, policy, launch_rng, moves))
    summary = {name: summarise(records[name]) for name in POLICIES if name in records}
    risk = best.risk
    plan_record = {
        "config": chosen.tagged(),
        "zone": chosen.zone,
        "spot_twin": None if spot_twin is None else spot_twin.tagged(),
        "on_demand_twin": None if od_twin is None else od_twin.tagged(),
        "core": None if core is None else core.tagged(),
        "predicted_iter_s": best.estimate.iter_mean_s,
        "true_iter_s": truth,
        "p_meet_deadline": best.p_meet_deadline,
        "p_meet_budget": best.p_meet_budget,
        "expected_time_s": best.time_s,
        "expected_cost_usd": best.cost_usd,
        "expected_spot_losses": None if risk is None else risk.expected_losses,
        "spot_sources": [] if risk is None else [s for _, s in risk.spot_sources],
        "zone_traces": {
            trace.name: {zone: other.name for zone, other in zones_of[id(trace)].items()} for trace in traces
        },
    }
    return SpotEvalResult(
        spec.name or "",
        plan_record,
        [t.name for t in traces],
        starts,
        seed,
        summary,
        [r for rs in records.values() for r in rs],
        notes,
    )


def recorded_with(home: SpotTrace, traces: Sequence[SpotTrace]) -> list[SpotTrace]:
    """The traces of ``traces`` recorded with ``home``: the same folder, gap and length, other zones of its
    region; one per zone, by zone name."""
    folder = home.name.rpartition("/")[0]
    siblings: dict[str, SpotTrace] = {}
    for trace in traces:
        if (
            trace.name.rpartition("/")[0] == folder
            and trace.gap_s == home.gap_s
            and len(trace.held) == len(home.held)
            and trace.region == home.region
            and trace.zone != home.zone
        ):
            siblings.setdefault(trace.zone, trace)
    return [siblings[zone] for zone in sorted(siblings)]


def zone_traces(home: SpotTrace, traces: Sequence[SpotTrace], zones: Sequence[str]) -> dict[str, SpotTrace]:
    """The traces recorded with ``home`` paired with ``zones`` (the catalog's other zones, cheapest first):
    see the module docstring."""
    return dict(zip(zones, recorded_with(home, traces), strict=False))


def _cheapest_common_zone(config: Config) -> str | None:
    """The cheapest zone that offers spot for every type of ``config`` (``None``: none does)."""
    zones: set[str] | None = None
    for g in config.groups:
        theirs = {z for z, _ in g.instance.spot_usd_per_hour_by_zone}
        zones = theirs if zones is None else zones & theirs
    if not zones:
        return None
    return min(zones, key=lambda z: (sum(dict(g.instance.spot_usd_per_hour_by_zone)[z] for g in config.groups), z))
