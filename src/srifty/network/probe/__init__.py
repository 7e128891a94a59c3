"""The allreduce probe (``srifty probe``, under torchrun): real torch.distributed allreduce over a sweep of
sizes and concurrencies, written as probe rows (:mod:`srifty.vocab.probes`).

* :mod:`~srifty.network.probe.runner`: the worker (gloo on CPU, nccl on GPU), heartbeats that name a hung
  rank, the rows;
* :mod:`~srifty.network.probe.context`: what a row says about where it was measured (torchrun's layout, the
  instance, the allocation; on the testbed, the represented family).

Importing this package loads no torch; running a probe does.
"""

from srifty.network.probe.context import InstanceOptions, ProbeContext, TorchrunLayout, cpu_model, resolve_context
from srifty.network.probe.runner import ProbeSettings, describe_lag, fmt_bytes, run_probe

__all__ = [
    "InstanceOptions",
    "ProbeContext",
    "ProbeSettings",
    "TorchrunLayout",
    "cpu_model",
    "describe_lag",
    "fmt_bytes",
    "resolve_context",
    "run_probe",
]
