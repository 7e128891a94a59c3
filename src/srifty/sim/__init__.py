"""Simulate a configuration's iteration time from compute profiles and a bus-bandwidth model.

Configurations themselves (:class:`~srifty.vocab.Config`) are shared vocabulary, in :mod:`srifty.vocab`.
"""

from srifty.sim.allocation import AllocationModel, AllocationProbe, probe_allocation
from srifty.sim.allreduce import AllreduceTrace, simulate_allreduce
from srifty.sim.netquery import BusBandwidthModel, bus_cap_bytes_per_s, config_busbw_bytes_per_s, feature_frame
from srifty.sim.overlap import simulate_overlap
from srifty.sim.result import SimResult
from srifty.sim.simulator import SimOptions, Simulator, profile_for, simulate

__all__ = [
    "AllocationModel",
    "AllocationProbe",
    "AllreduceTrace",
    "BusBandwidthModel",
    "SimOptions",
    "SimResult",
    "Simulator",
    "bus_cap_bytes_per_s",
    "config_busbw_bytes_per_s",
    "feature_frame",
    "probe_allocation",
    "profile_for",
    "simulate",
    "simulate_allreduce",
    "simulate_overlap",
]
