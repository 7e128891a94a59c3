"""The Python API behind ``srifty plan``: spec file in, :class:`~srifty.plan.result.Plan` out."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import time
from collections.abc import Mapping
from pathlib import Path

from srifty.catalog import Catalog, InstanceType, load_catalog
from srifty.compute import Profile
from srifty.errors import ProfileError, SpecError
from srifty.plan.build import build_problems, compute_latency_ms
from srifty.plan.explain import explain_choice
from srifty.plan.inputs import PlanInputs, resolve
from srifty.plan.memory import Sharding, StrategyLimits, allowed_strategies, require_some_fit, type_max_batch
from srifty.plan.methods import Knowledge, get_method
from srifty.plan.offers import excluded_opt_in_zones, expand_offers, search_places
from srifty.plan.planner import cheapest_within, make_plan, nothing_left
from srifty.plan.predict import MemoPredictor
from srifty.plan.problem import Candidate, PlanProblem
from srifty.plan.prune import PrunedType, compute_floor_fn, unpruned
from srifty.plan.prune import prune as prune_problems
from srifty.plan.result import Infeasibility, Plan
from srifty.plan.sharding import ShardingChooser
from srifty.plan.solvers import DEFAULT_MAX_SIM_CALLS, Mode
from srifty.sim import profile_for
from srifty.spec import JobSpec, load_spec
from srifty.spot import SpotModel, default_spot_model, describe_spot_model
from srifty.vocab import Config, parse_config


def spec_area(spec: JobSpec, catalog: Catalog) -> tuple[str, str]:
    """The one (cloud, region) a configuration typed by the user is read in: the spec's ``region`` (or its
    only region) in its only cloud.

    Raises:
        SpecError: the spec plans in several regions or clouds, so a typed configuration is ambiguous.
    """
    places = search_places(spec, catalog)
    if len(places) == 1:
        return places[0]
    offered = sorted({(o.instance.cloud, o.instance.region) for o in expand_offers(spec, catalog)})
    if len(offered) == 1:
        return offered[0]
    listed = ", ".join(f"{c} {r}" for c, r in places)
    raise SpecError(
        f"the spec plans in several regions ({listed}); a configuration typed on the command line or in "
        "`emulation.start_config` needs one: add `region:` (and `cloud:`) to the spec."
    )


def area_type_names(spec: JobSpec, catalog: Catalog) -> list[str]:
    """The instance types ``spec`` may rent, by name, in the one region it plans in (see :func:`spec_area`).

    Raises:
        SpecError: the spec plans in several regions, or a filter leaves nothing.
    """
    spec_area(spec, catalog)
    return sorted({o.instance.name for o in expand_offers(spec, catalog)})


def spec_config(text: str, spec: JobSpec, catalog: Catalog, zone: str | None = None) -> Config:
    """Parse a configuration (``"4xg4dn.12xlarge@64,..."``) in ``spec``'s region, each type on the market its
    candidate names (``[spot]`` after a group names it too), its spot VMs in ``zone`` if given. It runs the
    spec's ``parallelism`` (``ddp`` for ``auto``: a typed configuration is not re-planned) and, with
    ``activation_checkpointing: on``, checkpoints every block.

    Raises:
        SpecError: bad notation, an unknown type, or a spec that plans in several regions.
    """
    cloud, region = spec_area(spec, catalog)
    markets = {c.instance_type: c.market for c in spec.candidates}
    config = parse_config(text, region, cloud, catalog, markets, zone)
    parallelism = "ddp" if spec.parallelism == "auto" else spec.parallelism
    return config.sharded(parallelism, spec.activation_checkpointing == "on")


def require_global_batch(config: Config, spec: JobSpec, what: str) -> None:
    """Refuse a configuration (``what``: how the user gave it) that does not place the spec's global batch.

    Raises:
        SpecError: naming both numbers.
    """
    if config.global_batch != spec.global_batch:
        raise SpecError(
            f"{what} {config} places {config.global_batch} samples; the spec's global_batch is {spec.global_batch}"
        )


def require_fits(config: Config, profiles: Mapping[str, Profile], what: str) -> None:
    """Refuse a configuration (``what``: how the user gave it) whose local batch does not fit a GPU's
    memory, or that has an empty group.

    Raises:
        SpecError: naming the group, its GPU and the largest batch that fits.
    """
    for group in config.groups:
        if group.count < 1 or group.local_batch < 1:
            raise SpecError(f"{what} {config}: group {group.notation()} needs at least one VM and a batch of 1")
        sharding = Sharding(config.parallelism, config.shard_size, config.checkpointing)
        limit = type_max_batch(profile_for(profiles, group.instance), group.instance, sharding)
        if group.local_batch > limit:
            raise SpecError(
                f"{what} {config}: local batch {group.local_batch} of {group.notation()} does not fit one "
                f"{group.instance.gpu_name} under {sharding.describe()} (at most {limit} by the memory model); "
                "lower it, or set `parallelism:` to shard the model"
            )


def plan_job(
    spec: JobSpec,
    catalog: Catalog | None = None,
    inputs: PlanInputs | None = None,
    method: str = "srifty",
    mode: Mode = "auto",
    top_k: int = 5,
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
    iters: int = 100,
    prune: bool = True,
    spot_model: SpotModel | None = None,
) -> tuple[Plan, PlanInputs]:
    """Plan ``spec`` with ``method`` (see :data:`~srifty.plan.methods.METHODS`); resolves profiles and the
    bandwidth model unless given. APM's alpha-beta model is fitted on the embedded default's training rows.

    The spec's offers (listed, or the catalog search of ``candidates: auto``) become one problem per
    placement; types whose GPU has no profile and none can be estimated are pruned with that reason; with
    ``prune``, types and zones that cannot hold the optimum are dropped before search
    (:mod:`srifty.plan.prune`). Spot VMs are judged by ``spot_model`` (default: the spec's ``spot_model`` file,
    else the embedded default fitted on real traces).

    Raises:
        SpecError: an unknown method, one that only an evaluation can run, or a filter that leaves nothing.
        ProfileError: no instance type can be planned (no profile, none can be estimated).
    """
    entry = get_method(method)
    entry.require_planning()
    cat = catalog or load_catalog()
    offers = expand_offers(spec, cat)
    resolved = inputs or resolve(spec, cat, sorted({o.instance for o in offers}, key=_instance_order))
    usable = [o for o in offers if profile_known(resolved, o.instance)]
    excluded = [
        PrunedType(o.instance.name, o.market, o.instance.cloud, o.instance.region, "no profile", why)
        for o in offers
        if (why := resolved.unplannable.get(o.instance.gpu_name)) is not None
        and not profile_known(resolved, o.instance)
    ]
    if not usable:
        reasons = "; ".join(sorted(set(resolved.unplannable.values()))) or "no profile for any of their GPUs"
        raise ProfileError(f"no instance type in the spec can be planned: {reasons}.")
    max_gpus = sum(o.quota * o.instance.gpus_per_vm for o in usable)
    require_some_fit(spec, sorted({o.instance for o in usable}, key=_instance_order), resolved.profiles, cat, max_gpus)
    limits = StrategyLimits(spec, resolved.profiles, max_gpus)
    spot, spot_source = (spot_model, "given") if spot_model is not None else load_spot_model(spec)
    problems = build_problems(spec, cat, limits, entry.batch_policy, offers=usable, spot=spot)
    knowledge = Knowledge(resolved.profiles, resolved.net_model, seed=spec.seed, sim_iters=iters)
    sharded = entry.name == "srifty"  # the simulator predicts FSDP and HSDP; the baselines know DDP only
    predictor = MemoPredictor(ShardingChooser(entry.make_predictor(knowledge), spec, resolved.profiles, sharded))

    latencies: dict[tuple[str, int], float] = {}

    def latency(cand: Candidate, batch: int) -> float:
        # The latency depends on the profile (per GPU, or per type when one is given) and the batch.
        key = (cand.instance.name if cand.instance.name in resolved.profiles else cand.instance.gpu_name, batch)
        if key not in latencies:
            latencies[key] = compute_latency_ms(resolved.profiles, cand, batch)
        return latencies[key]

    # a sharded configuration steps only its shard: its compute floor is forward and backward
    phases = ("fw", "bw") if sharded and allowed_strategies(spec) != ("ddp",) else ("fw", "bw", "step")

    def search(batch: tuple[PlanProblem, ...]) -> tuple[Plan, bool]:
        if prune:
            pruning = prune_problems(
                batch, predictor, compute_floor_fn(resolved.profiles, iters, phases=phases), excluded
            )
        else:
            pruning = unpruned(batch, excluded)
        if pruning.problems:
            return make_plan(pruning.problems, predictor, latency, entry, mode, max_sim_calls, top_k, pruning), True
        return nothing_left(batch, pruning, entry.name), False

    started = time.perf_counter()
    plan, _ = search(problems)
    if spec.goal == "min_time" and entry.honours_constraints and not entry.draws:
        tolerance = spec.min_time_tolerance
        plan = dataclasses.replace(plan, time_tolerance=tolerance)
        if tolerance > 0 and plan.feasible and plan.best is not None:
            # The cheapest within the tolerance: a min-cost search with the tolerance's limit as its deadline.
            limit = plan.best.time_s * (1.0 + tolerance)
            within = tuple(
                dataclasses.replace(p, goal="min_cost", deadline_s=min(p.deadline_s or math.inf, limit))
                for p in problems
            )
            cheap, searched = search(within)
            plan = cheapest_within(plan, cheap if searched else None, problems, tolerance, top_k)
    errors = {gpu: profile.expected_error for gpu, profile in resolved.profiles.items()}
    plan = dataclasses.replace(
        plan,
        solve_time_s=time.perf_counter() - started,
        infeasibility=name_the_quota(plan.infeasibility, spec),
        profile_sources=dict(resolved.sources),
        profile_errors=errors,
        network_sources=dict(resolved.net_notes),
        spot_source=spot_source,
        spec_name=spec.name,
        notes=plan.notes + resolved.warnings + _opt_in_note(spec, cat),
    )
    return dataclasses.replace(plan, explanation=tuple(explain_choice(plan))), resolved


def _opt_in_note(spec: JobSpec, catalog: Catalog) -> tuple[str, ...]:
    """Which opt-in zones planning left out, and how to plan in them."""
    excluded = excluded_opt_in_zones(spec, catalog)
    if not excluded:
        return ()
    kinds = ", ".join(sorted(set(excluded.values())))
    return (
        f"left out {len(excluded)} zone(s) an account must opt in to ({kinds}: {', '.join(excluded)}); name one in "
        "`zones:` to plan there",
    )


def load_spot_model(spec: JobSpec) -> tuple[SpotModel, str]:
    """The spot model a spec plans with, and a line naming it: its ``spot_model`` file, or the embedded default.

    Raises:
        ArtifactError: the file is missing, damaged or not a spot model.
    """
    if spec.spot_model is not None:
        model = SpotModel.load(spec.spot_model)
        return model, describe_spot_model(model, spec.spot_model)
    model = default_spot_model()
    return model, describe_spot_model(model)


def _instance_order(instance: InstanceType) -> tuple[str, str, str]:
    return (instance.cloud, instance.region, instance.name)


def profile_known(inputs: PlanInputs, instance: InstanceType) -> bool:
    """Whether ``inputs`` has a profile for ``instance`` (by its name or its GPU)."""
    return instance.name in inputs.profiles or instance.gpu_name in inputs.profiles


def name_the_quota(infeasibility: Infeasibility | None, spec: JobSpec) -> Infeasibility | None:
    """A quota infeasibility whose fix names the spec's own quota fields."""
    if infeasibility is None or infeasibility.binding_constraint != "quota":
        return infeasibility
    fields = (
        f"default_quota (now {spec.default_quota}) or quota for single types"
        if spec.auto_candidates
        else "the candidates' quota"
    )
    message = infeasibility.message.replace("raise the quotas", f"raise {fields}")
    return dataclasses.replace(infeasibility, message=message)


def plan_spec(spec_path: str | Path, **kwargs: object) -> tuple[Plan, PlanInputs]:
    """Load and plan a spec file; the plan records the spec's name and SHA-256 digest."""
    path = Path(spec_path)
    spec = load_spec(path)
    plan, inputs = plan_job(spec, **kwargs)  # type: ignore[arg-type]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return dataclasses.replace(plan, spec_digest=digest), inputs
