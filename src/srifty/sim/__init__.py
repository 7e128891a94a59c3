"""Simulate a configuration's iteration time from compute profiles and a bus-bandwidth model."""

from srifty.sim.allreduce import AllreduceTrace, bus_bytes, simulate_allreduce
from srifty.sim.config import Config, ConfigGroup, make_config, parse_config
from srifty.sim.netquery import BusBandwidthModel, bus_cap_bytes_per_s, busbw_bytes_per_s
from srifty.sim.result import SimResult
from srifty.sim.simulator import SimOptions, Simulator, simulate

__all__ = [
    "AllreduceTrace",
    "BusBandwidthModel",
    "Config",
    "ConfigGroup",
    "SimOptions",
    "SimResult",
    "Simulator",
    "bus_bytes",
    "bus_cap_bytes_per_s",
    "busbw_bytes_per_s",
    "make_config",
    "parse_config",
    "simulate",
    "simulate_allreduce",
]
