"""Queries over the bundled catalog: by name, GPU, cloud, region and market.

Following SkyPilot's catalog, queries are plain methods over an immutable list of records; the loaded
catalog is cached per process by :func:`load_catalog`, never at import time.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from srifty.catalog.loader import load_all
from srifty.catalog.records import MARKETS, GpuSpec, InstanceType, Market
from srifty.errors import CatalogError, did_you_mean

CLOUDS = ("aws", "azure", "gcp")


@dataclass(frozen=True)
class Catalog:
    """An immutable set of instance types and GPU datasheets."""

    instance_types: tuple[InstanceType, ...]
    gpu_specs: dict[str, GpuSpec]

    def names(self, cloud: str | None = None) -> list[str]:
        """Distinct instance type names, sorted."""
        return sorted({t.name for t in self.instance_types if cloud is None or t.cloud == cloud})

    def regions(self, cloud: str | None = None) -> list[str]:
        """Distinct regions, sorted."""
        return sorted({t.region for t in self.instance_types if cloud is None or t.cloud == cloud})

    def gpu_names(self) -> list[str]:
        """GPU models that appear in the catalog, sorted."""
        return sorted({t.gpu_name for t in self.instance_types})

    def get(self, name: str, region: str | None = None, cloud: str | None = None) -> InstanceType:
        """The one record for ``name`` in ``region``.

        Raises:
            CatalogError: unknown name (with the closest valid names), not offered in that region
                (with the regions where it is), or ambiguous because no region was given.
        """
        if cloud is not None:
            self._check_cloud(cloud)
        matches = [t for t in self.instance_types if t.name == name and (cloud is None or t.cloud == cloud)]
        if not matches:
            raise CatalogError(
                f"unknown instance type '{name}'.{did_you_mean(name, self.names(cloud))} "
                "Run `srifty catalog list` to see every type."
            )
        if region is None:
            if len(matches) > 1:
                where = ", ".join(sorted(t.region for t in matches))
                raise CatalogError(f"'{name}' is offered in several regions ({where}); name one of them.")
            return matches[0]
        for t in matches:
            if t.region == region:
                return t
        where = ", ".join(sorted(t.region for t in matches))
        raise CatalogError(
            f"'{name}' is not offered in region '{region}' in the bundled catalog; "
            f"it is offered in {where}.{did_you_mean(region, [t.region for t in matches])}"
        )

    def find(
        self,
        gpu: str | None = None,
        cloud: str | None = None,
        region: str | None = None,
        market: Market | None = None,
    ) -> list[InstanceType]:
        """Records matching every given filter, sorted by cloud, region, then on-demand price.

        ``market="spot"`` keeps only types with a spot price, ``"on_demand"`` those with an on-demand
        one. GPU names match case-insensitively.

        Raises:
            CatalogError: an unknown GPU, cloud, region or market (with the closest valid names).
        """
        if cloud is not None:
            self._check_cloud(cloud)
        if gpu is not None and gpu.lower() not in {g.lower() for g in self.gpu_names()}:
            raise CatalogError(
                f"unknown GPU '{gpu}'.{did_you_mean(gpu, self.gpu_names())} Known GPUs: {', '.join(self.gpu_names())}."
            )
        if region is not None and region not in self.regions(cloud):
            scope = f" for {cloud}" if cloud else ""
            raise CatalogError(
                f"unknown region '{region}'{scope}.{did_you_mean(region, self.regions(cloud))} "
                f"Known regions: {', '.join(self.regions(cloud))}."
            )
        if market is not None and market not in MARKETS:
            raise CatalogError(f"unknown market '{market}'; use one of {', '.join(MARKETS)}.")
        rows = [
            t
            for t in self.instance_types
            if (gpu is None or t.gpu_name.lower() == gpu.lower())
            and (cloud is None or t.cloud == cloud)
            and (region is None or t.region == region)
            and (market != "spot" or t.has_spot)
            and (market != "on_demand" or t.has_on_demand)
        ]
        return sorted(rows, key=lambda t: (t.cloud, t.region, t.on_demand_usd_per_hour or 0.0, t.name))

    def gpu_spec(self, gpu: str) -> GpuSpec:
        """Datasheet figures of ``gpu``.

        Raises:
            CatalogError: no datasheet row for that GPU.
        """
        if gpu in self.gpu_specs:
            return self.gpu_specs[gpu]
        raise CatalogError(
            f"no datasheet figures for GPU '{gpu}'.{did_you_mean(gpu, self.gpu_specs)} "
            f"Known: {', '.join(sorted(self.gpu_specs))}."
        )

    @staticmethod
    def _check_cloud(cloud: str) -> None:
        if cloud not in CLOUDS:
            raise CatalogError(f"unknown cloud '{cloud}'.{did_you_mean(cloud, CLOUDS)} Use one of {', '.join(CLOUDS)}.")


@functools.lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The bundled catalog (``catalog/data/v1``), loaded once per process."""
    types, gpus = load_all()
    return Catalog(instance_types=tuple(types), gpu_specs=gpus)


def catalog_from(types: Sequence[InstanceType], gpus: dict[str, GpuSpec] | None = None) -> Catalog:
    """A catalog over explicit records (tests, or a user's own rows)."""
    return Catalog(instance_types=tuple(types), gpu_specs=dict(gpus or {}))
