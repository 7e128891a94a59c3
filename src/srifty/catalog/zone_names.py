"""Zones as SkyPilot spells them: an AWS zone ID (``use1-az4``) becomes the account's zone name.

srifty's catalog names AWS zones by zone ID, the same physical zone in every account. AWS maps IDs to names
(``us-east-1a``) per account, and SkyPilot asks for zone names once it knows the account: it fetches the
account's mapping with the AWS API and caches it as ``~/.sky/catalogs/v8/aws/az_mappings-<user hash>.csv``
(columns ``AvailabilityZoneName``, ``AvailabilityZone``). Without AWS credentials SkyPilot has no mapping
and keeps zone IDs itself. srifty follows the same rule: it reads SkyPilot's newest cached mapping (as
SkyPilot does when it cannot ask AWS) or a mapping file the user gives, and keeps the ID where there is none.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path

from srifty.errors import SpecError

#: Where SkyPilot keeps its catalogs and the AWS zone mappings (``SKY_RUNTIME_DIR`` overrides ``~``).
SKY_RUNTIME_DIR_ENV = "SKY_RUNTIME_DIR"
MAPPING_GLOB = ".sky/catalogs/*/aws/az_mappings-*.csv"


def read_zone_names(path: str | Path) -> dict[str, str]:
    """Zone ID → zone name from a CSV with SkyPilot's columns ``AvailabilityZoneName,AvailabilityZone``.

    Raises:
        SpecError: the file is missing or lacks those columns.
    """
    source = Path(path)
    try:
        with source.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as error:
        raise SpecError(f"zone names {source}: {error.strerror or error}") from None
    if rows and not {"AvailabilityZoneName", "AvailabilityZone"} <= set(rows[0]):
        raise SpecError(
            f"zone names {source}: expected the columns AvailabilityZoneName,AvailabilityZone (SkyPilot's "
            f"az_mappings file), found {', '.join(rows[0])}"
        )
    return {row["AvailabilityZone"]: row["AvailabilityZoneName"] for row in rows}


def skypilot_zone_names(runtime_dir: str | Path | None = None) -> dict[str, str]:
    """The AWS zone mapping SkyPilot cached for the user's account (the newest file), or ``{}`` if none."""
    base = Path(runtime_dir or os.environ.get(SKY_RUNTIME_DIR_ENV) or Path.home())
    files = sorted(base.glob(MAPPING_GLOB), key=lambda p: p.stat().st_mtime)
    return read_zone_names(files[-1]) if files else {}


def skypilot_zone(cloud: str, region: str, zone: str | None, names: Mapping[str, str]) -> str | None:
    """The zone for a SkyPilot task: AWS IDs through ``names`` (kept when unmapped), GCP zones as they are,
    ``None`` where srifty's zone is not a SkyPilot zone (Azure's spot prices are per region)."""
    if zone is None or zone == region:
        return None
    return names.get(zone, zone) if cloud == "aws" else zone
