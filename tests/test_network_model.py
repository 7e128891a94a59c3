"""BandwidthModel: MTU split, bounds, missing features, monotone extrapolation, save/load, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from srifty.errors import ArtifactError
from srifty.network import BandwidthModel
from srifty.network.errors import NetModelError
from srifty.network.features import busbw_cap_bytes_per_s
from srifty.network.model import model_paths
from srifty.network.tuning import mape
from srifty.units import gbps_to_bytes_per_s
from tests.network_synth import synth_probes


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return synth_probes(np.random.default_rng(7))


@pytest.fixture(scope="module")
def fitted(frame: pd.DataFrame) -> BandwidthModel:
    return BandwidthModel(n_trials=3, n_folds=3, n_jobs=1, seed=1).fit(frame)


def test_fit_learns_the_synthetic_ring(fitted: BandwidthModel, frame: pd.DataFrame) -> None:
    pred = fitted.predict_busbw_bytes_per_s(frame)
    truth = frame["busbw_bytes_per_s"].to_numpy()
    large = frame["size_bytes"].to_numpy() > 9001
    assert mape(truth[large], pred[large]) < 0.25  # per-allocation factors U(0.6, 1) are unseen
    assert mape(truth[~large], pred[~large]) < 0.25
    for side in ("small", "large"):
        metrics = fitted.metrics_[side]
        assert metrics["cv_mape"] is not None and metrics["n_allocations"] == 12
        assert metrics["trials"] == 3
    # cloud/region/zone hold one value in the synthetic set: dropped, and said so
    assert {"cloud", "region", "zone"} <= set(fitted.dropped_features_)


def test_mtu_split_routes_rows_to_their_model() -> None:
    # Two regimes with different labels: ≤ MTU rows at 1 MB/s, > MTU rows at 100 MB/s.
    rows = []
    for a in range(3):
        for s in (4, 64, 1024, 4096, 9000, 9001, 9002, 16384, 2**20, 2**22):
            for n in (2, 4):
                busbw = 1e6 if s <= 9001 else 1e8
                rows.append({"size_bytes": s, "world_size": n, "busbw_bytes_per_s": busbw, "allocation_id": str(a)})
    model = BandwidthModel(n_trials=0, n_jobs=1, target="busbw").fit(pd.DataFrame(rows))
    query = pd.DataFrame({"size_bytes": [9001, 9002, 9001, 9002], "world_size": [2, 2, 4, 4]})
    pred = model.predict_busbw_bytes_per_s(query)
    assert pred[[0, 2]] == pytest.approx([1e6, 1e6], rel=0.05)
    assert pred[[1, 3]] == pytest.approx([1e8, 1e8], rel=0.05)
    assert model.metrics_["small"]["n_rows"] == 36 and model.metrics_["large"]["n_rows"] == 24


def test_a_different_mtu_moves_the_split(frame: pd.DataFrame) -> None:
    model = BandwidthModel(n_trials=0, n_jobs=1, mtu_bytes=1024).fit(frame)
    counts = (frame["size_bytes"] <= 1024).sum(), (frame["size_bytes"] > 1024).sum()
    assert (model.metrics_["small"]["n_rows"], model.metrics_["large"]["n_rows"]) == counts


query_rows = st.fixed_dictionaries(
    {
        "size_bytes": st.integers(1, 2**30),
        "world_size": st.integers(2, 256),
        "gpus_per_node": st.sampled_from([1, 2, 4, 8]),
        "n_concurrent": st.integers(1, 8),
        "rated_network_gbps": st.sampled_from([1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 400.0, float("nan")]),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(query_rows, min_size=1, max_size=40))
def test_predictions_are_positive_and_never_above_the_rated_link(
    fitted: BandwidthModel, rows: list[dict[str, float]]
) -> None:
    query = pd.DataFrame(rows)
    pred = fitted.predict_busbw_bytes_per_s(query)
    assert np.isfinite(pred).all() and (pred >= 0).all()
    cap = busbw_cap_bytes_per_s(query)
    assert (pred <= cap * (1 + 1e-12)).all()
    one_gpu = (query["gpus_per_node"] == 1) & query["rated_network_gbps"].notna()
    rated = gbps_to_bytes_per_s(1.0) * query["rated_network_gbps"].to_numpy()
    assert (pred[one_gpu] <= rated[one_gpu] * (1 + 1e-12)).all()


def test_cap_treats_intra_node_links_as_uncapped_and_hierarchy_as_looser() -> None:
    query = pd.DataFrame(
        {
            "world_size": [8, 8, 4, 8],
            "gpus_per_node": [1, 4, 4, 1],
            "rated_network_gbps": [50, 50, 50, np.nan],
        }
    )
    cap = busbw_cap_bytes_per_s(query)
    link = gbps_to_bytes_per_s(50)
    assert cap[0] == pytest.approx(link)  # one GPU per VM: the rated link
    assert cap[1] == pytest.approx(link * (7 / 8) / (1 / 2))  # 2 nodes of 4: hierarchical allowance
    assert np.isinf(cap[2]) and np.isinf(cap[3])  # one node; unknown rating


def test_missing_optional_features_do_not_crash(fitted: BandwidthModel) -> None:
    bare = fitted.predict_busbw_bytes_per_s({"size_bytes": [4, 2**20], "world_size": [2, 8]})
    assert bare.shape == (2,) and (bare > 0).all()
    with_nan = fitted.predict_busbw_bytes_per_s(
        pd.DataFrame({"size_bytes": [2**20], "world_size": [4], "n_concurrent": [np.nan], "zone": ["mars-1a"]})
    )
    assert np.isfinite(with_nan).all()


def test_world_size_extrapolation_is_monotone_and_bounded(fitted: BandwidthModel) -> None:
    worlds = np.arange(2, 129)
    for size in (64, 16384, 2**24):
        query = pd.DataFrame(
            {
                "size_bytes": size,
                "world_size": worlds,
                "gpus_per_node": 1,
                "n_concurrent": 1,
                "rated_network_gbps": 50.0,
            }
        )
        pred = fitted.predict_busbw_bytes_per_s(query)
        assert (np.diff(pred) <= 1e-6 * pred[:-1]).all(), "busbw must not rise with world size"
        assert pred[-1] == pytest.approx(pred[worlds == 8][0])  # flat beyond the largest measured size
        assert (pred <= gbps_to_bytes_per_s(50.0)).all()


def test_link_fraction_target_scales_to_unmeasured_ratings(fitted: BandwidthModel) -> None:
    query = pd.DataFrame({"size_bytes": [2**30] * 2, "world_size": [4] * 2, "rated_network_gbps": [50.0, 100.0]})
    low, high = fitted.predict_busbw_bytes_per_s(query)
    # 100 Gbps was never probed: a large message reaches the same fraction of the link (the reference's
    # latency term, α/(bytes/link), is below 1 % of the time at 1 GiB)
    assert high == pytest.approx(2 * low, rel=0.02)


def test_save_load_gives_identical_predictions(fitted: BandwidthModel, frame: pd.DataFrame, tmp_path: Path) -> None:
    paths = fitted.save(tmp_path / "models" / "net.json")
    assert paths["meta"].name == "net.meta.json"
    assert all(
        re.fullmatch(rf"net\.{side}\.[0-9a-f]{{12}}\.xgb\.json", paths[side].name) for side in ("small", "large")
    )
    loaded = BandwidthModel.load(tmp_path / "models" / "net.json")
    assert np.array_equal(loaded.predict_busbw_bytes_per_s(frame), fitted.predict_busbw_bytes_per_s(frame))
    also = BandwidthModel.load(paths["meta"])
    assert np.array_equal(also.predict_busbw_bytes_per_s(frame), fitted.predict_busbw_bytes_per_s(frame))
    meta = json.loads(paths["meta"].read_text())
    assert meta["kind"] == "bandwidth-model" and meta["mtu_bytes"] == 9001
    assert meta["training_set_hash"].startswith("sha256:") and meta["n_rows"] == len(frame)
    assert set(meta["metrics"]) == {"small", "large"} and "size_bytes" in meta["features"]["numeric"]
    assert json.loads(paths["small"].read_text())["learner"]  # plain XGBoost JSON


def test_training_hash_tracks_the_data(frame: pd.DataFrame) -> None:
    a = BandwidthModel(n_trials=0, n_jobs=1).fit(frame)
    b = BandwidthModel(n_trials=0, n_jobs=1).fit(frame)
    changed = frame.assign(busbw_bytes_per_s=frame["busbw_bytes_per_s"] * 1.01)
    c = BandwidthModel(n_trials=0, n_jobs=1).fit(changed)
    assert a.training_hash_ == b.training_hash_ != c.training_hash_
    assert np.array_equal(a.predict_busbw_bytes_per_s(frame), b.predict_busbw_bytes_per_s(frame))


def test_decay_favours_new_probes_after_an_upgrade() -> None:
    rng = np.random.default_rng(3)
    old = synth_probes(rng, n_allocations=4, ratings_gbps=(50.0,))
    new = synth_probes(rng, n_allocations=4, ratings_gbps=(50.0,))
    old["busbw_bytes_per_s"] *= 0.5  # before an upgrade the network was half as fast
    new["timestamp_s"] += 120 * 86400.0
    new["allocation_id"] += "-new"
    both = pd.concat([old, new], ignore_index=True)
    query = new[new["size_bytes"] > 2**20]
    plain = BandwidthModel(n_trials=0, n_jobs=1, half_life_s=None).fit(both)
    decayed = BandwidthModel(n_trials=0, n_jobs=1, half_life_s=10 * 86400.0).fit(both)
    truth = query["busbw_bytes_per_s"]
    decayed_mape = mape(truth, decayed.predict_busbw_bytes_per_s(query))
    assert decayed_mape < 0.5 * mape(truth, plain.predict_busbw_bytes_per_s(query))


def test_a_batch_of_200_rows_predicts_what_each_row_predicts_alone(fitted: BandwidthModel) -> None:
    # The prediction's speed is a benchmark figure (BENCHMARKS.md, "Bus-bandwidth model accuracy"), not a test.
    query = pd.DataFrame(
        {"size_bytes": np.geomspace(4, 2**29, 200).astype(int), "world_size": 16, "rated_network_gbps": 50.0}
    )
    batch = np.asarray(fitted.predict_busbw_bytes_per_s(query))
    alone = [float(np.asarray(fitted.predict_busbw_bytes_per_s(query.iloc[[i]]))[0]) for i in (0, 57, 199)]
    assert batch.shape == (200,) and np.isfinite(batch).all() and (batch > 0).all()
    assert np.allclose([batch[0], batch[57], batch[199]], alone, rtol=1e-9)


def test_only_the_required_columns_are_needed_to_fit() -> None:
    rows = synth_probes(np.random.default_rng(2), n_allocations=2, ratings_gbps=(25.0,))
    bare = rows[["size_bytes", "world_size", "busbw_bytes_per_s"]]
    model = BandwidthModel(n_trials=0, n_jobs=1).fit(bare)
    assert model.target_ == "busbw" and model.metrics_["large"]["n_allocations"] == 0
    assert (model.predict_busbw_bytes_per_s(bare) > 0).all()
    rated = BandwidthModel(n_trials=0, n_jobs=1).fit(rows)
    assert rated.target_ == "link_fraction"
    with pytest.raises(NetModelError, match="target 'link_fraction' needs rated_network_gbps"):
        BandwidthModel(n_trials=0, target="link_fraction").fit(bare)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: f.drop(columns=["busbw_bytes_per_s"]), "lacks the column"),
        (lambda f: f.assign(busbw_bytes_per_s=-1.0), "busbw_bytes_per_s must be a positive bandwidth"),
        (lambda f: f.assign(size_bytes=0), "size_bytes must be a positive number"),
        (lambda f: f[f["size_bytes"] > 9001], "messages ≤ the MTU"),
        (lambda f: f.assign(allocation_id="one"), "at least 2 allocations"),
        (lambda f: f.drop(columns=["allocation_id"]), "needs an allocation_id"),
        (lambda f: f.iloc[:0], "no rows"),
    ],
)
def test_bad_training_frames_are_clear(frame: pd.DataFrame, mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(NetModelError, match=message):
        BandwidthModel(n_trials=1, n_jobs=1).fit(mutate(frame))


def test_unfitted_and_broken_files_are_clear(fitted: BandwidthModel, tmp_path: Path) -> None:
    with pytest.raises(NetModelError, match="not fitted"):
        BandwidthModel().predict_busbw_bytes_per_s({"size_bytes": [4], "world_size": [2]})
    with pytest.raises(ArtifactError, match="does not exist"):
        BandwidthModel.load(tmp_path / "none.json")
    paths = fitted.save(tmp_path / "m.json")
    paths["large"].write_text(paths["small"].read_text())
    with pytest.raises(ArtifactError, match="checksum"):
        BandwidthModel.load(tmp_path / "m.json")
    paths["large"].unlink()
    with pytest.raises(ArtifactError, match="missing"):
        BandwidthModel.load(model_paths(tmp_path / "m.json")["meta"])


def test_saving_again_replaces_the_set_and_removes_the_old_boosters(
    fitted: BandwidthModel, frame: pd.DataFrame, tmp_path: Path
) -> None:
    first = fitted.save(tmp_path / "net.json")
    legacy = first["small"].with_name("net.small.xgb.json")  # a booster saved before names had digests
    legacy.write_text(first["small"].read_text())
    other = BandwidthModel(n_trials=0, n_jobs=1, seed=3).fit(frame.sample(frac=0.7, random_state=1))
    second = other.save(tmp_path / "net.json")
    boosters = sorted(p.name for p in tmp_path.glob("net.*.xgb.json"))
    assert boosters == sorted([second["small"].name, second["large"].name]) and not legacy.exists()
    query = frame.head(20)
    loaded = BandwidthModel.load(tmp_path / "net.json")
    assert np.array_equal(loaded.predict_busbw_bytes_per_s(query), other.predict_busbw_bytes_per_s(query))


def test_untuned_fit_learns_a_single_small_allocation() -> None:
    frame = synth_probes(np.random.default_rng(11), n_allocations=1, ratings_gbps=(25.0,), world_sizes=(4,))
    model = BandwidthModel(n_trials=0, n_jobs=1).fit(frame)
    assert model.metrics_["small"]["cv_mape"] is None  # one allocation: nothing to hold out
    assert model.metrics_["small"]["train_mape"] < 0.1 and model.metrics_["large"]["train_mape"] < 0.1


def test_a_saved_model_with_a_quantile_missing_is_refused_by_name(fitted: BandwidthModel, tmp_path: Path) -> None:
    # Found by tests/test_bad_input.py's fuzzing: one quantile deleted from a class made np.interp raise.
    fitted.save(tmp_path / "net.json")
    meta = tmp_path / "net.meta.json"
    doc = json.loads(meta.read_text(encoding="utf-8"))
    side = next(iter(doc["sides"].values()))
    quantiles = side["residual_quantiles"]["quantiles"]
    name = next(iter(quantiles))
    quantiles[name] = quantiles[name][1:]
    meta.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ArtifactError, match=f"class '{name}' has"):
        BandwidthModel.load(tmp_path / "net.json")


@pytest.mark.parametrize("bad", [None, -8.0, "8"])
def test_a_saved_model_with_a_bad_size_knot_is_refused_by_name(
    fitted: BandwidthModel, tmp_path: Path, bad: object
) -> None:
    # Found by tests/test_bad_input.py's fuzzing: knots_bytes[0] = null loaded as NaN, and every prediction for
    # the configurations it smooths came out non-positive, an error that named no file.
    fitted.save(tmp_path / "net.json")
    meta = tmp_path / "net.meta.json"
    doc = json.loads(meta.read_text(encoding="utf-8"))
    side = next(iter(doc["sides"]))
    doc["sides"][side]["knots_bytes"][0] = bad
    meta.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ArtifactError, match=rf"net\.meta\.json'?: sides\.{side}\.knots_bytes must be"):
        BandwidthModel.load(tmp_path / "net.json")


def test_a_probe_file_with_damaged_schema_metadata_is_refused_by_name(tmp_path: Path) -> None:
    # Found by tests/test_bad_input.py's fuzzing: one flipped byte in the Parquet schema's pandas metadata
    # raised a UnicodeDecodeError traceback from `srifty fit-net`.
    import pyarrow as pa
    import pyarrow.parquet as pq

    from srifty.network.dataset import read_probes

    table = pa.table({"size_bytes": [1024.0]}).replace_schema_metadata({b"pandas": b"\x8c{not json"})
    pq.write_table(table, tmp_path / "p.parquet")
    with pytest.raises(ArtifactError, match=r"p\.parquet' is a damaged Parquet probe file"):
        read_probes(tmp_path / "p.parquet")
