"""The embedded spot model: fitted on the real spot traces bundled in ``data/traces`` (see ``data/README.md``)."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from srifty.errors import ArtifactError
from srifty.spot.model import SpotModel

DEFAULT_SPOT_MODEL_FILE = "default-spot-model.json"


def default_spot_model_path() -> Path:
    """Where the embedded spot model lies in this install."""
    return Path(str(resources.files("srifty.spot").joinpath("data", DEFAULT_SPOT_MODEL_FILE)))


def bundled_trace_paths() -> list[Path]:
    """The bundled trace files the embedded model is fitted on, in a stable order."""
    root = Path(str(resources.files("srifty.spot").joinpath("data", "traces")))
    return sorted(root.glob("*/*.json"))


@functools.lru_cache(maxsize=1)
def default_spot_model() -> SpotModel:
    """The embedded spot model, read once per process.

    Raises:
        ArtifactError: the file is missing from this install.
    """
    path = default_spot_model_path()
    if not path.is_file():
        raise ArtifactError(f"the embedded spot model '{path.name}' is missing from this srifty install; reinstall it.")
    return SpotModel.load(path)


def describe_spot_model(model: SpotModel, path: str | Path | None = None) -> str:
    """One line naming a spot model and its data: ``embedded default: 15 traces (p3.2xlarge), …``."""
    types = sorted({t.instance_type for t in model.traces})
    days = sum(t.span_days for t in model.traces)
    where = "embedded default" if path is None else str(path)
    return f"{where}: fitted on {len(model.traces)} real spot traces of {', '.join(types)} ({days:,.0f} trace-days)"
