"""The judge's own space, scoring and search (``srifty.evaluate.truth``) and its own counts of the models
(``srifty.cloud.architectures``): the work is always divided exactly, the wider space holds srifty's, branch and
bound finds what exhaustive search finds, and the counted models are the published ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from srifty.catalog import load_catalog
from srifty.cloud import EmulatedCloud
from srifty.cloud.architectures import ARCHITECTURES, count, workload
from srifty.cloud.reference_data import h200_curves
from srifty.evaluate.truth import POWERS_OF_TWO, SearchSettings, TruthJudge, rental_offers, search
from srifty.evaluate.truth.offers import RentalOffer, cheapest_placement
from srifty.evaluate.truth.space import Levels, OfferCurve, powers_of_two_split, wide_split
from srifty.spec import spec_from_mapping

CATALOG = load_catalog()


def curve(name: str, quota: int, max_batch: int, ms_per_sample: float, floor_ms: float) -> OfferCurve:
    instance = CATALOG.get(name, region="us-east-1", cloud="aws")
    offer = RentalOffer(instance, "spot", quota, frozenset(z for z, _ in instance.spot_usd_per_hour_by_zone))
    batches = np.arange(1, max_batch + 1)
    return OfferCurve(offer, np.maximum(floor_ms, ms_per_sample * batches))


CURVES = (
    curve("g4dn.xlarge", 6, 300, 1.0, 5.0),
    curve("g4dn.12xlarge", 4, 200, 0.8, 6.0),
    curve("p3.16xlarge", 2, 400, 0.3, 4.0),
)
LEVELS = Levels.of(CURVES)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 6), st.integers(0, 4), st.integers(0, 2), st.integers(1, 9000))
@example(1, 0, 1, 15)  # 1 GPU at 7 + 8 GPUs at 1: found only above the levels tried first (make test, 1e497d3)
def test_the_wide_split_divides_the_work_exactly_and_as_evenly_as_the_gpus_allow(
    a: int, b: int, c: int, global_batch: int
) -> None:
    counts = (a, b, c)
    parts = wide_split(CURVES, counts, global_batch, LEVELS)
    gpus = [n * cv.gpus for n, cv in zip(counts, CURVES, strict=True)]
    if parts is None:
        capacity = sum(g * cv.max_batch for g, cv in zip(gpus, CURVES, strict=True))
        gcd = math.gcd(*(cv.gpus for n, cv in zip(counts, CURVES, strict=True) if n)) if any(counts) else 1
        assert not any(counts) or sum(gpus) > global_batch or capacity < global_batch or global_batch % gcd
        return
    assert sum(n * CURVES[i].gpus * batch for i, n, batch in parts) == global_batch
    for i, n in enumerate(counts):  # every VM present, each offer at b or b - 1
        mine = [(m, batch) for j, m, batch in parts if j == i]
        assert sum(m for m, _ in mine) == n
        assert len(mine) <= 2 and (len(mine) < 2 or abs(mine[0][1] - mine[1][1]) == 1)
        assert all(1 <= batch <= CURVES[i].max_batch for _, batch in mine)
    # no other division of these VMs has a faster slowest GPU (checked against srifty's rule, a subset)
    rule = powers_of_two_split(CURVES, counts, global_batch)
    if rule is not None:
        assert sum(n * CURVES[i].gpus * batch for i, n, batch in rule) == global_batch
        assert max(CURVES[i].ms(batch) for i, _, batch in parts) <= max(CURVES[i].ms(batch) for i, _, batch in rule)


def test_a_global_batch_no_power_of_two_divides_is_still_divided() -> None:
    parts = wide_split(CURVES, (3, 0, 0), 800, LEVELS)
    assert parts is not None and sorted((b, n) for _, n, b in parts) == [(266, 1), (267, 2)]
    assert powers_of_two_split(CURVES, (3, 0, 0), 800) is None


def spec(**extra: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "name": "judge-test",
        "model": "resnet18",
        "global_batch": 600,
        "iterations": 400,
        "goal": "min_cost",
        "deadline_s": 900,
        "region": "us-east-1",
        "candidates": [
            {"instance_type": "g4dn.xlarge", "market": "spot", "quota": 6},
            {"instance_type": "p3.2xlarge", "market": "spot", "quota": 4},
            {"instance_type": "g5.xlarge", "market": "on_demand", "quota": 5},
        ],
    }
    doc.update(extra)
    return doc


def test_the_judge_reads_what_a_spec_may_rent_and_where() -> None:
    offers = rental_offers(spec_from_mapping(spec(), "test"), CATALOG, "aws", "us-east-1")
    assert [o.key for o in offers] == ["g4dn.xlarge/spot", "g5.xlarge/on_demand", "p3.2xlarge/spot"]
    spot, on_demand = offers[0], offers[1]
    assert spot.zones and on_demand.zones is None  # spot runs in a zone; on-demand anywhere in the region
    zone, price = cheapest_placement([(spot, 2), (on_demand, 1)]) or ("", 0.0)
    assert zone in spot.zones and zone in on_demand.instance.zones
    assert price == pytest.approx(2 * spot.price_usd_per_hour(zone) + on_demand.price_usd_per_hour(None))
    assert cheapest_placement([(on_demand, 3)]) == (None, pytest.approx(3 * on_demand.price_usd_per_hour(None)))


@pytest.mark.slow
@pytest.mark.parametrize("goal", ["min_cost", "min_time"])
def test_branch_and_bound_finds_the_optimum_exhaustive_search_finds(goal: str) -> None:
    constraint = {"deadline_s": 900} if goal == "min_cost" else {"budget_usd": 0.9}
    doc = spec(goal=goal, **constraint)
    if goal == "min_time":
        doc.pop("deadline_s")
    job = spec_from_mapping(doc, "test")
    cloud = EmulatedCloud(["resnet18"], seed=3)
    judge = TruthJudge(cloud, job, n_allocations=2, iters=8)
    exhaustive = search(judge, SearchSettings(exhaustive_limit=10**6))
    bounded = search(judge, SearchSettings(exhaustive_limit=0))
    assert exhaustive.method == "exhaustive" and bounded.method == "branch and bound"
    assert exhaustive.best is not None and bounded.best is not None
    assert bounded.best.config.key == exhaustive.best.config.key
    assert bounded.n_divided < exhaustive.n_divided and len(bounded.judged) < len(exhaustive.judged)
    rule = search(judge, SearchSettings(space=POWERS_OF_TWO, exhaustive_limit=10**6))
    key = (lambda o: o.time_s) if goal == "min_time" else (lambda o: o.cost_usd)
    assert rule.best is None or key(rule.best) >= key(exhaustive.best) * (1 - 0.02)


def test_the_judge_counts_each_model_as_published() -> None:
    """Parameters of every bundled model, counted from its definition alone, are the published model's; the
    H200 records count the eight it measured."""
    published = {
        "hf:bert-small": 28_795_194,
        "hf:gpt2-small": 30_339_456,
        "hf:xlm": 667_119_041,
        "srifty.compute.zoo:dlrm": 51_538_241,
    }
    for model in ARCHITECTURES:
        w = workload(model)
        curve_ = h200_curves().get(w["h200_name"])
        expected = curve_.n_params if curve_ is not None else published[model]
        assert w["n_params"] == expected, model
        assert len(w["params_ready_order"]) == len({p["name"] for p in w["params_ready_order"]})
        fractions = [p["ready_frac"] for p in w["params_ready_order"]]
        assert fractions == sorted(fractions) and fractions[-1] == 1.0
    # ResNet-50's forward: 4.09 GMACs (torchvision's published figure), convolutions nearly all of it
    fw = workload("resnet50")["phases"]["fw"]
    assert fw["conv_flops"] / 2 == pytest.approx(4.09e9, rel=0.01) and fw["matmul_flops"] < 0.01 * fw["conv_flops"]
    assert len(count("vgg16").ops) > 30
