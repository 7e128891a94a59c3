"""Which zones an account may not use without opting in first.

AWS names its ordinary availability zones ``<region code>-az<N>`` (``use1-az4``). Local Zones
(``usw2-lax1-az1``: Los Angeles) and Wavelength Zones (``use1-wl1-bos-wlz1``) carry the location between
the two, and an account must opt in to each of them (``aws ec2 modify-availability-zone-group``) before it
can launch there; they also offer fewer services and less capacity. The bundled catalog lists both kinds
(SkyPilot's catalog does), so the planner leaves opt-in zones out unless a spec names them.

Azure's bundled prices are regional and GCP's zones need no opt-in: neither has opt-in zones here.
"""

from __future__ import annotations

import re
from dataclasses import replace

from srifty.catalog.records import InstanceType

# <region code>-<location><n>-az<N> (Local Zone) or <region code>-wl<n>-<...> (Wavelength Zone).
_AWS_LOCAL = re.compile(r"^[a-z]+\d-(?!az\d)([a-z]+\d+)-az\d+$")
_AWS_WAVELENGTH = re.compile(r"^[a-z]+\d-wl\d+-.+$")


def opt_in_kind(cloud: str, zone: str) -> str | None:
    """``"Local Zone"`` or ``"Wavelength Zone"`` when ``zone`` needs an opt-in on ``cloud``, else ``None``."""
    if cloud != "aws":
        return None
    if _AWS_WAVELENGTH.match(zone):
        return "Wavelength Zone"
    if _AWS_LOCAL.match(zone):
        return "Local Zone"
    return None


def without_opt_in_zones(instance: InstanceType, allowed: frozenset[str] = frozenset()) -> InstanceType:
    """``instance`` without its opt-in zones (and their spot prices), except those in ``allowed``."""

    def keep(zone: str) -> bool:
        return zone in allowed or opt_in_kind(instance.cloud, zone) is None

    zones = tuple(z for z in instance.zones if keep(z))
    spot = tuple((z, p) for z, p in instance.spot_usd_per_hour_by_zone if keep(z))
    if zones == instance.zones and spot == instance.spot_usd_per_hour_by_zone:
        return instance
    return replace(instance, zones=zones, spot_usd_per_hour_by_zone=spot)
