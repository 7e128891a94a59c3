"""What may be rented: the spec's candidates expanded to offers, one per (instance type, region, market).

A spec either lists its candidates (each in every region of the spec's clouds and regions where the catalog
offers it, unless it names its own region or cloud) or says ``candidates: auto`` (the default): every GPU
type of the bundled catalog in those clouds and regions, on every market it is sold on, narrowed by
``filter`` (GPU names, GPUs per VM, market) and ``zones``, each with ``quota[type]`` or ``default_quota``
VMs. A filter that leaves nothing is a spec error naming that filter.

Zones an account must opt in to (AWS Local and Wavelength Zones, :mod:`srifty.catalog.zones`) are left out
of every offer unless the spec names them in ``zones`` or a candidate's ``zone``.

Pure functions of the spec and the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from srifty.catalog import Catalog, InstanceType, Market, OnMarket, opt_in_kind, without_opt_in_zones
from srifty.errors import SpecError
from srifty.spec import CandidateSpec, JobSpec


@dataclass(frozen=True)
class Offer(OnMarket):
    """``quota`` VMs of ``instance`` (one region's record) on ``market``; ``zone`` when the spec pins one."""

    instance: InstanceType
    market: Market
    quota: int
    zone: str | None = None

    def offered_in(self, zone: str) -> bool:
        """Whether this offer may run in ``zone``: its pin allows it and the catalog lists the type there (with a
        spot price there, on the spot market)."""
        if self.zone is not None and self.zone != zone:
            return False
        if self.market == "spot":
            return zone in dict(self.instance.spot_usd_per_hour_by_zone)
        return zone in self.instance.zones


def search_places(spec: JobSpec, catalog: Catalog) -> list[tuple[str, str]]:
    """``(cloud, region)`` pairs the spec plans in: its regions (or every region) of its clouds."""
    regions = spec.search_regions
    places: list[tuple[str, str]] = []
    for cloud in spec.search_clouds:
        for region in catalog.regions(cloud):
            if not regions or region in regions:
                places.append((cloud, region))
    return places


def named_zones(spec: JobSpec) -> frozenset[str]:
    """Zones the spec names (``zones`` and candidates' ``zone``): opt-in zones among them may be planned in."""
    return frozenset(spec.zones) | {c.zone for c in spec.candidates if c.zone is not None}


def _usable(spec: JobSpec, types: Sequence[InstanceType]) -> list[InstanceType]:
    """``types`` without the opt-in zones the spec does not name."""
    allowed = named_zones(spec)
    return [without_opt_in_zones(t, allowed) for t in types]


def excluded_opt_in_zones(spec: JobSpec, catalog: Catalog) -> dict[str, str]:
    """Opt-in zones of the spec's clouds and regions that planning leaves out, with their kind
    (``{"usw2-lax1-az1": "AWS Local Zone"}``); none when the spec lists its ``zones`` (it plans in those only)."""
    if spec.zones:
        return {}
    places = set(search_places(spec, catalog)) | {
        p for c in spec.candidates for p in _candidate_places(spec, catalog, c)
    }
    allowed = named_zones(spec)
    out: dict[str, str] = {}
    for t in catalog.instance_types:
        if (t.cloud, t.region) not in places:
            continue
        for zone in t.zones:
            kind = opt_in_kind(t.cloud, zone)
            if kind is not None and zone not in allowed:
                out[zone] = f"{t.cloud.upper()} {kind}"
    return dict(sorted(out.items()))


def _scope(places: Sequence[tuple[str, str]]) -> str:
    by_cloud: dict[str, list[str]] = {}
    for cloud, region in places:
        by_cloud.setdefault(cloud, []).append(region)
    return "; ".join(f"{cloud} {', '.join(regions)}" for cloud, regions in by_cloud.items())


def _in_zones(offer: Offer, zones: Sequence[str]) -> bool:
    return not zones or any(offer.offered_in(z) for z in zones)


def auto_offers(spec: JobSpec, catalog: Catalog) -> tuple[Offer, ...]:
    """Every GPU type in the spec's clouds and regions that passes its filter (``candidates: auto``).

    Raises:
        SpecError: the clouds and regions hold no type, or a filter (named) leaves none.
    """
    places = search_places(spec, catalog)
    scope = _scope(places) or ", ".join(spec.search_clouds)
    types = _usable(spec, [t for t in catalog.instance_types if (t.cloud, t.region) in places])
    if not types:
        raise SpecError(f"the bundled catalog has no GPU instance type in {scope}; choose other regions or clouds.")
    wanted = spec.filter
    gpus = {g.lower() for g in wanted.gpus}
    steps: list[tuple[str, Callable[[Offer], bool], str]] = [
        (
            f"filter.market: {wanted.market}",
            lambda o: True,
            f"no type there is sold on the {wanted.market} market",
        ),
        (
            f"filter.gpus: [{', '.join(wanted.gpus)}]",
            lambda o: not gpus or o.instance.gpu_name.lower() in gpus,
            "the GPUs offered there are {gpus}",
        ),
        (
            f"filter.max_gpus_per_vm: {wanted.max_gpus_per_vm}",
            lambda o: wanted.max_gpus_per_vm is None or o.instance.gpus_per_vm <= wanted.max_gpus_per_vm,
            "the fewest GPUs per VM there is {fewest}",
        ),
        (
            f"zones: [{', '.join(spec.zones)}]",
            lambda o: _in_zones(o, spec.zones),
            "none of those types is listed in those zones",
        ),
    ]
    offers = [Offer(t, m, spec.quota.get(t.name, spec.default_quota)) for t in types for m in t.markets(wanted.market)]
    if not offers:
        first = steps[0]
        raise SpecError(f"{first[0]} leaves no instance type in {scope}: {first[2]}; widen or remove the filter.")
    for label, keep, why in steps[1:]:
        kept = [o for o in offers if keep(o)]
        if not kept:
            detail = why.format(
                gpus=", ".join(sorted({o.instance.gpu_name for o in offers})),
                fewest=min(o.instance.gpus_per_vm for o in offers),
            )
            raise SpecError(f"{label} leaves no instance type in {scope}: {detail}; widen or remove the filter.")
        offers = kept
    return tuple(offers)


def listed_offers(spec: JobSpec, catalog: Catalog) -> tuple[Offer, ...]:
    """The spec's listed candidates, one offer per region where each is sold on its market.

    Raises:
        SpecError: a candidate is sold on its market in none of the spec's regions (or its own).
    """
    offers: list[Offer] = []
    for index, cand in enumerate(spec.candidates):
        found = [o for o in _candidate_offers(spec, catalog, cand) if _in_zones(o, spec.zones)]
        if not found:
            where = f"zones {', '.join(spec.zones)}" if spec.zones else _scope(_candidate_places(spec, catalog, cand))
            raise SpecError(
                f"candidates[{index}]: {cand.instance_type} is not sold on the {cand.market} market in {where} in "
                f"the bundled catalog{_opt_in_hint(spec, catalog, cand)}; choose another market, region or type "
                "(`srifty catalog list`)."
            )
        offers.extend(found)
    return tuple(offers)


def _opt_in_hint(spec: JobSpec, catalog: Catalog, cand: CandidateSpec) -> str:
    """`` outside opt-in zones (it is sold in use1-atl2-az1, ...)`` where that is why a candidate has no offer."""
    if spec.zones:
        return ""
    places = _candidate_places(spec, catalog, cand)
    zones = sorted(
        (t.cloud, z)
        for t in catalog.instance_types
        if t.name == cand.instance_type and (t.cloud, t.region) in places and cand.market in t.markets()
        for z in (t.zones if cand.market == "on_demand" else dict(t.spot_usd_per_hour_by_zone))
    )
    if not zones or not all(opt_in_kind(cloud, z) for cloud, z in zones):
        return ""
    return (
        f" outside opt-in zones (it is sold only in {', '.join(z for _, z in zones)}, which an account must opt in "
        "to; name the zone in `zones:` or the candidate's `zone:` to plan there)"
    )


def _candidate_places(spec: JobSpec, catalog: Catalog, cand: CandidateSpec) -> list[tuple[str, str]]:
    clouds = (cand.cloud,) if cand.cloud else spec.search_clouds
    regions = (cand.region,) if cand.region else spec.search_regions
    return [(c, r) for c in clouds for r in catalog.regions(c) if not regions or r in regions]


def _candidate_offers(spec: JobSpec, catalog: Catalog, cand: CandidateSpec) -> list[Offer]:
    places = _candidate_places(spec, catalog, cand)
    named = [t for t in catalog.instance_types if t.name == cand.instance_type and (t.cloud, t.region) in places]
    return [Offer(t, cand.market, cand.quota, cand.zone) for t in _usable(spec, named) if cand.market in t.markets()]


def expand_offers(spec: JobSpec, catalog: Catalog) -> tuple[Offer, ...]:
    """The spec's offers: listed candidates, or the catalog search of ``candidates: auto``.

    Raises:
        SpecError: nothing to rent (naming the filter, zone or candidate that leaves nothing).
    """
    return auto_offers(spec, catalog) if spec.auto_candidates else listed_offers(spec, catalog)
