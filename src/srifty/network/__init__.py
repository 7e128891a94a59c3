"""The network stage: allreduce probes, the testbed, and the learned bus-bandwidth model.

The allreduce arithmetic (bus bandwidth, sizes, the MTU) and the probe-row schema are shared vocabulary,
in :mod:`srifty.vocab`.

Importing this package is cheap: torch is imported only inside the probe, xgboost and optuna only when a
model is fitted or loaded.
"""

from srifty.network.dataset import append_probes, read_probes
from srifty.network.default import default_probes_path, load_default_model, load_default_probes
from srifty.network.errors import NetModelError, ProbeError, ProbeTimeoutError, TestbedError
from srifty.network.model import BandwidthModel

__all__ = [
    "BandwidthModel",
    "NetModelError",
    "ProbeError",
    "ProbeTimeoutError",
    "TestbedError",
    "append_probes",
    "default_probes_path",
    "load_default_model",
    "load_default_probes",
    "read_probes",
]
