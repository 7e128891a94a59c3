"""Public allreduce measurements on real clusters, as probe rows: nccl-tests and torch.distributed sweeps.

``data/public-tables.csv`` describes each table (curated by hand from its source: instance type, GPUs per
node, nodes, fabric, rated network, the GPUs' intra-node link, and every assumption made);
``data/public-allreduce.csv`` holds the published rows, copied by ``scripts/import_public_allreduce.py``
from the project's reference data, each with its source URL. Nothing here was measured by srifty.

:func:`load_public_probes` turns them into rows of the probe schema (``srifty.network.PROBE_COLUMNS``)
plus the columns ``table_id``, ``fabric``, ``tool``, ``intra_node_link_gbps`` and ``source_url``:

* one table is one allocation (``allocation_id`` = ``table_id``): each was measured once, on one set of
  machines;
* bus bandwidth is recomputed from the published time where there is one (nccl-tests prints bandwidths
  rounded to 0.01 GB/s, which is 0 for small messages): ``busbw = 2·s·(n−1)/(n·t)``; torch tables
  publish bandwidths only, which are used as they are;
* 0-byte rows are dropped; ``timestamp_s`` is 0 (publication dates are not recorded), so that a user's
  own probes of the same instance type are always newer (see :func:`srifty.network.tuning.decay_weights`);
* location is unknown (missing) except the cloud of AWS instance types, so that mixing these rows with a
  user's probes does not make location features out of "public versus mine".
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from srifty.errors import ArtifactError
from srifty.vocab import algbw_bytes_per_s, busbw_bytes_per_s, ring_passes

if TYPE_CHECKING:
    import pandas as pd

TABLES_FILE = "public-tables.csv"
ROWS_FILE = "public-allreduce.csv"
#: Tables the embedded default is fitted on; "check" tables (partial sweeps, single sizes) are kept for
#: validation only.
TRAIN, CHECK = "train", "check"
#: Columns public rows carry beyond the probe schema.
EXTRA_COLUMNS = ("table_id", "fabric", "tool", "intra_node_link_gbps", "source_url")
_GBYTES = 1e9


def _data_file(name: str) -> Path:
    path = Path(str(resources.files("srifty.network").joinpath("data", name)))
    if not path.is_file():
        raise ArtifactError(f"the public allreduce data '{name}' is missing from this srifty install; reinstall it.")
    return path


def load_public_tables() -> pd.DataFrame:
    """One row per public table: what it measured and where it comes from (see the module docstring)."""
    import pandas as pd

    return pd.read_csv(_data_file(TABLES_FILE), dtype={"nccl_version": "string", "assumptions": "string"})


def load_public_probes(use: Sequence[str] = (TRAIN,)) -> pd.DataFrame:
    """Probe rows of the public tables whose ``use`` is in ``use`` (``"train"``, ``"check"``).

    Returns:
        A frame with every probe-schema column (in cloud units, ``emulation_scale`` 1) and the
        :data:`EXTRA_COLUMNS`, sorted by table and size.
    """
    import pandas as pd

    from srifty.vocab import PROBE_COLUMNS

    tables = load_public_tables()
    tables = tables[tables["use"].isin(list(use))]
    rows = pd.read_csv(_data_file(ROWS_FILE))
    data = rows.merge(tables, on="table_id", how="inner", validate="many_to_one")
    data = data[data["size_bytes"] > 0].reset_index(drop=True)
    size = data["size_bytes"].to_numpy(dtype=np.float64)
    world = data["world_size"].to_numpy(dtype=np.float64)
    timed = data["time_us"].to_numpy(dtype=np.float64) * 1e-6
    published = data["busbw_GBps"].to_numpy(dtype=np.float64) * _GBYTES
    collective = (
        data["collective"].fillna("allreduce")
        if "collective" in data.columns
        else pd.Series("allreduce", index=data.index)
    )
    passes = collective.map(ring_passes).to_numpy(dtype=np.float64)
    busbw = np.where(np.isfinite(timed), passes / 2.0 * busbw_bytes_per_s(size, world, timed), published)
    time_s = np.where(np.isfinite(timed), timed, size * passes * (world - 1.0) / world / busbw)
    aws = data["instance_type"].str.match(r"^[a-z0-9-]+\.[a-z0-9]+$") & ~data["instance_type"].str.endswith("-node")
    out = pd.DataFrame(
        {
            "busbw_bytes_per_s": busbw,
            "algbw_bytes_per_s": algbw_bytes_per_s(size, time_s),
            "time_s": time_s,
            "measured_time_s": time_s,
            "size_bytes": data["size_bytes"].astype("int64"),
            "world_size": data["world_size"].astype("int64"),
            "n_nodes": data["n_nodes"].astype("int64"),
            "gpus_per_node": data["gpus_per_node"].astype("int64"),
            "n_concurrent": 1,
            "repeat": 0,
            "inner_iters": 1,
            "backend": data["backend"],
            "device": "cuda",
            "dtype": "float32",
            "cloud": pd.Series(aws).map({True: "aws", False: None}).to_numpy(dtype=object),
            "region": None,
            "zone": None,
            "instance_type": data["instance_type"],
            "gpu": data["gpu"],
            "cpu": "unknown",
            "rated_network_gbps": data["rated_network_gbps"].astype("float64"),
            "allocation_id": data["table_id"],
            "run_id": data["table_id"],
            "host": "unknown",
            "timestamp_s": 0.0,
            "emulated": False,
            "emulation_scale": 1.0,
            "shaped_gbps": np.nan,
            "slowest_link_gbps": np.nan,
            "intra_node_shaped_gbps": np.nan,
            "rate_variation": 0.0,
            "testbed_name": "",
            "collective": collective.to_numpy(dtype=object),
        }
    )
    out = out[list(PROBE_COLUMNS)].astype(PROBE_COLUMNS)
    for column in EXTRA_COLUMNS:
        out[column] = data[column].to_numpy()
    out["intra_node_link_gbps"] = out["intra_node_link_gbps"].astype("float64")
    return out.sort_values(["table_id", "size_bytes"], kind="stable").reset_index(drop=True)
