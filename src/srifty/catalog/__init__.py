"""Cloud catalog: GPU VM types with prices, GPU datasheets and rated network bandwidth.

Bundled data lives in ``data/v1`` with its provenance notes; see :func:`load_catalog`.
"""

from srifty.catalog.catalog import CLOUDS, Catalog, catalog_from, load_catalog
from srifty.catalog.loader import CATALOG_VERSION, describe
from srifty.catalog.records import MARKETS, GpuSpec, InstanceType, Market
from srifty.catalog.zones import opt_in_kind, without_opt_in_zones

__all__ = [
    "CATALOG_VERSION",
    "CLOUDS",
    "MARKETS",
    "Catalog",
    "GpuSpec",
    "InstanceType",
    "Market",
    "catalog_from",
    "describe",
    "load_catalog",
    "opt_in_kind",
    "without_opt_in_zones",
]
