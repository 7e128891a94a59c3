"""srifty picks the candidates: catalog search, filters, one zone per configuration, region and cloud choice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from srifty.catalog import GpuSpec, InstanceType, catalog_from, load_catalog
from srifty.errors import CatalogError, SpecError
from srifty.plan import expand_offers
from srifty.plan.api import plan_job
from srifty.plan.explain import count_text, per_type_cheapest_usd_per_hour
from srifty.spec import spec_from_mapping
from srifty.vocab import Config, ConfigGroup

MINIMAL = {"model": "resnet50", "global_batch": 256, "iterations": 200, "goal": "min_cost"}


def job(**fields: object):  # type: ignore[no-untyped-def]
    return spec_from_mapping({**MINIMAL, **fields})


def write(tmp_path: Path, **fields: object) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL, **fields}))
    return path


def flat(text: str) -> str:
    return " ".join(text.split())


def test_auto_offers_every_gpu_type_of_the_clouds_regions_on_each_market() -> None:
    catalog = load_catalog()
    offers = expand_offers(job(), catalog)
    aws = [t for t in catalog.instance_types if t.cloud == "aws"]
    assert {(o.instance.name, o.instance.region) for o in offers} == {(t.name, t.region) for t in aws}
    assert len(offers) == sum(t.has_spot + t.has_on_demand for t in aws)
    assert {o.quota for o in offers} == {8}
    narrowed = expand_offers(
        job(
            regions=["us-east-1"],
            default_quota=3,
            quota={"g4dn.12xlarge": 5},
            filter={"gpus": ["t4", "A10G"], "max_gpus_per_vm": 4, "market": "spot"},
        ),
        catalog,
    )
    assert narrowed and all(o.market == "spot" and o.instance.region == "us-east-1" for o in narrowed)
    assert {o.instance.gpu_name for o in narrowed} == {"T4", "A10G"}
    assert max(o.instance.gpus_per_vm for o in narrowed) == 4
    assert {o.instance.name: o.quota for o in narrowed}["g4dn.12xlarge"] == 5
    assert {o.quota for o in narrowed if o.instance.name != "g4dn.12xlarge"} == {3}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        # a GPU sold only in another cloud is refused with the GPUs sold here
        ({"filter": {"gpus": ["K80"]}}, r"filter\.gpus: 'K80' is not sold in aws\. .*GPUs there: A100, "),
        (
            {"filter": {"gpus": ["H200"], "max_gpus_per_vm": 4}, "regions": ["us-west-2"]},
            r"filter\.max_gpus_per_vm: 4 leaves no instance type in aws us-west-2: the fewest GPUs per VM there is 8",
        ),
        ({"clouds": ["azure"], "filter": {"gpus": ["L4"]}}, r"filter\.gpus: 'L4' is not sold in azure\."),
        (
            {"filter": {"market": "spot", "gpus": ["H100"], "max_gpus_per_vm": 1}, "regions": ["us-east-1"]},
            r"filter\.max_gpus_per_vm: 1 leaves no instance type",  # p5.4xlarge, the 1-GPU H100, has no spot price
        ),
    ],
)
def test_a_filter_that_leaves_nothing_is_named_with_exit_code_2(tmp_path: Path, cli, fields, message) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("plan", str(write(tmp_path, **fields)))
    assert code == 2 and "Traceback" not in err
    assert re.search(message, flat(err)), err


def test_quotas_that_cannot_place_the_global_batch_name_the_quota_with_exit_code_2(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    path = write(
        tmp_path,
        global_batch=1 << 20,
        regions=["us-east-1"],
        default_quota=1,
        filter={"gpus": ["T4"], "max_gpus_per_vm": 1, "market": "spot"},
    )
    code, _, err = cli("plan", str(path))
    assert code == 2 and "Traceback" not in err
    assert "quota binds" in flat(err) and "raise default_quota (now 1) or quota for single types" in flat(err)


def test_unknown_gpu_or_type_in_the_auto_fields_is_a_spec_error(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("plan", str(write(tmp_path, filter={"gpus": ["T5"]})))
    assert code == 2 and "unknown GPU 'T5'" in flat(err) and "Did you mean 'T4'" in flat(err)
    code, _, err = cli("plan", str(write(tmp_path, quota={"g4dn.8xlarg": 2})))
    assert code == 2 and "Did you mean 'g4dn.8xlarge'" in flat(err)
    code, _, err = cli("plan", str(write(tmp_path, region="us-east-1", regions=["us-west-2"])))
    assert code == 2 and "either `region` or `regions`" in flat(err)
    code, _, err = cli("plan", str(write(tmp_path, zones=["use1-az9"])))
    assert code == 2 and "not a zone of" in flat(err)
    listed = [{"instance_type": "g4dn.8xlarge", "quota": 2}]
    code, _, err = cli("plan", str(write(tmp_path, region="us-east-1", candidates=listed, default_quota=4)))
    assert code == 2 and "only apply to `candidates: auto`" in flat(err)


def test_a_spec_with_only_the_job_plans_across_the_catalog_and_explains_its_choice(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("plan", str(write(tmp_path, deadline_s=900)), "--json", str(tmp_path / "plan.json"))
    assert code == 0, err
    text = flat(out)
    assert "Chosen:" in text and "considered" in text and "left after pruning" in text
    assert re.search(r"Best found in aws us-(east-1|west-2)", text)
    doc = __import__("json").loads((tmp_path / "plan.json").read_text())
    best = doc["best"]
    assert best["region"] in ("us-east-1", "us-west-2") and doc["placement"]["region"] == best["region"]
    assert doc["explanation"] and doc["pruning"]["offers_before"] > doc["pruning"]["offers_after"] > 0
    assert doc["pruning"]["search_space_before"] >= doc["pruning"]["search_space_after"]


def test_no_configuration_mixes_zones_and_each_is_priced_in_its_zone() -> None:
    spec = job(
        region="us-east-1",
        global_batch=1024,
        candidates=[
            {"instance_type": "g4dn.8xlarge", "market": "spot", "quota": 8},
            {"instance_type": "g4dn.12xlarge", "market": "spot", "quota": 8},
        ],
    )
    plan, _ = plan_job(spec, mode="exhaustive", prune=False)
    assert plan.best is not None and plan.evaluated
    for s in plan.evaluated:
        zone = s.config.zone
        assert zone is not None  # spot VMs: one zone
        prices = [g.instance.price_usd_per_hour("spot", zone) * g.count for g in s.config.groups]
        assert s.price_usd_per_hour == pytest.approx(sum(prices))
    zones = {s.config.zone for s in plan.evaluated}
    assert len(zones) > 1  # the same configuration is judged in several zones
    assert plan.best.config.zone in zones


def _only_in(name: str, zone: str, price: float) -> InstanceType:
    return InstanceType(
        name=name,
        cloud="aws",
        region="us-east-1",
        zones=(zone,),
        gpu_name="T4",
        gpus_per_vm=1,
        gpu_memory_bytes=16 << 30,
        vcpus=8.0,
        ram_bytes=64 << 30,
        on_demand_usd_per_hour=None,
        spot_usd_per_hour_by_zone=((zone, price),),
        rated_network_gbps=25.0,
        gpu=load_catalog().gpu_spec("T4"),
    )


def test_types_not_offered_in_one_zone_are_never_combined() -> None:
    a, b = _only_in("a.t4", "use1-az1", 0.3), _only_in("b.t4", "use1-az2", 0.3)
    catalog = catalog_from([a, b], load_catalog().gpu_specs)
    listed = [{"instance_type": n, "market": "spot", "quota": 2} for n in ("a.t4", "b.t4")]
    plan, _ = plan_job(job(region="us-east-1", global_batch=256, candidates=listed), catalog, mode="exhaustive")
    assert plan.evaluated and all(len(s.config.groups) == 1 for s in plan.evaluated)
    # 4 VMs would place 512 only by combining the two zones: a quota infeasibility, not a mixed plan.
    plan, _ = plan_job(job(region="us-east-1", global_batch=512, candidates=listed), catalog, mode="exhaustive")
    assert plan.best is None and plan.infeasibility is not None
    assert plan.infeasibility.binding_constraint == "quota"
    assert "raise the candidates' quota" in plan.infeasibility.message
    with pytest.raises(CatalogError, match="no zone of us-east-1 offers all of"):
        Config((ConfigGroup(a, 1, 128, "spot"), ConfigGroup(b, 1, 128, "spot"))).price_usd_per_hour()


def test_per_type_cheapest_zone_pricing_understates_a_mixed_configuration() -> None:
    catalog = load_catalog()
    g8, g12 = catalog.get("g4dn.8xlarge", "us-east-1"), catalog.get("g4dn.12xlarge", "us-east-1")
    config = Config((ConfigGroup(g8, 2, 64, "spot"), ConfigGroup(g12, 4, 64, "spot")))
    assert g8.cheapest_spot_zone != g12.cheapest_spot_zone  # the bundled prices: use1-az1 and use1-az5
    honest = config.price_usd_per_hour()
    assert per_type_cheapest_usd_per_hour(config) < honest
    common = set(dict(g8.spot_usd_per_hour_by_zone)) & set(dict(g12.spot_usd_per_hour_by_zone))
    assert honest == min(config.placed(z).price_usd_per_hour() for z in common)


def test_regions_compete_and_the_plan_says_which_won_and_by_how_much() -> None:
    listed = [{"instance_type": "g4dn.12xlarge", "market": "spot", "quota": 8}]
    plan, _ = plan_job(job(regions=["us-east-1", "us-west-2"], candidates=listed, global_batch=512))
    assert plan.best is not None
    areas = {(s.config.cloud, s.config.region) for s in plan.evaluated}
    assert areas == {("aws", "us-east-1"), ("aws", "us-west-2")}
    other = "us-east-1" if plan.best.config.region == "us-west-2" else "us-west-2"
    line = next(x for x in plan.explanation if x.startswith(f"Best found in aws {other}"))
    assert re.search(r"\+\d+\.\d% cost", line)


def test_gpu_only_prices_are_ranked_apart_from_full_vm_prices() -> None:
    spec = job(
        clouds=["aws", "gcp"],
        regions=["us-east-1", "us-central1"],
        filter={"gpus": ["T4"], "max_gpus_per_vm": 1},
        default_quota=4,
    )
    plan, _ = plan_job(spec)
    assert plan.best is not None and plan.best.config.cloud == "aws"
    gcp = [s for s in plan.evaluated if s.config.cloud == "gcp" and s.feasible]
    assert gcp and min(s.cost_usd for s in gcp) < plan.best.cost_usd  # cheaper only because the host VM is missing
    assert any("GPU attachment" in note for note in plan.notes)
    assert any("(GPU-only price)" in line for line in plan.explanation)


def test_a_gpu_that_cannot_be_estimated_is_pruned_with_its_reason() -> None:
    mystery = GpuSpec("X1", 16 << 30, 3e11, 8e12, None, "pcie3", 16e9)
    catalog = load_catalog()
    known = catalog.get("g4dn.xlarge", "us-east-1")
    odd = InstanceType(**{**known.__dict__, "name": "x1.xlarge", "gpu_name": "X1", "gpu": mystery})
    custom = catalog_from([known, odd], {k: v for k, v in catalog.gpu_specs.items()})
    plan, _ = plan_job(job(region="us-east-1"), custom)
    assert plan.pruning is not None and plan.best is not None
    dropped = [t for t in plan.pruning.types if t.instance_type == "x1.xlarge"]
    assert {t.market for t in dropped} == {"spot", "on_demand"}
    for t in dropped:
        assert t.rule == "no profile" and "none can be estimated" in t.reason and "X1" in t.reason
    assert all(g.instance.name == "g4dn.xlarge" for g in plan.best.config.groups)


def test_explicit_candidates_without_a_region_are_searched_where_offered() -> None:
    listed = [{"instance_type": "p3.8xlarge", "market": "spot", "quota": 2, "region": "us-west-2"}]
    offers = expand_offers(job(candidates=listed), load_catalog())
    assert [(o.instance.name, o.instance.region) for o in offers] == [("p3.8xlarge", "us-west-2")]
    with pytest.raises(SpecError, match="not sold on the on_demand market"):
        expand_offers(job(candidates=[{"instance_type": "p5e.48xlarge", "quota": 1}]), load_catalog())


def test_configuration_counts_stay_readable_when_the_catalog_space_is_astronomical() -> None:
    assert count_text(1_482) == "1,482"
    assert count_text(7_581_915_404_783_275_833) == "7.582e+18"
