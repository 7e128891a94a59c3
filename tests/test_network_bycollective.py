"""The default's two models behind one: allreduces to the allreduce model, other collectives to the other."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from srifty.network.bycollective import ByCollective


class _Constant:
    """A stand-in model answering ``value`` for every row (and naming itself in explanations)."""

    predicts_intra_node = True

    def __init__(self, value: float) -> None:
        self.value = value

    def predict_busbw_bytes_per_s(self, frame: pd.DataFrame) -> np.ndarray:
        return np.full(len(frame), self.value)

    def residual_quantiles(self, frame: pd.DataFrame, levels: object) -> np.ndarray:
        return np.full((len(frame), 3), self.value)

    def probed(self, frame: pd.DataFrame) -> np.ndarray:
        return np.asarray(frame["size_bytes"] < 4)  # the stand-in "probed" the first three sizes only

    def familiarity(self, frame: pd.DataFrame) -> np.ndarray:
        return np.full(len(frame), "probed" if self.value > 1 else "unprobed")

    def explain(self, frame: pd.DataFrame) -> list[str]:
        return [f"model {self.value:g}"] * len(frame)

    def predict_busbw_interval(self, frame: pd.DataFrame, coverage: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
        return np.full(len(frame), self.value - 0.5), np.full(len(frame), self.value + 0.5)


def test_rows_go_to_the_model_of_their_collective_in_their_order() -> None:
    model = ByCollective(_Constant(2.0), _Constant(1.0))  # type: ignore[arg-type]
    frame = pd.DataFrame(
        {
            "size_bytes": [1, 2, 3, 4, 5],
            "world_size": [2, 2, 2, 2, 2],
            "collective": ["allreduce", "all_gather", None, "reduce_scatter", "reduce_scatter"],
        }
    )
    # the last reduce-scatter's configuration was not probed by the second model: answered as an allreduce
    assert model.predict_busbw_bytes_per_s(frame).tolist() == [2.0, 1.0, 2.0, 2.0, 2.0]
    frame = frame.iloc[:4].assign(size_bytes=[1, 2, 3, 3])
    assert model.predict_busbw_bytes_per_s(frame).tolist() == [2.0, 1.0, 2.0, 1.0]
    assert model.residual_quantiles(frame, [0.1, 0.5, 0.9])[:, 0].tolist() == [2.0, 1.0, 2.0, 1.0]
    assert model.familiarity(frame).tolist() == ["probed", "unprobed", "probed", "unprobed"]
    assert model.explain(frame) == ["model 2", "model 1", "model 2", "model 1"]
    low, high = model.predict_busbw_interval(frame)
    assert low.tolist() == [1.5, 0.5, 1.5, 0.5] and high.tolist() == [2.5, 1.5, 2.5, 1.5]
    # a frame without the column is all allreduces, as probe files written before it were
    assert model.predict_busbw_bytes_per_s(frame.drop(columns="collective")).tolist() == [2.0] * 4
    assert model.predicts_intra_node


def test_the_default_answers_all_gathers_from_its_probes() -> None:
    from srifty.network import load_default_model
    from srifty.network.default import load_collective_probes

    model = load_default_model()
    probes = load_collective_probes()
    rows = probes[(probes["instance_type"] == "g4dn.8xlarge") & (probes["n_concurrent"] == 1)]
    rows = rows[(rows["size_bytes"] >= 2**20) & (rows["collective"] == "all_gather")]
    measured = rows.groupby(["world_size", "size_bytes"])["busbw_bytes_per_s"].median()
    query = measured.reset_index()[["world_size", "size_bytes"]].assign(
        instance_type="g4dn.8xlarge", rated_network_gbps=50.0, gpus_per_node=1, n_concurrent=1,
        collective="all_gather", backend="gloo",
    )  # fmt: skip
    predicted = model.predict_busbw_bytes_per_s(query)
    assert np.median(np.abs(predicted / measured.to_numpy() - 1)) < 0.2
    assert set(model.familiarity(query)) == {"probed"}
    # the allreduce model is the one the planner always used: untouched by the collectives
    allreduce = query.assign(collective="allreduce")
    assert model.predict_busbw_bytes_per_s(allreduce) == pytest.approx(
        model.allreduce.predict_busbw_bytes_per_s(allreduce)
    )
