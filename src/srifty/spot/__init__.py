"""The spot model: how spot VMs of an instance type and zone are lost, learned from real traces.

A pure model beside ``compute`` and ``network``: no clock and no I/O beyond its own artefact. Fitted by
``srifty fit-spot`` (:func:`fit_spot_files`); the embedded default (:func:`default_spot_model`) is fitted on
the real traces bundled in ``data/traces``. The trace format itself is shared vocabulary
(:mod:`srifty.vocab.spot_trace`).
"""

from srifty.spot.default import bundled_trace_paths, default_spot_model, default_spot_model_path, describe_spot_model
from srifty.spot.fit import FittedFigures, RatePrior, TraceCounts, count_trace, fit_figures, fit_prior
from srifty.spot.model import (
    SPOT_MODEL_KIND,
    SPOT_MODEL_SCHEMA_VERSION,
    SpotEntry,
    SpotFigures,
    SpotModel,
    TraceRecord,
    fit_spot_files,
    fit_spot_model,
)
from srifty.vocab import SpotTrace, load_trace

__all__ = [
    "SPOT_MODEL_KIND",
    "SPOT_MODEL_SCHEMA_VERSION",
    "FittedFigures",
    "RatePrior",
    "SpotEntry",
    "SpotFigures",
    "SpotModel",
    "SpotTrace",
    "TraceCounts",
    "TraceRecord",
    "bundled_trace_paths",
    "count_trace",
    "default_spot_model",
    "default_spot_model_path",
    "describe_spot_model",
    "fit_figures",
    "fit_prior",
    "fit_spot_files",
    "fit_spot_model",
    "load_trace",
]
