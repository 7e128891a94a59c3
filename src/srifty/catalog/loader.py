"""Parse the bundled catalog CSVs (``catalog/data/v1``) into :class:`InstanceType` records.

Pure functions over the files; nothing is read at import time. See ``data/v1/PROVENANCE.md`` for where
each file came from and the corrections applied here.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable, Iterator
from importlib import resources
from typing import Any

from srifty.catalog.records import GpuSpec, InstanceType
from srifty.units import BYTES_PER_GIB, mib_to_bytes

CATALOG_VERSION = "v1"

# Rows whose source value is known to be wrong, corrected here (the CSV stays as transcribed).
# Azure's catalog lists ND96isr_H100_v5 with 12 accelerators; the VM has 8 H100 GPUs.
GPU_COUNT_CORRECTIONS: dict[tuple[str, str], int] = {("azure", "Standard_ND96isr_H100_v5"): 8}


def _rows(filename: str) -> Iterator[dict[str, str]]:
    data = resources.files("srifty.catalog").joinpath("data", CATALOG_VERSION, filename)
    with data.open("r", encoding="utf-8") as handle:
        yield from csv.DictReader(handle)


def _float_or_none(text: str | None) -> float | None:
    text = (text or "").strip()
    return float(text) if text else None


def _tflops(text: str | None) -> float | None:
    value = _float_or_none(text)
    return value * 1e12 if value is not None else None


def load_gpu_specs() -> dict[str, GpuSpec]:
    """GPU datasheet figures by accelerator name (``gpu_specs.csv``)."""
    specs: dict[str, GpuSpec] = {}
    for row in _rows("gpu_specs.csv"):
        tensor = _float_or_none(row["tensor16_tflops_dense"])
        specs[row["accelerator"]] = GpuSpec(
            name=row["accelerator"],
            memory_bytes=int(float(row["memory_gib"]) * BYTES_PER_GIB),
            mem_bw_bytes_per_s=float(row["mem_bw_gbs"]) * 1e9,
            fp32_flops_per_s=float(row["fp32_tflops"]) * 1e12,
            tensor16_flops_per_s=tensor * 1e12 if tensor is not None else None,
            intra_node_link=row["intra_node_link"],
            link_bytes_per_s_per_gpu=float(row["link_gbs_per_gpu"]) * 1e9,
            notes=row.get("notes", ""),
            generation=(row.get("generation") or "").strip().lower(),
            tf32_flops_per_s=_tflops(row.get("tf32_tflops_dense")),
            bf16_flops_per_s=_tflops(row.get("bf16_tflops_dense")),
            sm_count=int(row["sm_count"]) if (row.get("sm_count") or "").strip() else None,
        )
    return specs


def load_aws_network_gbps() -> dict[str, float]:
    """AWS baseline network bandwidth in Gbps by instance type (``aws_network_bandwidth.csv``)."""
    return {row["InstanceType"]: float(row["Gbps"]) for row in _rows("aws_network_bandwidth.csv")}


def _group(rows: Iterable[dict[str, str]], key_fields: tuple[str, ...]) -> dict[tuple[str, ...], list]:
    groups: dict[tuple[str, ...], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[f] for f in key_fields)].append(row)
    return groups


def _spot_by_zone(rows: list[dict[str, str]], zone_field: str | None) -> tuple[tuple[str, float], ...]:
    prices: dict[str, float] = {}
    for row in rows:
        price = _float_or_none(row.get("SpotPrice"))
        if price is None or price <= 0:
            continue
        zone = row[zone_field] if zone_field else row["Region"]
        prices[zone] = price
    return tuple(sorted(prices.items()))


def load_aws(gpus: dict[str, GpuSpec], network_gbps: dict[str, float]) -> list[InstanceType]:
    """AWS GPU VMs, one record per (type, region) with per-zone spot prices (``aws_gpu_vms.csv``)."""
    out = []
    for (name, region), rows in sorted(_group(_rows("aws_gpu_vms.csv"), ("InstanceType", "Region")).items()):
        first = rows[0]
        out.append(
            InstanceType(
                name=name,
                cloud="aws",
                region=region,
                zones=tuple(sorted({r["AvailabilityZone"] for r in rows})),
                gpu_name=first["AcceleratorName"],
                gpus_per_vm=int(float(first["AcceleratorCount"])),
                gpu_memory_bytes=mib_to_bytes(float(first["GpuMemoryMiB"])),
                vcpus=float(first["vCPUs"]),
                ram_bytes=int(float(first["MemoryGiB"]) * BYTES_PER_GIB),
                on_demand_usd_per_hour=_float_or_none(first["Price"]),
                spot_usd_per_hour_by_zone=_spot_by_zone(rows, "AvailabilityZone"),
                rated_network_gbps=network_gbps.get(name),
                gpu=gpus.get(first["AcceleratorName"]),
            )
        )
    return out


def load_azure(gpus: dict[str, GpuSpec]) -> list[InstanceType]:
    """Azure GPU VMs (``azure_gpu_vms.csv``); spot prices are regional, GPU memory from the datasheet."""
    out = []
    for (name, region), rows in sorted(_group(_rows("azure_gpu_vms.csv"), ("InstanceType", "Region")).items()):
        first = rows[0]
        gpu = gpus.get(first["AcceleratorName"])
        count = GPU_COUNT_CORRECTIONS.get(("azure", name), int(float(first["AcceleratorCount"])))
        out.append(
            InstanceType(
                name=name,
                cloud="azure",
                region=region,
                zones=(),
                gpu_name=first["AcceleratorName"],
                gpus_per_vm=count,
                gpu_memory_bytes=gpu.memory_bytes if gpu else 0,
                vcpus=float(first["vCPUs"]),
                ram_bytes=int(float(first["MemoryGiB"]) * BYTES_PER_GIB),
                on_demand_usd_per_hour=_float_or_none(first["Price"]),
                spot_usd_per_hour_by_zone=_spot_by_zone(rows, None),
                rated_network_gbps=None,
                gpu=gpu,
            )
        )
    return out


def gcp_offering_name(accelerator: str, count: int | str) -> str:
    """Name of a GCP GPU offering in SkyPilot's accelerator notation, for example ``"T4:4"``."""
    return f"{accelerator}:{int(float(count))}"


def load_gcp(gpus: dict[str, GpuSpec]) -> list[InstanceType]:
    """GCP GPU attachments (``gcp_gpu_vms.csv``). Prices exclude the n1 host VM; vCPUs and RAM unknown."""
    out = []
    rows_by_key = _group(_rows("gcp_gpu_vms.csv"), ("AcceleratorName", "AcceleratorCount", "Region"))
    for (accel, count, region), rows in sorted(rows_by_key.items()):
        gpu = gpus.get(accel)
        out.append(
            InstanceType(
                name=gcp_offering_name(accel, count),
                cloud="gcp",
                region=region,
                zones=tuple(sorted({r["AvailabilityZone"] for r in rows})),
                gpu_name=accel,
                gpus_per_vm=int(float(count)),
                gpu_memory_bytes=gpu.memory_bytes if gpu else 0,
                vcpus=None,
                ram_bytes=None,
                on_demand_usd_per_hour=_float_or_none(rows[0]["Price"]),
                spot_usd_per_hour_by_zone=_spot_by_zone(rows, "AvailabilityZone"),
                rated_network_gbps=None,
                gpu=gpu,
                price_covers_host_vm=False,
            )
        )
    return out


def load_all() -> tuple[list[InstanceType], dict[str, GpuSpec]]:
    """Every bundled instance type and GPU spec."""
    gpus = load_gpu_specs()
    types = load_aws(gpus, load_aws_network_gbps()) + load_azure(gpus) + load_gcp(gpus)
    return types, gpus


def describe(instance: InstanceType) -> dict[str, Any]:
    """A JSON-ready dict of one record, with units in the keys."""
    return {
        "name": instance.name,
        "cloud": instance.cloud,
        "region": instance.region,
        "zones": list(instance.zones),
        "gpu": instance.gpu_name,
        "gpus_per_vm": instance.gpus_per_vm,
        "gpu_memory_gib": round(instance.gpu_memory_gib, 3),
        "vcpus": instance.vcpus,
        "ram_gib": round(instance.ram_bytes / BYTES_PER_GIB, 3) if instance.ram_bytes else None,
        "on_demand_usd_per_hour": instance.on_demand_usd_per_hour,
        "spot_usd_per_hour": instance.spot_usd_per_hour,
        "spot_usd_per_hour_by_zone": dict(instance.spot_usd_per_hour_by_zone),
        "rated_network_gbps": instance.rated_network_gbps,
        "price_covers_host_vm": instance.price_covers_host_vm,
        "gpu_datasheet": None
        if instance.gpu is None
        else {
            "memory_gib": instance.gpu.memory_bytes / BYTES_PER_GIB,
            "mem_bw_gb_per_s": instance.gpu.mem_bw_bytes_per_s / 1e9,
            "fp32_tflops": instance.gpu.fp32_flops_per_s / 1e12,
            "tensor16_tflops": None
            if instance.gpu.tensor16_flops_per_s is None
            else instance.gpu.tensor16_flops_per_s / 1e12,
            "intra_node_link": instance.gpu.intra_node_link,
        },
    }
