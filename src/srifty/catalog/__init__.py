"""Cloud catalog: GPU VM types with prices, GPU datasheets and rated network bandwidth.

Bundled data lives in ``data/v1`` with its provenance notes; see :func:`load_catalog`.
"""

from srifty.catalog.catalog import CLOUDS, Catalog, catalog_from, load_catalog
from srifty.catalog.loader import CATALOG_VERSION, describe, load_gpu_specs
from srifty.catalog.records import MARKETS, GpuSpec, InstanceType, Market, OnMarket
from srifty.catalog.zone_names import read_zone_names, skypilot_zone, skypilot_zone_names
from srifty.catalog.zones import opt_in_kind, without_opt_in_zones

__all__ = [
    "CATALOG_VERSION",
    "CLOUDS",
    "MARKETS",
    "Catalog",
    "GpuSpec",
    "InstanceType",
    "Market",
    "OnMarket",
    "catalog_from",
    "describe",
    "load_catalog",
    "load_gpu_specs",
    "opt_in_kind",
    "read_zone_names",
    "skypilot_zone",
    "skypilot_zone_names",
    "without_opt_in_zones",
]
