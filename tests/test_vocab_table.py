"""The pandas-free column table reads values as the bandwidth model's pandas code did
(``pd.to_numeric(errors="coerce")`` and ``astype("string")``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.errors import ArtifactError
from srifty.network import NetModelError, load_default_model
from srifty.vocab import Table, as_table

MIXED = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(-(2**40), 2**40),
    st.booleans(),
    st.sampled_from(["", "gloo", "nccl", "3", "1e3", "nan", " 7 ", "x1"]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(MIXED, min_size=1, max_size=12))
def test_a_column_reads_as_pandas_reads_it(values: list[object]) -> None:
    column = pd.Series(values, dtype=object)
    table = as_table(pd.DataFrame({"c": column}))
    expected_numbers = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    np.testing.assert_array_equal(table.numeric("c"), expected_numbers)
    as_text = column.astype("string")
    expected_text = [None if missing else str(value) for value, missing in zip(as_text, as_text.isna(), strict=True)]
    assert table.text("c").tolist() == expected_text


def test_typed_columns_read_without_conversion_and_missing_values_are_none() -> None:
    frame = pd.DataFrame(
        {
            "size": np.array([1.0, np.nan, 3.0]),
            "ranks": np.array([2, 4, 8]),
            "backend": pd.array(["gloo", pd.NA, "nccl"], dtype="string"),
            "on": np.array([True, False, True]),
        }
    )
    table = as_table(frame)
    assert len(table) == 3 and table.columns == ("size", "ranks", "backend", "on")
    np.testing.assert_array_equal(table.numeric("ranks"), [2.0, 4.0, 8.0])
    assert np.isnan(table.numeric("size")[1]) and np.isnan(table.numeric("backend")).all()
    assert table.text("backend").tolist() == ["gloo", None, "nccl"]
    assert table.text("size").tolist() == ["1.0", None, "3.0"]
    assert table.text("on").tolist() == ["True", "False", "True"]
    picked = table.take(np.array([True, False, True]))
    assert len(picked) == 2 and picked.text("backend").tolist() == ["gloo", "nccl"]
    assert "size" in table and "gpu" not in table
    assert table.text_or("backend", "?").tolist() == ["gloo", "?", "nccl"]
    assert table.text_or("gpu", "?").tolist() == ["?", "?", "?"]
    with pytest.raises(KeyError):
        table["gpu"]


def test_a_mapping_becomes_a_table_and_unequal_columns_are_refused() -> None:
    table = as_table({"size_bytes": 1024, "world_size": 4})
    assert len(table) == 1 and table.numeric("world_size").tolist() == [4.0]
    assert as_table(table) is table
    assert isinstance(as_table({"a": [1, 2]}), Table)
    with pytest.raises(ArtifactError, match="different lengths"):
        as_table({"size_bytes": [1, 2, 3], "world_size": [2, 2]})
    with pytest.raises(NetModelError, match="different lengths"):
        load_default_model().predict_busbw_bytes_per_s({"size_bytes": [1, 2, 3], "world_size": [2, 2]})


def test_the_model_answers_a_table_a_mapping_and_a_frame_alike() -> None:
    model = load_default_model()
    columns = {
        "size_bytes": np.array([4.0, 2.0**16, 2.0**26, 2.0**26]),
        "world_size": np.array([2, 4, 16, 8]),
        "instance_type": np.array(["g4dn.8xlarge", "p4d.24xlarge", "p5.48xlarge", "unknown.type"], dtype=object),
        "gpus_per_node": np.array([1, 8, 8, 1]),
        "rated_network_gbps": np.array([50.0, 400.0, 3200.0, np.nan]),
        "collective": np.array(["allreduce", "all_gather", None, "reduce_scatter"], dtype=object),
    }
    from_mapping = model.predict_busbw_bytes_per_s(columns)
    from_frame = model.predict_busbw_bytes_per_s(pd.DataFrame(columns))
    from_table = model.predict_busbw_bytes_per_s(as_table(columns))
    np.testing.assert_array_equal(from_mapping, from_frame)
    np.testing.assert_array_equal(from_mapping, from_table)
    assert (from_mapping > 0).all()
