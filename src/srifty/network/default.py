"""The embedded default probe set and bandwidth model, measured on the network testbed.

``plan`` uses them when the user has no probes of their own. ``data/README.md`` says how, where and
with which command they were measured; it is an emulation of cloud links on one machine, not a cloud
measurement.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from srifty.errors import ArtifactError
from srifty.network.dataset import read_probes
from srifty.network.model import BandwidthModel

DEFAULT_PROBES_FILE = "testbed-probes.parquet"
DEFAULT_MODEL_FILE = "default-net.json"


def _data_file(name: str) -> Path:
    path = Path(str(resources.files("srifty.network").joinpath("data", name)))
    if not path.is_file():
        raise ArtifactError(
            f"the embedded network default '{name}' is missing from this srifty install; reinstall srifty."
        )
    return path


def default_probes_path() -> Path:
    """Path of the embedded probe set (Parquet)."""
    return _data_file(DEFAULT_PROBES_FILE)


def load_default_probes() -> pd.DataFrame:
    """The embedded probe set: real gloo allreduce on the network testbed, in represented (cloud) units."""
    return read_probes(default_probes_path())


def load_default_model() -> BandwidthModel:
    """The embedded bandwidth model, fitted on :func:`load_default_probes`. Loaded afresh on each call."""
    return BandwidthModel.load(_data_file(DEFAULT_MODEL_FILE.replace(".json", ".meta.json")))
