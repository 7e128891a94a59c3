"""The network stage: allreduce probes, the emulated testbed, and the learned bus-bandwidth model.

Importing this package is cheap: torch is imported only inside the probe, xgboost and optuna only when a
model is fitted or loaded.
"""

from srifty.network.alpha_beta import AlphaBetaModel
from srifty.network.busbw import (
    DEFAULT_MTU_BYTES,
    algbw_bytes_per_s,
    allreduce_time_s,
    busbw_bytes_per_s,
    is_small_message,
)
from srifty.network.dataset import PROBE_COLUMNS, append_probes, read_probes
from srifty.network.default import default_probes_path, load_default_model, load_default_probes
from srifty.network.errors import NetModelError, ProbeError, ProbeTimeoutError, TestbedError
from srifty.network.model import BandwidthModel

__all__ = [
    "DEFAULT_MTU_BYTES",
    "PROBE_COLUMNS",
    "AlphaBetaModel",
    "BandwidthModel",
    "NetModelError",
    "ProbeError",
    "ProbeTimeoutError",
    "TestbedError",
    "algbw_bytes_per_s",
    "allreduce_time_s",
    "append_probes",
    "busbw_bytes_per_s",
    "default_probes_path",
    "is_small_message",
    "load_default_model",
    "load_default_probes",
    "read_probes",
]
