"""Shared vocabulary: the types and arithmetic every stage speaks, owned by none.

* configurations (:class:`Config`, :class:`ConfigGroup`: ``count × instance type @ local batch``) and
  their text form (:func:`parse_config`);
* collective arithmetic (:mod:`srifty.vocab.busbw`: bus and algorithm bandwidth, bytes moved, sizes, the
  MTU);
* the probe-row schema (:mod:`srifty.vocab.probes`).

It imports only the catalog, units and errors; the predictors (simulator, compute and network models,
planner) and the emulated cloud all import it, so none of them needs another's package for a data type.
"""

from srifty.vocab.busbw import (
    COLLECTIVES,
    DEFAULT_MTU_BYTES,
    Collective,
    algbw_bytes_per_s,
    allreduce_time_s,
    bus_bytes,
    busbw_bytes_per_s,
    is_small_message,
    parse_size_bytes,
    ring_bytes_factor,
    ring_passes,
    size_sweep_bytes,
)
from srifty.vocab.commands import split_command, torchrun_target
from srifty.vocab.config import Config, ConfigGroup, make_config, parse_config
from srifty.vocab.outcome import JobOutcome
from srifty.vocab.probes import (
    PROBE_COLUMNS,
    PROBE_KIND,
    PROBE_SCHEMA_VERSION,
    REQUIRED_FIT_COLUMNS,
    TRANSFER_COLUMNS,
    probe_frame,
    transfer_frame,
    with_defaults,
)
from srifty.vocab.spot_policy import Mode as SpotMode
from srifty.vocab.spot_policy import SpotDecision, SpotPolicy, SpotView
from srifty.vocab.spot_trace import SpotTrace, load_trace
from srifty.vocab.table import Table, as_table, filled

__all__ = [
    "COLLECTIVES",
    "DEFAULT_MTU_BYTES",
    "PROBE_COLUMNS",
    "PROBE_KIND",
    "PROBE_SCHEMA_VERSION",
    "REQUIRED_FIT_COLUMNS",
    "TRANSFER_COLUMNS",
    "Collective",
    "Config",
    "ConfigGroup",
    "JobOutcome",
    "SpotDecision",
    "SpotMode",
    "SpotPolicy",
    "SpotTrace",
    "SpotView",
    "Table",
    "algbw_bytes_per_s",
    "allreduce_time_s",
    "as_table",
    "bus_bytes",
    "busbw_bytes_per_s",
    "filled",
    "is_small_message",
    "load_trace",
    "make_config",
    "parse_config",
    "parse_size_bytes",
    "probe_frame",
    "ring_bytes_factor",
    "ring_passes",
    "size_sweep_bytes",
    "split_command",
    "torchrun_target",
    "transfer_frame",
    "with_defaults",
]
