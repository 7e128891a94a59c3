"""What the judge may rent for a job, read from the spec by the judge itself (EMULATED cloud).

The judge does not use the planner's reading of a spec: it reads the spec's candidates (or, for
``candidates: auto``, the catalog's GPU types) in the emulated cloud's region, on their markets, with their
quotas, and knows where each may run:

* a spot VM runs in a zone with a spot price for its type (the zone a candidate pins it to, or one of the
  spec's ``zones``);
* an on-demand VM runs in any zone that lists its type (or the pinned one); one without pin or ``zones``
  may run anywhere in the region, priced per region.

A configuration runs in one zone when it has a spot group or a zone is asked for, and is priced there: the
cheapest zone offering all of its groups (:func:`cheapest_placement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from srifty.catalog import Catalog, InstanceType, Market, OnMarket
from srifty.errors import SpecError
from srifty.spec import JobSpec


@dataclass(frozen=True)
class RentalOffer(OnMarket):
    """Up to ``quota`` VMs of ``instance`` on ``market``; ``zones`` where they may run (``None``: anywhere in
    the region, on-demand only)."""

    instance: InstanceType
    market: Market
    quota: int
    zones: frozenset[str] | None

    def price_usd_per_hour(self, zone: str | None) -> float:
        """One VM-hour in ``zone`` (spot) or in the region (on-demand)."""
        return self.instance.price_usd_per_hour(self.market, zone if self.market == "spot" else None)

    @property
    def lowest_price_usd_per_hour(self) -> float:
        """Its lowest price wherever it may run (a lower bound for searches)."""
        if self.market == "spot" and self.zones:
            return min(self.price_usd_per_hour(z) for z in self.zones)
        return self.price_usd_per_hour(None)


def _zones(instance: InstanceType, market: Market, pin: str | None, asked: Sequence[str]) -> frozenset[str] | None:
    """Where one VM may run; an empty set: nowhere."""
    if market == "spot":
        where = {z for z, _ in instance.spot_usd_per_hour_by_zone}
    elif pin is None and not asked:
        return None
    else:
        where = set(instance.zones) if instance.zones else ({pin} if pin else set())
    if pin is not None:
        where &= {pin}
    if asked:
        where &= set(asked)
    return frozenset(where)


def rental_offers(spec: JobSpec, catalog: Catalog, cloud: str, region: str) -> tuple[RentalOffer, ...]:
    """Everything ``spec`` may rent in ``cloud``'s ``region`` (see the module docstring).

    Raises:
        SpecError: nothing of the spec can be rented there.
    """
    offers: list[RentalOffer] = []
    if spec.auto_candidates:
        wanted = spec.filter
        gpus = {g.lower() for g in wanted.gpus}
        for t in catalog.instance_types:
            if (t.cloud, t.region) != (cloud, region) or (gpus and t.gpu_name.lower() not in gpus):
                continue
            if wanted.max_gpus_per_vm is not None and t.gpus_per_vm > wanted.max_gpus_per_vm:
                continue
            for market in t.markets(wanted.market):
                offers.append(
                    RentalOffer(
                        t, market, spec.quota.get(t.name, spec.default_quota), _zones(t, market, None, spec.zones)
                    )
                )
    else:
        for cand in spec.candidates:
            if (cand.cloud or cloud) != cloud or (cand.region or region) != region:
                continue
            for t in catalog.instance_types:
                here = t.name == cand.instance_type and (t.cloud, t.region) == (cloud, region)
                if here and cand.market in t.markets():
                    offers.append(
                        RentalOffer(t, cand.market, cand.quota, _zones(t, cand.market, cand.zone, spec.zones))
                    )
    offers = [o for o in offers if o.zones is None or o.zones]
    if not offers:
        raise SpecError(f"{spec.name or 'the job'}: nothing it lists can be rented in {cloud} {region}.")
    return tuple(sorted(offers, key=lambda o: o.key))


def cheapest_placement(
    used: Sequence[tuple[RentalOffer, int]],
) -> tuple[str | None, float] | None:
    """Where a configuration using ``(offer, VMs)`` runs most cheaply and its price per hour: ``(zone, USD/h)``;
    ``(None, USD/h)`` when it may run anywhere in the region; ``None`` when no zone offers all of it."""
    zoned = [o.zones for o, n in used if n > 0 and o.zones is not None]
    if not zoned:
        return None, sum(n * o.price_usd_per_hour(None) for o, n in used if n > 0)
    common = frozenset.intersection(*zoned)
    for o, n in used:  # a region-wide on-demand VM joins the zone only where its type is listed
        if n > 0 and o.zones is None and o.instance.zones:
            common &= frozenset(o.instance.zones)
    if not common:
        return None
    priced = [(sum(n * o.price_usd_per_hour(z) for o, n in used if n > 0), z) for z in sorted(common)]
    price, zone = min(priced)
    return zone, price
