"""Catalog records: one GPU datasheet row and one purchasable VM type in one region."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from srifty.errors import CatalogError
from srifty.units import BYTES_PER_GIB

Market = Literal["spot", "on_demand"]
MARKETS: tuple[Market, ...] = ("spot", "on_demand")


@dataclass(frozen=True)
class GpuSpec:
    """Headline datasheet figures of one GPU model (peaks, not achieved rates).

    Attributes:
        name: as in the catalogs' ``AcceleratorName`` (``"T4"``, ``"A10G"``, ``"V100-32GB"``).
        memory_bytes: device memory.
        mem_bw_bytes_per_s: peak memory bandwidth.
        fp32_flops_per_s: dense FP32 peak.
        tensor16_flops_per_s: dense FP16 peak with FP32 accumulation (tensor cores from Volta on; P100's
            FP16 is non-tensor); ``None`` where the GPU has no fast FP16.
        intra_node_link: ``"nvlink2"``, ``"pcie3"`` and so on, between GPUs of one VM.
        link_bytes_per_s_per_gpu: that link's bandwidth per GPU (NVLink: total bidirectional).
        notes: caveats copied from the datasheet table.
        generation: architecture, lower case (``"volta"``, ``"ampere"``, ``"hopper"``); ``""`` where unknown.
        tf32_flops_per_s: dense TF32 tensor-core peak (Ampere and later), ``None`` before.
        bf16_flops_per_s: dense BF16 tensor-core peak (Ampere and later), ``None`` before.
        sm_count: streaming multiprocessors (how many tiles of a matrix product run at once), ``None``
            where the datasheet row lacks it.
    """

    name: str
    memory_bytes: int
    mem_bw_bytes_per_s: float
    fp32_flops_per_s: float
    tensor16_flops_per_s: float | None
    intra_node_link: str
    link_bytes_per_s_per_gpu: float
    notes: str = ""
    generation: str = ""
    tf32_flops_per_s: float | None = None
    bf16_flops_per_s: float | None = None
    sm_count: int | None = None


@dataclass(frozen=True)
class InstanceType:
    """One VM type as offered in one region of one cloud.

    Prices are USD per VM-hour; ``on_demand_usd_per_hour`` is ``None`` where the source lists none (AWS
    p5e.48xlarge). ``spot_usd_per_hour_by_zone`` maps each availability zone to its spot price; on Azure,
    whose catalog gives one spot price per region, the key is the region itself.

    ``price_covers_host_vm`` is ``False`` for GCP rows: the bundled GCP file holds GPU-attachment prices
    only, and on GCP a GPU is attached to an n1 host VM whose price is *not* included.
    """

    name: str
    cloud: str
    region: str
    zones: tuple[str, ...]
    gpu_name: str
    gpus_per_vm: int
    gpu_memory_bytes: int
    vcpus: float | None
    ram_bytes: int | None
    on_demand_usd_per_hour: float | None
    spot_usd_per_hour_by_zone: tuple[tuple[str, float], ...]
    rated_network_gbps: float | None
    gpu: GpuSpec | None
    price_covers_host_vm: bool = True

    @property
    def gpu_memory_gib(self) -> float:
        """Memory of one GPU in GiB."""
        return self.gpu_memory_bytes / BYTES_PER_GIB

    @property
    def has_on_demand(self) -> bool:
        """Whether the catalog lists an on-demand price for this type in this region."""
        return self.on_demand_usd_per_hour is not None

    @property
    def has_spot(self) -> bool:
        """Whether the catalog lists a spot price for this type in this region."""
        return bool(self.spot_usd_per_hour_by_zone)

    def markets(self, wanted: Market | None = None) -> list[Market]:
        """The markets this type is sold on here (spot first), or only ``wanted`` where it is sold on it."""
        sold: list[Market] = []
        if self.has_spot and wanted in (None, "spot"):
            sold.append("spot")
        if self.has_on_demand and wanted in (None, "on_demand"):
            sold.append("on_demand")
        return sold

    @property
    def spot_usd_per_hour(self) -> float | None:
        """The cheapest zone's spot price, or ``None`` where there is no spot market."""
        if not self.spot_usd_per_hour_by_zone:
            return None
        return min(price for _, price in self.spot_usd_per_hour_by_zone)

    @property
    def cheapest_spot_zone(self) -> str | None:
        """The zone whose spot price is lowest (ties: first in name order)."""
        if not self.spot_usd_per_hour_by_zone:
            return None
        return min(self.spot_usd_per_hour_by_zone, key=lambda zp: (zp[1], zp[0]))[0]

    def price_usd_per_hour(self, market: Market, zone: str | None = None) -> float:
        """Price of one VM-hour on ``market``; spot in ``zone``, or in the cheapest zone when not given.

        Raises:
            CatalogError: spot is asked for where none is offered, or the zone is unknown.
        """
        if market == "on_demand":
            if self.on_demand_usd_per_hour is None:
                raise CatalogError(
                    f"{self.name} has no on-demand price in {self.region} in the bundled catalog; "
                    "use market: spot for it."
                )
            return self.on_demand_usd_per_hour
        if not self.spot_usd_per_hour_by_zone:
            raise CatalogError(
                f"{self.name} has no spot price in {self.region} in the bundled catalog; use market: on_demand for it."
            )
        by_zone = dict(self.spot_usd_per_hour_by_zone)
        if zone is None:
            return min(by_zone.values())
        if zone not in by_zone:
            raise CatalogError(
                f"{self.name} has no spot price in zone '{zone}'; its zones in {self.region} are "
                f"{', '.join(sorted(by_zone))}."
            )
        return by_zone[zone]


class OnMarket:
    """Base of a record that holds an instance type (``instance``) on a market (``market``): an offer, a
    candidate, the judge's rental offer. Gives its key and GPUs per VM."""

    instance: InstanceType
    market: Market

    @property
    def key(self) -> str:
        """``"p3.8xlarge/spot"`` (unique within one region)."""
        return f"{self.instance.name}/{self.market}"

    @property
    def gpus(self) -> int:
        """GPUs per VM."""
        return self.instance.gpus_per_vm
