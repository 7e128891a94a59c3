"""The numpy reader of saved XGBoost boosters agrees with XGBoost itself (issue 29: no XGBoost import to plan)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from srifty.network.trees import JsonBooster, UnsupportedBoosterError

xgb = pytest.importorskip("xgboost")

DATA = Path(str(resources.files("srifty.network").joinpath("data")))


def _rows(rng: np.random.Generator, n: int) -> np.ndarray:
    x = np.column_stack(
        [
            np.exp(rng.uniform(0, 20, n)),  # size_bytes
            rng.integers(1, 300, n),  # world_size
            rng.integers(1, 40, n),  # n_nodes
            rng.integers(1, 9, n),  # gpus_per_node
            rng.integers(1, 4, n),  # n_concurrent
            rng.uniform(1, 3200, n),  # link_gbps
            rng.integers(-1, 5, n),  # backend code: unseen (4) and negative ones too
        ]
    ).astype(np.float32)
    x[rng.random(x.shape) < 0.05] = np.nan  # missing values follow default_left
    return x


@pytest.mark.parametrize("side", ["small", "large"])
def test_the_embedded_boosters_predict_exactly_as_xgboost(side: str) -> None:
    raw = (DATA / f"default-net.{side}.xgb.json").read_bytes()
    reference = xgb.Booster()
    reference.load_model(bytearray(raw))
    mine = JsonBooster(raw)
    x = _rows(np.random.default_rng(7), 5000)
    np.testing.assert_allclose(mine.inplace_predict(x), reference.inplace_predict(x), rtol=0, atol=2e-6)
    assert mine.num_features() == reference.num_features()
    assert bytes(mine.save_raw("json")) == raw


def test_a_freshly_trained_categorical_booster_agrees() -> None:
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.normal(size=400), rng.integers(0, 6, 400)]).astype(np.float32)
    y = x[:, 0] + np.where(np.isin(x[:, 1], [1, 4]), 2.0, -1.0)
    data = xgb.DMatrix(x, label=y, feature_types=["q", "c"], enable_categorical=True)
    booster = xgb.train({"max_depth": 3, "max_cat_to_onehot": 1, "tree_method": "hist"}, data, num_boost_round=12)
    raw = bytes(booster.save_raw("json"))
    assert any(1 in t["split_type"] for t in json.loads(raw)["learner"]["gradient_booster"]["model"]["trees"])
    probe = _two_columns(rng)
    np.testing.assert_allclose(JsonBooster(raw).inplace_predict(probe), booster.inplace_predict(probe), atol=2e-6)


def _two_columns(rng: np.random.Generator) -> np.ndarray:
    probe = np.column_stack([rng.normal(size=300), rng.integers(-1, 8, 300)]).astype(np.float32)
    probe[::7, 1] = np.nan
    return probe


def test_what_it_cannot_evaluate_is_refused() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 2)).astype(np.float32)
    booster = xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(x, label=x[:, 0] > 0), num_boost_round=2)
    with pytest.raises(UnsupportedBoosterError, match="objective binary:logistic"):
        JsonBooster(bytes(booster.save_raw("json")))
    with pytest.raises(UnsupportedBoosterError, match="not an XGBoost JSON model"):
        JsonBooster(b'{"learner": {}}')


def test_planning_imports_neither_xgboost_nor_scipy_stats() -> None:
    code = (
        "import sys\n"
        "from srifty.plan.api import plan_spec\n"
        "plan, _ = plan_spec('examples/case1-resnet50.yaml')\n"
        "assert plan.best is not None\n"
        "print(sorted(m for m in ('xgboost', 'sklearn', 'scipy.stats') if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_walk_without_paired_children_agrees() -> None:
    """XGBoost numbers a right child after its left sibling, and the walk uses that; the general walk (each child
    looked up) is taken for a forest where that fails, and gives the same leaves."""
    import dataclasses

    raw = (DATA / "default-net.large.xgb.json").read_bytes()
    mine = JsonBooster(raw)
    x = _rows(np.random.default_rng(11), 2000)
    paired = mine._forest.leaves(x)
    assert mine._forest.paired
    general = dataclasses.replace(mine._forest, paired=False)
    np.testing.assert_array_equal(general.leaves(x), paired)
