"""Configurations: groups of ``count × instance type @ local batch``, in the paper's notation.

``"4xg4dn.12xlarge@64,2xp3.8xlarge@128"`` is four g4dn.12xlarge VMs and two p3.8xlarge VMs; the local
batch is per GPU, so each g4dn.12xlarge (4 GPUs) processes 4 × 64 samples per iteration.

A configuration lives in one region of one cloud, and its spot VMs in one zone (a data-parallel job wants
its VMs together): ``Config.zone`` names that zone, and every spot group is priced there. A configuration
without a zone is priced in the cheapest zone that offers all of its spot groups, never at each type's own
cheapest zone.

A configuration also says how it spreads the model (``Config.parallelism``): ``ddp`` replicates it on every
GPU, ``fsdp`` shards parameters, gradients and optimizer state over every GPU, ``hsdp`` shards inside each VM
and replicates across VMs; ``checkpointing`` says whether every block is activation-checkpointed. The
notation does not carry them (:meth:`Config.describe` does).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from srifty.catalog import Catalog, InstanceType, Market, load_catalog
from srifty.errors import CatalogError, SpecError

#: How a configuration spreads the model over its GPUs (see the module docstring).
Parallelism = Literal["ddp", "fsdp", "hsdp"]
PARALLELISMS: tuple[Parallelism, ...] = ("ddp", "fsdp", "hsdp")

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
        """What the whole group costs per hour on its market (spot: in ``zone``, or the type's cheapest zone)."""
        return self.count * self.instance.price_usd_per_hour(self.market, zone)

    def notation(self) -> str:
        """The paper's ``<num>x<instance>@<batch>``."""
        return f"{self.count}x{self.instance.name}@{self.local_batch}"


@dataclass(frozen=True)
class Config:
    """One candidate configuration: one or more groups (at most one per instance type and market), all in one
    region of one cloud; ``zone`` is where its spot VMs run (``None``: not placed yet, see :meth:`spot_zone`);
    ``parallelism`` and ``checkpointing`` how it spreads the model (see the module docstring)."""

    groups: tuple[ConfigGroup, ...]
    zone: str | None = None
    parallelism: Parallelism = "ddp"
    checkpointing: bool = False

    def __post_init__(self) -> None:
        if not self.groups:
            raise SpecError("a configuration needs at least one group of VMs")
        for group in self.groups:
            if group.count < 1 or group.local_batch < 1:
                raise SpecError(f"{group.notation()}: count and local batch must be at least 1")
        if self.parallelism not in PARALLELISMS:
            raise SpecError(f"unknown parallelism '{self.parallelism}'; use one of {', '.join(PARALLELISMS)}")
        if self.parallelism == "hsdp" and len({g.instance.gpus_per_vm for g in self.groups}) > 1:
            raise SpecError(f"{self.notation()}: hsdp shards inside each VM, so every VM needs the same number of GPUs")
        places = {(g.instance.cloud, g.instance.region) for g in self.groups}
        if len(places) > 1:
            listed = ", ".join(f"{c} {r}" for c, r in sorted(places))
            raise SpecError(f"{self.notation()} spans {listed}; a configuration runs in one region of one cloud")

    @property
    def cloud(self) -> str:
        """The cloud every group runs in."""
        return self.groups[0].instance.cloud

    @property
    def region(self) -> str:
        """The region every group runs in."""
        return self.groups[0].instance.region

    def spot_zone(self) -> str | None:
        """The zone its spot groups are priced in: ``zone`` if placed, else the cheapest zone offering every
        spot group (``None`` without spot groups).

        Raises:
            CatalogError: no zone offers all of its spot groups.
        """
        if self.zone is not None:
            return self.zone
        spot = [g for g in self.groups if g.market == "spot"]
        if not spot:
            return None
        common = self.spot_zones_offered()
        if not common:
            names = ", ".join(g.instance.name for g in spot)
            raise CatalogError(
                f"no zone of {self.region} offers all of {names} on the spot market; a configuration's spot VMs "
                "run in one zone, so these types cannot be combined there"
            )
        return min(sorted(common), key=lambda z: sum(g.price_usd_per_hour(z) for g in spot))

    def spot_zones_offered(self) -> set[str]:
        """Every zone of its region that offers all of its spot groups (empty without spot groups)."""
        spot = [g for g in self.groups if g.market == "spot"]
        if not spot:
            return set()
        return set.intersection(*(set(dict(g.instance.spot_usd_per_hour_by_zone)) for g in spot))

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
        """Cost of the whole configuration per hour, every spot group priced in :meth:`spot_zone`."""
        return sum(self.group_prices_usd_per_hour())

    def group_prices_usd_per_hour(self) -> list[float]:
        """What each group costs per hour, spot groups priced in :meth:`spot_zone`."""
        zone = self.spot_zone()
        return [g.price_usd_per_hour(zone if g.market == "spot" else None) for g in self.groups]

    def placed(self, zone: str | None) -> Config:
        """This configuration with its spot VMs in ``zone`` (unchanged when it already has a zone)."""
        return self if self.zone is not None or zone is None else replace(self, zone=zone)

    def sharded(self, parallelism: Parallelism, checkpointing: bool = False) -> Config:
        """This configuration spreading the model by ``parallelism`` (with ``checkpointing``)."""
        if parallelism == self.parallelism and checkpointing == self.checkpointing:
            return self
        return replace(self, parallelism=parallelism, checkpointing=checkpointing)

    @property
    def shard_size(self) -> int:
        """GPUs one copy of the model state is spread over: 1 (``ddp``), every GPU (``fsdp``), one VM's GPUs
        (``hsdp``)."""
        if self.parallelism == "fsdp":
            return self.world_size
        if self.parallelism == "hsdp":
            return self.groups[0].instance.gpus_per_vm
        return 1

    def sharding_env(self) -> dict[str, str]:
        """What a training script needs to spread the model as planned (``srifty.torch.fsdp`` reads it): empty
        for plain DDP, else ``SRIFTY_PARALLELISM``, ``SRIFTY_SHARD_GROUP_SIZE`` and
        ``SRIFTY_ACTIVATION_CHECKPOINTING`` (``1`` or ``0``)."""
        if self.parallelism == "ddp" and not self.checkpointing:
            return {}
        return {
            "SRIFTY_PARALLELISM": self.parallelism,
            "SRIFTY_SHARD_GROUP_SIZE": str(self.shard_size),
            "SRIFTY_ACTIVATION_CHECKPOINTING": "1" if self.checkpointing else "0",
        }

    def describe(self) -> str:
        """The notation and how it spreads the model: ``"2xp4d.24xlarge@4 (fsdp over 16 GPUs)"``."""
        how = {
            "ddp": "",
            "fsdp": f"fsdp over {self.shard_size} GPU" + ("s" if self.shard_size != 1 else ""),
            "hsdp": f"hsdp: sharded over each VM's {self.shard_size} GPUs",
        }[self.parallelism]
        if self.checkpointing:
            how = f"{how}, activation checkpointing" if how else "ddp, activation checkpointing"
        return f"{self.notation()} ({how})" if how else self.notation()

    def where(self) -> str:
        """``"aws us-east-1 use1-az4"``: cloud, region and (when placed) zone."""
        return " ".join(part for part in (self.cloud, self.region, self.zone) if part)

    def notation(self) -> str:
        """``"4xg4dn.12xlarge@64,2xp3.8xlarge@128"`` (the placement is not part of it: see :meth:`where`)."""
        return ",".join(g.notation() for g in self.groups)

    def tagged(self) -> str:
        """The notation with each group's market, ``"4xg4dn.12xlarge@64[spot]"`` (:func:`parse_config` reads it)."""
        return ",".join(f"{g.notation()}[{g.market}]" for g in self.groups)

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        """What tells two configurations apart: markets, cloud, region and zone as well as the notation."""
        return (self.tagged(), self.cloud, self.region, self.zone)

    def __str__(self) -> str:
        return self.notation()


def parse_config(
    text: str,
    region: str,
    cloud: str = "aws",
    catalog: Catalog | None = None,
    markets: dict[str, Market] | None = None,
    zone: str | None = None,
) -> Config:
    """Parse ``"4xg4dn.12xlarge@64,2xp3.8xlarge@128"`` against the catalog, its spot VMs in ``zone`` if given.

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
    return Config(tuple(groups), zone)


def make_config(
    groups: Sequence[tuple[InstanceType, int, int] | tuple[InstanceType, int, int, Market]],
) -> Config:
    """A config from ``(instance, count, local_batch[, market])`` tuples."""
    return Config(tuple(ConfigGroup(*g) for g in groups))
