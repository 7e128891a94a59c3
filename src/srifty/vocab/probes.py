"""The probe-row schema: what one collective measurement records, in every world that measures one.

One row is one timed repeat of ``n_concurrent`` concurrent collectives (``collective``: an allreduce, an
all-gather or a reduce-scatter, see :mod:`srifty.vocab.busbw` for how each one's bus bandwidth is counted) of
``size_bytes`` each over ``world_size`` ranks. Bandwidth columns are in bytes/s and times in seconds, in the
units of the machine the row *represents*: on a real cluster those are the measured values
(``emulation_scale`` = 1); on the network testbed, where links are shaped ``emulation_scale`` times slower
than the represented instance family's rating, ``time_s = measured_time_s / emulation_scale`` and bandwidths
follow from it (see ``srifty.network.testbed``). ``measured_time_s`` and ``shaped_gbps`` always keep what
really happened.

Shared vocabulary: ``srifty probe``, the testbed, the emulated cloud and the bandwidth models all read
and write these rows. Files of them are Parquet artefacts of kind :data:`PROBE_KIND`
(:mod:`srifty.network.dataset` reads and appends them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from srifty.errors import ArtifactError
from srifty.vocab.table import Table, as_table

if TYPE_CHECKING:
    import pandas as pd

PROBE_KIND = "probe-set"
PROBE_SCHEMA_VERSION = 1

#: Every column of a probe row and its pandas dtype, in file order.
PROBE_COLUMNS: dict[str, str] = {
    "busbw_bytes_per_s": "float64",
    "algbw_bytes_per_s": "float64",
    "time_s": "float64",
    "measured_time_s": "float64",
    "size_bytes": "int64",
    "world_size": "int64",
    "n_nodes": "int64",
    "gpus_per_node": "int64",
    "n_concurrent": "int64",
    "repeat": "int64",
    "inner_iters": "int64",
    "backend": "string",
    "device": "string",
    "dtype": "string",
    "cloud": "string",
    "region": "string",
    "zone": "string",
    "instance_type": "string",
    "gpu": "string",
    "cpu": "string",
    "rated_network_gbps": "float64",
    "allocation_id": "string",
    "run_id": "string",
    "host": "string",
    "timestamp_s": "float64",
    "emulated": "bool",
    "emulation_scale": "float64",
    "shaped_gbps": "float64",
    "slowest_link_gbps": "float64",
    "intra_node_shaped_gbps": "float64",
    "rate_variation": "float64",
    "testbed_name": "string",
    "collective": "string",
}

#: Columns added to the schema after files of it were written, and the value older rows mean: probe files
#: written before srifty probed all-gather and reduce-scatter hold allreduces only.
DEFAULTED_COLUMNS: dict[str, str] = {"collective": "allreduce"}

#: The columns that describe an allreduce rather than its outcome: what a bandwidth model is asked about.
TRANSFER_COLUMNS: tuple[str, ...] = (
    "size_bytes",
    "world_size",
    "n_nodes",
    "gpus_per_node",
    "n_concurrent",
    "rated_network_gbps",
    "instance_type",
    "gpu",
    "cloud",
    "region",
    "collective",
)

#: Columns a bandwidth model needs to be fitted (``busbw_bytes_per_s`` is the label).
REQUIRED_FIT_COLUMNS = ("size_bytes", "world_size", "busbw_bytes_per_s")


def probe_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as a frame in schema order and dtypes.

    A row without a column of :data:`DEFAULTED_COLUMNS` takes its default (an older row).

    Raises:
        ArtifactError: a row lacks a schema column.
    """
    import pandas as pd

    frame = with_defaults(pd.DataFrame(list(rows)))
    missing = [c for c in PROBE_COLUMNS if c not in frame.columns]
    if missing and len(frame):
        raise ArtifactError(f"probe rows lack the columns {', '.join(missing)}.")
    if not len(frame):
        frame = pd.DataFrame({c: pd.Series(dtype=t) for c, t in PROBE_COLUMNS.items()})
    return frame[list(PROBE_COLUMNS)].astype(PROBE_COLUMNS)


def with_defaults(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every :data:`DEFAULTED_COLUMNS` column it lacks (or has empty) filled with its default."""
    if not len(frame):
        return frame
    out = frame
    for column, default in DEFAULTED_COLUMNS.items():
        if column not in out.columns:
            out = out.assign(**{column: default})
        elif out[column].isna().any():
            out = out.assign(**{column: out[column].astype("string").fillna(default)})
    return out


def transfer_frame(columns: Mapping[str, Any]) -> Table:
    """Allreduces to ask a bandwidth model about, one per row, columns in :data:`TRANSFER_COLUMNS` order (a
    :class:`~srifty.vocab.table.Table`: ``table["size_bytes"]`` is a numpy array, ``len(table)`` its rows).

    Raises:
        ArtifactError: ``columns`` names are not exactly :data:`TRANSFER_COLUMNS`, or their lengths differ.
    """
    if set(columns) != set(TRANSFER_COLUMNS):
        wrong = sorted(set(columns) ^ set(TRANSFER_COLUMNS))
        raise ArtifactError(f"a transfer frame has the columns {', '.join(TRANSFER_COLUMNS)}; got {wrong} wrong.")
    return as_table({name: columns[name] for name in TRANSFER_COLUMNS})
