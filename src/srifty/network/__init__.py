"""The network stage: allreduce probes, the testbed, and the learned bus-bandwidth model.

The allreduce arithmetic (bus bandwidth, sizes, the MTU) and the probe-row schema are shared vocabulary,
in :mod:`srifty.vocab`.

Importing this package is cheap: torch is imported only inside the probe, xgboost and optuna only when a
model is fitted or loaded.
"""

from srifty.network.dataset import append_probes, file_fingerprint, read_probes, validate_frame
from srifty.network.default import (
    COLLECTIVE_PROBES_FILE,
    COLLECTIVES_MODEL_FILE,
    DEFAULT_MODEL_FILE,
    DEFAULT_MODEL_SOURCE,
    default_probes_path,
    load_collectives_training_set,
    load_default_model,
    load_default_probes,
    load_default_training_set,
)
from srifty.network.errors import NetModelError, NetModelOptionError, ProbeError, ProbeTimeoutError, TestbedError
from srifty.network.features import DEFAULT_CATEGORICAL_FEATURES, NATURAL_FILL, busbw_cap_bytes_per_s
from srifty.network.fit import BASES, FitResult, fit_network
from srifty.network.model import SECONDS_PER_DAY, TARGETS, BandwidthModel
from srifty.network.public import ROWS_FILE, TABLES_FILE, load_public_probes
from srifty.network.tuning import grouped_folds, mape

__all__ = [
    "BASES",
    "COLLECTIVES_MODEL_FILE",
    "COLLECTIVE_PROBES_FILE",
    "DEFAULT_CATEGORICAL_FEATURES",
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_SOURCE",
    "NATURAL_FILL",
    "ROWS_FILE",
    "SECONDS_PER_DAY",
    "TABLES_FILE",
    "TARGETS",
    "BandwidthModel",
    "FitResult",
    "NetModelError",
    "NetModelOptionError",
    "ProbeError",
    "ProbeTimeoutError",
    "TestbedError",
    "append_probes",
    "busbw_cap_bytes_per_s",
    "default_probes_path",
    "file_fingerprint",
    "fit_network",
    "grouped_folds",
    "load_collectives_training_set",
    "load_default_model",
    "load_default_probes",
    "load_default_training_set",
    "load_public_probes",
    "mape",
    "read_probes",
    "validate_frame",
]
