"""The alpha-beta (APM) baseline: exact recovery, grouping fallbacks, bounds, save/load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from srifty.network.errors import NetModelError
from srifty.plan.methods.alpha_beta import AlphaBetaModel, fit_alpha_beta
from srifty.units import gbps_to_bytes_per_s
from srifty.vocab import busbw_bytes_per_s


def _exact(alpha_s: float, beta_bytes_per_s: float, rated: float = 50.0) -> pd.DataFrame:
    sizes = np.array([4, 1024, 65536, 2**20, 2**24] * 3, dtype=float)
    worlds = np.repeat([2, 4, 8], 5)
    time_s = alpha_s + 2 * (worlds - 1) / worlds * sizes / beta_bytes_per_s
    return pd.DataFrame(
        {
            "size_bytes": sizes,
            "world_size": worlds,
            "rated_network_gbps": rated,
            "busbw_bytes_per_s": busbw_bytes_per_s(sizes, worlds, time_s),
        }
    )


def test_recovers_alpha_and_beta_exactly() -> None:
    frame = _exact(50e-6, 5e9)
    sizes, worlds = frame["size_bytes"].to_numpy(), frame["world_size"].to_numpy()
    time_s = sizes * 2 * (worlds - 1) / worlds / frame["busbw_bytes_per_s"].to_numpy()
    alpha, slope = fit_alpha_beta(sizes, worlds, time_s)
    assert alpha == pytest.approx(50e-6, rel=1e-6) and 1 / slope == pytest.approx(5e9, rel=1e-6)
    model = AlphaBetaModel(group_by=()).fit(frame)
    truth = frame["busbw_bytes_per_s"].to_numpy()
    assert model.predict_busbw_bytes_per_s(frame) == pytest.approx(truth, rel=1e-6)


def test_groups_fit_separately_and_unseen_groups_fall_back() -> None:
    frame = pd.concat([_exact(50e-6, 5e9, rated=50.0), _exact(200e-6, 1e9, rated=10.0)], ignore_index=True)
    model = AlphaBetaModel(group_by=("rated_network_gbps", "world_size")).fit(frame)
    truth = frame["busbw_bytes_per_s"].to_numpy()
    assert model.predict_busbw_bytes_per_s(frame) == pytest.approx(truth, rel=1e-6)
    unseen_world = pd.DataFrame({"size_bytes": [2.0**24], "world_size": [64], "rated_network_gbps": [10.0]})
    expected = busbw_bytes_per_s(2.0**24, 64, 200e-6 + 2 * 63 / 64 * 2**24 / 1e9)
    assert model.predict_busbw_bytes_per_s(unseen_world)[0] == pytest.approx(float(expected), rel=1e-6)
    unseen_all = pd.DataFrame({"size_bytes": [1024.0], "world_size": [4]})
    assert np.isfinite(model.predict_busbw_bytes_per_s(unseen_all)).all()


def test_predictions_are_capped_by_the_rated_link() -> None:
    frame = _exact(1e-6, 1e12, rated=1.0)  # fitted beta far above a 1 Gbps rating
    pred = AlphaBetaModel().fit(frame).predict_busbw_bytes_per_s(frame)
    assert (pred >= 0).all() and (pred <= gbps_to_bytes_per_s(1.0) * (1 + 1e-12)).all()


def test_save_load_round_trip(tmp_path: Path) -> None:
    frame = pd.concat([_exact(50e-6, 5e9), _exact(80e-6, 2e9, rated=25.0)], ignore_index=True)
    model = AlphaBetaModel().fit(frame)
    loaded = AlphaBetaModel.load(model.save(tmp_path / "ab.json"))
    assert np.array_equal(loaded.predict_busbw_bytes_per_s(frame), model.predict_busbw_bytes_per_s(frame))


def test_unfitted_is_clear() -> None:
    with pytest.raises(NetModelError, match="not fitted"):
        AlphaBetaModel().predict_busbw_bytes_per_s({"size_bytes": [4], "world_size": [2]})
