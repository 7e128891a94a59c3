"""Scenario replay: ``srifty run --emulated`` runs a job on srifty's EMULATED cloud, on an emulated clock
(paper, Figure 8), to judge the runtime's decisions.

srifty learns the cloud as it would a real one (profiles each GPU type with 4 probes, grid-probes the
network, fits its bandwidth model; :mod:`srifty.evaluate.learn`), plans, and the job then "runs": VMs
take the cloud's launch time, every iteration takes the cloud's true time for the configuration and its
placement, the spec's injected reclaims (and, optionally, the cloud's own spot process) take VMs away.
The runtime's :class:`~srifty.runtime.controller.Controller` (the real one) sees only finished iterations
and events, as it would in a real run. After a reclaim, training resumes from the last checkpoint once the
new VMs are up and the checkpoint is restored (whichever takes longer, as the paper overlaps them). VMs bill
from the moment they are requested. Nothing here is a measurement of a real cloud.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from srifty.artifacts import atomic_write_text
from srifty.catalog import Catalog, load_catalog
from srifty.cloud import named_rng
from srifty.errors import SpecError
from srifty.evaluate.learn import learn_network
from srifty.evaluate.profiling import profile_gpus
from srifty.evaluate.world import World, make_world
from srifty.plan import Plan, PlanInputs, area_type_names, plan_job, require_global_batch, spec_area, spec_config
from srifty.runtime import Controller, DecisionLog, checkpoint_interval_iters
from srifty.spec import JobSpec
from srifty.vocab import Config


@dataclass
class ScenarioOutcome:
    """How the scenario went (emulated seconds and dollars)."""

    finished_s: float
    cost_usd: float
    iterations: int
    met_deadline: bool | None
    within_budget: bool | None
    configs: list[str]
    timeline: list[dict[str, object]] = field(default_factory=list)


def learned_inputs(spec: JobSpec, world: World, seed: int, catalog: Catalog) -> PlanInputs:
    """srifty's knowledge of the emulated cloud: measured profiles per GPU and a fitted bandwidth model."""
    types = area_type_names(spec, catalog)
    model = spec.model.name or ""
    profiles = profile_gpus(world.cloud, model, types, seed, world.templates[model], catalog)
    knowledge = learn_network(world.cloud, types, seed)
    sources = {gpu: "measured on the EMULATED cloud (4 probes)" for gpu in profiles}
    return PlanInputs(profiles, sources, knowledge.bandwidth_model, "fitted on EMULATED-cloud probes")


def run_scenario(spec: JobSpec, run_dir: Path, profile_dirs: tuple[Path, ...] = ()) -> ScenarioOutcome:
    """Run ``spec``'s scenario on the emulated cloud (see the module docstring).

    Args:
        profile_dirs: folders of profiles (with op counts) of a model the cloud does not bundle; the spec's own
            ``model.profiles`` are looked at too.
    """
    emulation = spec.emulation
    if emulation is None:
        raise SpecError("--emulated needs an `emulation:` section in the spec (at least `seed: 0`)")
    model = spec.model.name or ""
    catalog = load_catalog()
    config: Config | None = None
    if emulation.start_config is not None:  # checked before the (seconds-long) learning below
        config = spec_config(emulation.start_config, spec, catalog)
        require_global_batch(config, spec, "emulation.start_config")
    dirs = (*profile_dirs, *spec.model.profiles)
    cloud_name, region = spec_area(spec, catalog)
    world = make_world([model], emulation.seed, catalog, region, cloud_name, dirs, spec.model.precision)
    cloud = world.cloud
    inputs = learned_inputs(spec, world, emulation.seed, catalog)

    def replan(remaining: JobSpec) -> Plan:
        return plan_job(remaining, catalog, inputs)[0]

    if config is None:
        first = replan(spec)
        if first.best is None:
            raise SpecError(first.infeasibility.message if first.infeasibility else "no feasible configuration")
        config = first.best.config
    run_dir.mkdir(parents=True, exist_ok=True)
    log = DecisionLog.fresh(run_dir / "decisions.jsonl")
    controller = Controller(spec, config, replan, log, start_s=0.0)
    rng = named_rng(emulation.seed, "emulated-run")
    timeline: list[dict[str, object]] = []

    def event(t: float, kind: str, **details: object) -> None:
        timeline.append({"time_s": round(t, 3), "iteration": controller.iteration, "event": kind, **details})

    iter_guess = 1.0
    every = emulation.checkpoint_every or checkpoint_interval_iters(spec.overheads.checkpoint_restore_s, iter_guess)
    pending = sorted(emulation.preemptions, key=lambda p: p.at_iteration)
    now = 0.0
    ready_at = now + max(cloud.launch_time_s(rng) for _ in range(config.n_vms))
    event(
        now,
        "launch",
        config=config.notation(),
        ready_at_s=round(ready_at, 1),
        deadline_s=spec.deadline_s,
        target_iterations=spec.iterations,
    )
    now = ready_at
    event(now, "ready", config=config.notation())
    checkpoint = 0
    configs = [config.notation()]
    while controller.iteration < spec.iterations:
        allocation = cloud.allocate(config, rng)
        remaining = spec.iterations - controller.iteration
        times = cloud.iteration_times_s(config, allocation, remaining, rng)
        spot = (
            [p.time_s + now for p in cloud.preemption_times(config, float(times.sum()), rng)]
            if emulation.spot_process
            else []
        )
        reclaim: tuple[str, str, int] | None = None
        for dt in times:
            now += float(dt)
            iteration = controller.iteration + 1
            controller.on_iteration(iteration, now)
            timeline.append({"time_s": round(now, 3), "iteration": iteration, "event": "iteration"})
            if iteration % every == 0:
                checkpoint = iteration
            if iteration >= spec.iterations:
                break
            if pending and iteration >= pending[0].at_iteration:
                hit = pending.pop(0)
                reclaim = (hit.instance_type, hit.market, hit.count)
            elif spot and now >= spot[0]:
                spot.pop(0)
                group = next(g for g in config.groups if g.market == "spot")
                reclaim = (group.instance.name, group.market, 1)
            if reclaim is not None:
                break
        if reclaim is None:
            continue
        name, market, count = reclaim
        event(now, "preempted", instance_type=name, vms=count)
        survivors: dict[tuple[str, str], int] = {(g.instance.name, g.market): g.count for g in config.groups}
        survivors[(name, market)] = max(0, survivors.get((name, market), 0) - count)
        decision = controller.on_preemption(name, market, count, now)
        event(now, decision.action, reason=decision.reason, config=decision.config)
        lost = controller.iteration - checkpoint
        controller.rollback_to(checkpoint, now)
        event(now, "rollback", to_iteration=checkpoint, lost_iterations=lost)
        config = controller.config
        configs.append(config.notation())
        new_vms = sum(max(0, g.count - survivors.get((g.instance.name, g.market), 0)) for g in config.groups)
        launch = max((cloud.launch_time_s(rng) for _ in range(new_vms)), default=0.0)
        wait = max(launch, spec.overheads.checkpoint_restore_s)
        event(now, "launch", config=config.notation(), new_vms=new_vms, ready_at_s=round(now + wait, 1))
        now += wait
        event(now, "ready", config=config.notation())
    cost = controller.cost_so_far_usd(now)
    event(now, "finished", config=config.notation(), cost_usd=round(cost, 4))
    atomic_write_text(run_dir / "timeline.json", json.dumps(timeline, indent=1))
    outcome = ScenarioOutcome(
        finished_s=now,
        cost_usd=cost,
        iterations=controller.iteration,
        met_deadline=None if spec.deadline_s is None else now <= spec.deadline_s,
        within_budget=None if spec.budget_usd is None else cost <= spec.budget_usd,
        configs=configs,
        timeline=timeline,
    )
    summary = {k: v for k, v in outcome.__dict__.items() if k != "timeline"}
    atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=1))
    return outcome
