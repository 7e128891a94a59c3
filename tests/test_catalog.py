"""The bundled catalog: contents, lookups and errors."""

from __future__ import annotations

import json

import pytest

from srifty.catalog import describe, load_catalog
from srifty.errors import CatalogError


def test_catalog_has_three_clouds_and_known_types() -> None:
    catalog = load_catalog()
    assert {t.cloud for t in catalog.instance_types} == {"aws", "azure", "gcp"}
    g4 = catalog.get("g4dn.8xlarge", region="us-east-1")
    assert (g4.gpu_name, g4.gpus_per_vm, g4.vcpus) == ("T4", 1, 32.0)
    assert g4.gpu_memory_gib == pytest.approx(16.0)
    assert g4.on_demand_usd_per_hour == pytest.approx(2.176)
    assert g4.rated_network_gbps == pytest.approx(50.0)
    assert g4.gpu is not None and g4.gpu.fp32_flops_per_s == pytest.approx(8.1e12)
    assert len(g4.zones) >= 2


def test_spot_price_is_per_zone_and_defaults_to_cheapest() -> None:
    g4 = load_catalog().get("g4dn.8xlarge", region="us-east-1")
    by_zone = dict(g4.spot_usd_per_hour_by_zone)
    assert set(by_zone) <= set(g4.zones)
    assert g4.price_usd_per_hour("spot") == min(by_zone.values())
    zone, price = max(by_zone.items(), key=lambda kv: kv[1])
    assert g4.price_usd_per_hour("spot", zone) == price
    assert g4.spot_usd_per_hour is not None and g4.spot_usd_per_hour < g4.price_usd_per_hour("on_demand")
    with pytest.raises(CatalogError, match="zones in us-east-1"):
        g4.price_usd_per_hour("spot", "mars-1a")


def test_find_filters_by_gpu_cloud_region_market() -> None:
    rows = load_catalog().find(gpu="t4", cloud="aws", region="us-east-1", market="spot")
    names = {t.name for t in rows}
    assert {"g4dn.xlarge", "g4dn.8xlarge", "g4dn.12xlarge"} <= names
    assert all(t.name.startswith("g4dn") and t.has_spot for t in rows)


def test_unknown_names_suggest_the_closest() -> None:
    catalog = load_catalog()
    with pytest.raises(CatalogError, match=r"unknown instance type 'g4dn\.8xlarg'\. Did you mean 'g4dn\.8xlarge'"):
        catalog.get("g4dn.8xlarg")
    with pytest.raises(CatalogError, match="Did you mean 'T4'"):
        catalog.find(gpu="T5")
    with pytest.raises(CatalogError, match="offered in us-east-1, us-west-2"):
        catalog.get("p3.8xlarge", region="eu-west-1")
    with pytest.raises(CatalogError, match="several regions"):
        catalog.get("p3.8xlarge")
    with pytest.raises(CatalogError, match="Did you mean 'aws'"):
        catalog.find(cloud="aws2")


def test_gcp_rows_are_marked_gpu_attachment_only() -> None:
    gcp = load_catalog().find(cloud="gcp")
    assert gcp and all(not t.price_covers_host_vm for t in gcp)
    assert all(t.vcpus is None and t.ram_bytes is None for t in gcp)
    t4x4 = load_catalog().get("T4:4", region="us-central1")
    assert t4x4.gpus_per_vm == 4 and t4x4.gpu_memory_gib == pytest.approx(16)


def test_azure_h100_gpu_count_is_corrected() -> None:
    rows = [t for t in load_catalog().find(cloud="azure") if t.name == "Standard_ND96isr_H100_v5"]
    assert rows and all(t.gpus_per_vm == 8 for t in rows)


def test_type_without_on_demand_price_is_spot_only() -> None:
    p5e = load_catalog().get("p5e.48xlarge", region="us-west-2")
    assert not p5e.has_on_demand and p5e.has_spot
    with pytest.raises(CatalogError, match="use market: spot"):
        p5e.price_usd_per_hour("on_demand")


def test_every_gpu_in_the_catalog_has_a_datasheet() -> None:
    catalog = load_catalog()
    missing = {t.gpu_name for t in catalog.instance_types if t.gpu is None}
    assert missing == set()


def test_describe_is_json_ready() -> None:
    text = json.dumps(describe(load_catalog().get("p3.8xlarge", region="us-east-1")))
    doc = json.loads(text)
    assert doc["gpus_per_vm"] == 4 and doc["gpu"] == "V100"
    assert doc["gpu_datasheet"]["intra_node_link"] == "nvlink2"
