"""Configurations: groups of ``count × instance type @ local batch``, in the paper's notation.

``"4xg4dn.12xlarge@64,2xp3.8xlarge@128"`` is four g4dn.12xlarge VMs and two p3.8xlarge VMs; the local
batch is per GPU, so each g4dn.12xlarge (4 GPUs) processes 4 × 64 samples per iteration.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from srifty.catalog import Catalog, InstanceType, Market, load_catalog
from srifty.errors import CatalogError, SpecError

_GROUP = re.compile(r"^\s*(\d+)\s*x\s*(\S+?)\s*@\s*(\d+)\s*(?:\[(spot|on[_-]?demand)\])?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ConfigGroup:
    """``count`` VMs of ``instance`` on ``market``, each GPU with ``local_batch`` samples per iteration."""

    instance: InstanceType
    count: int
    local_batch: int
    market: Market = "on_demand"

    @property
    def n_gpus(self) -> int:
        """GPUs (ranks) in this group."""
        return self.count * self.instance.gpus_per_vm

    @property
    def samples_per_iteration(self) -> int:
        """Samples this group processes per iteration."""
        return self.n_gpus * self.local_batch

    def price_usd_per_hour(self, zone: str | None = None) -> float:
        """What the whole group costs per hour on its market."""
        return self.count * self.instance.price_usd_per_hour(self.market, zone)

    def notation(self) -> str:
        """The paper's ``<num>x<instance>@<batch>``."""
        return f"{self.count}x{self.instance.name}@{self.local_batch}"


@dataclass(frozen=True)
class Config:
    """One candidate configuration: one or more groups (at most one per instance type and market)."""

    groups: tuple[ConfigGroup, ...]

    def __post_init__(self) -> None:
        if not self.groups:
            raise SpecError("a configuration needs at least one group of VMs")
        for group in self.groups:
            if group.count < 1 or group.local_batch < 1:
                raise SpecError(f"{group.notation()}: count and local batch must be at least 1")

    @property
    def world_size(self) -> int:
        """Total GPUs (DDP ranks)."""
        return sum(g.n_gpus for g in self.groups)

    @property
    def n_vms(self) -> int:
        """Total VMs."""
        return sum(g.count for g in self.groups)

    @property
    def global_batch(self) -> int:
        """Samples per iteration across all GPUs."""
        return sum(g.samples_per_iteration for g in self.groups)

    def price_usd_per_hour(self) -> float:
        """Cost of the whole configuration per hour."""
        return sum(g.price_usd_per_hour() for g in self.groups)

    def notation(self) -> str:
        """``"4xg4dn.12xlarge@64,2xp3.8xlarge@128"``."""
        return ",".join(g.notation() for g in self.groups)

    def __str__(self) -> str:
        return self.notation()


def parse_config(
    text: str,
    region: str,
    cloud: str = "aws",
    catalog: Catalog | None = None,
    markets: dict[str, Market] | None = None,
) -> Config:
    """Parse ``"4xg4dn.12xlarge@64,2xp3.8xlarge@128"`` against the catalog.

    A group may name its market as ``2xp3.8xlarge@128[spot]``; otherwise ``markets[type]`` or on-demand.

    Raises:
        SpecError: a group is not of the form ``<count>x<instance>@<batch>``, or names an unknown type.
    """
    cat = catalog or load_catalog()
    groups: list[ConfigGroup] = []
    for part in text.split(","):
        match = _GROUP.match(part)
        if not match:
            raise SpecError(
                f"'{part.strip()}' is not a config group; write <count>x<instance>@<local batch>, "
                "for example 4xg4dn.12xlarge@64"
            )
        count, name, batch = int(match.group(1)), match.group(2), int(match.group(3))
        market = None if match.group(4) is None else ("spot" if match.group(4).lower() == "spot" else "on_demand")
        try:
            instance = cat.get(name, region=region, cloud=cloud)
        except CatalogError as err:
            raise SpecError(f"config group '{part.strip()}': {err}") from None
        chosen: Market = market or (markets or {}).get(name, "on_demand")  # type: ignore[assignment]
        groups.append(ConfigGroup(instance, count, batch, chosen))
    return Config(tuple(groups))


def make_config(
    groups: Sequence[tuple[InstanceType, int, int] | tuple[InstanceType, int, int, Market]],
) -> Config:
    """A config from ``(instance, count, local_batch[, market])`` tuples."""
    return Config(tuple(ConfigGroup(*g) for g in groups))
