"""The one problem builder: one :class:`~srifty.plan.problem.PlanProblem` per placement, from a job spec,
the catalog and what is known of each type's batch limits, under a batch policy.

The planner knows the limits from compute profiles (:class:`ProfileLimits`: the memory model's largest
batch and the latency model's knee); an evaluation knows them from its ground truth. The policy says which
local batches a type may take (:data:`~srifty.plan.space.BatchPolicy`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from srifty.catalog import Catalog, InstanceType
from srifty.compute import MemoryInputs, Profile, gpu_options, max_batch_for, memory_inputs
from srifty.plan.offers import Offer, expand_offers
from srifty.plan.problem import Candidate, Placement, PlanProblem
from srifty.plan.space import BatchPolicy, allowed_batches
from srifty.sim import profile_for
from srifty.spec import JobSpec
from srifty.spot import SpotModel


class BatchLimits(Protocol):
    """What a problem builder needs to know of each instance type's local batches."""

    def max_batch(self, instance: InstanceType) -> int:
        """Largest local batch one GPU of ``instance`` holds."""
        ...

    def knee_batch(self, instance: InstanceType) -> int:
        """The smallest batch worth running (the latency model's knee, a power of two), 1 without one."""
        ...


def knee_floor(profile: Profile) -> int:
    """The power of two at or below the iteration model's knee (1 when there is no knee)."""
    knee = profile.latency["iter"].knee_batch
    if knee is None or knee < 1:
        return 1
    return 1 << (int(knee).bit_length() - 1)


def max_batch_on(profile: Profile, instance: InstanceType, inputs: MemoryInputs | None = None) -> int:
    """Largest local batch that fits one GPU of ``instance`` under DDP (:mod:`srifty.compute.sharding`: the
    model state, DDP's gradient buckets, activations and workspace).

    A profile measured on that very GPU, whose search stopped at its memory, caps the model's answer.
    """
    limit = max_batch_for(inputs or memory_inputs(profile), gpu_options("ddp"), instance.gpu_memory_bytes)
    measured_here = profile.device.gpu == instance.gpu_name and not profile.is_estimate
    if measured_here and profile.max_batch_limited_by == "gpu_memory":
        return min(limit, profile.max_batch)
    return limit


@dataclass(frozen=True)
class ProfileLimits:
    """Batch limits from compute profiles (by instance type or GPU name): memory model and knee."""

    profiles: Mapping[str, Profile]

    def max_batch(self, instance: InstanceType) -> int:
        return max_batch_on(profile_for(self.profiles, instance), instance)

    def knee_batch(self, instance: InstanceType) -> int:
        return knee_floor(profile_for(self.profiles, instance))


def compute_latency_ms(profiles: Mapping[str, Profile], cand: Candidate, batch: int) -> float:
    """Mean forward + backward + step latency (ms) of one GPU of ``cand`` at ``batch``."""
    profile = profile_for(profiles, cand.instance)
    return float(sum(profile.predict_ms(ph, batch)[()] for ph in ("fw", "bw", "step")))


def build_problems(
    spec: JobSpec,
    catalog: Catalog,
    limits: BatchLimits,
    policy: BatchPolicy = "knee",
    overhead_s: float | None = None,
    offers: Sequence[Offer] | None = None,
    spot: SpotModel | None = None,
) -> tuple[PlanProblem, ...]:
    """One problem per placement (:func:`placements`): candidates priced there, with quotas and the batches
    ``policy`` allows; the spec's goal and constraints.

    Args:
        overhead_s: one VM launch plus one checkpoint restore (s); default: the spec's overheads.
        offers: what may be rented (default: :func:`~srifty.plan.offers.expand_offers` of the spec).
        spot: the spot model spot VMs are judged by (``None``: never lost).
    """
    if overhead_s is None:
        overhead_s = spec.overheads.vm_launch_s + spec.overheads.checkpoint_restore_s
    chosen = tuple(offers) if offers is not None else expand_offers(spec, catalog)
    shapes: dict[InstanceType, tuple[tuple[int, ...], int, int, str]] = {}
    problems = []
    fallbacks: dict[tuple[str, str], dict[str, int]] = {}  # per (cloud, region): on-demand quota per type
    for offer in chosen:
        if offer.market == "on_demand" and offer.instance.has_on_demand:
            area = fallbacks.setdefault((offer.instance.cloud, offer.instance.region), {})
            area[offer.instance.name] = area.get(offer.instance.name, 0) + offer.quota
    for placement, priced, requires_spot in placements(chosen, spec.zones):
        candidates = []
        for offer, price in priced:
            if offer.instance not in shapes:
                knee = limits.knee_batch(offer.instance) if policy == "knee" else 1
                limit = limits.max_batch(offer.instance)
                batches, note = allowed_batches(knee, limit, spec.global_batch, offer.instance.gpus_per_vm, policy)
                shapes[offer.instance] = (batches, knee, limit, note)
            batches, knee, limit, note = shapes[offer.instance]
            candidates.append(Candidate(offer.instance, offer.market, offer.quota, price, batches, knee, limit, note))
        problems.append(
            PlanProblem(
                candidates=tuple(candidates),
                global_batch=spec.global_batch,
                iterations=spec.iterations,
                goal=spec.goal,
                deadline_s=spec.deadline_s,
                budget_usd=spec.budget_usd,
                overhead_s=overhead_s,
                placement=placement,
                requires_spot=requires_spot,
                confidence=spec.confidence,
                spot=spot,
                vm_launch_s=spec.overheads.vm_launch_s,
                checkpoint_restore_s=spec.overheads.checkpoint_restore_s,
                on_demand_quotas=tuple(sorted(fallbacks.get((placement.cloud, placement.region), {}).items())),
            )
        )
    return tuple(problems)


def placements(
    offers: Sequence[Offer], zones: Sequence[str] = ()
) -> list[tuple[Placement, list[tuple[Offer, float]], bool]]:
    """Where configurations may run, each with the offers available there priced there, and whether only
    configurations with a spot group belong there.

    Per cloud and region: one placement per zone with a spot offer (its spot offers at that zone's price and
    the on-demand offers listed in that zone), plus one region-wide placement for configurations of on-demand
    VMs only. With ``zones`` given, only those zones, each holding its on-demand offers too. Clouds whose spot
    price is regional (Azure in the bundled catalog) have one region-wide placement for every market.
    """
    by_area: dict[tuple[str, str], list[Offer]] = {}
    for offer in offers:
        by_area.setdefault((offer.instance.cloud, offer.instance.region), []).append(offer)
    out: list[tuple[Placement, list[tuple[Offer, float]], bool]] = []
    for (cloud, region), area in sorted(by_area.items()):
        covers = all(o.instance.price_covers_host_vm for o in area)
        if not any(o.instance.zones for o in area):  # regional spot prices
            priced = [(o, o.instance.price_usd_per_hour(o.market)) for o in area]
            out.append((Placement(cloud, region, None, covers), priced, False))
            continue
        if zones:
            where = {z for o in area for z in o.instance.zones} & set(zones)
        else:  # zones with a spot price, and zones an on-demand candidate is pinned to
            where = {z for o in area if o.market == "spot" for z, _ in o.instance.spot_usd_per_hour_by_zone}
            where |= {o.zone for o in area if o.zone is not None}
        for zone in sorted(where):
            here = [o for o in area if o.offered_in(zone)]
            if here:
                priced = [(o, o.instance.price_usd_per_hour(o.market, zone)) for o in here]
                pinned_on_demand = any(o.market == "on_demand" and o.zone == zone for o in here)
                out.append((Placement(cloud, region, zone, covers), priced, not zones and not pinned_on_demand))
        on_demand = [o for o in area if o.market == "on_demand" and o.zone is None]
        if on_demand and not zones:
            priced = [(o, o.instance.price_usd_per_hour("on_demand")) for o in on_demand]
            out.append((Placement(cloud, region, None, covers), priced, False))
    return out


def unplaced(problems: Sequence[PlanProblem]) -> PlanProblem:
    """One problem over every candidate of ``problems`` (one per type and market, at its lowest price), not
    placed anywhere: for searches of single-type configurations, whose cheapest zone is a real placement.

    Raises:
        ValueError: no problems.
    """
    if not problems:
        raise ValueError("no problems to merge")
    cheapest: dict[tuple[str, str, str], Candidate] = {}
    for problem in problems:
        for cand in problem.candidates:
            key = (cand.instance.region, cand.instance.name, cand.market)
            if key not in cheapest or cand.price_usd_per_hour < cheapest[key].price_usd_per_hour:
                cheapest[key] = cand
    first = problems[0]
    candidates = tuple(cheapest[k] for k in sorted(cheapest))
    return dataclasses.replace(first, candidates=candidates, placement=None, requires_spot=False)
