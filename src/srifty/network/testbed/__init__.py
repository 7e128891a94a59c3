"""The network testbed: N "hosts" on this machine as Linux network namespaces with ``tc``-shaped links, real
gloo traffic between them (the project map's second world; an emulation of cloud links, not a cloud).

* :mod:`~srifty.network.testbed.namespaces`: ``srifty testbed up/down/status``: namespaces, veth, bridge,
  ``tc tbf``;
* :mod:`~srifty.network.testbed.state`: the allocation draw and the state file (pure);
* :mod:`~srifty.network.testbed.launch`: one ``torchrun`` per host namespace, rate variation over time;
* :mod:`~srifty.network.testbed.sweep`: a probe set collected over families and allocations.

Needs root and iproute2 to run, nothing to import.
"""

from srifty.network.testbed.hosts import (
    CONTROLLER_HOST,
    TestbedFaults,
    attach_controller,
    detach_controller,
    heal,
    host_namespaces,
    hostfile_text,
    partition,
    vanish,
)
from srifty.network.testbed.launch import RateVariation, launch
from srifty.network.testbed.namespaces import (
    DEFAULT_SCALE,
    HOST_IFACE,
    Family,
    down,
    family_from_catalog,
    list_links,
    list_namespaces,
    load_state,
    status,
    up,
)
from srifty.network.testbed.state import (
    ENV_RATE_VARIATION,
    ENV_TESTBED_HOST,
    ENV_TESTBED_STATE,
    STATE_DIR,
    TestbedHost,
    TestbedState,
    draw_factors,
    read_state,
    state_path,
)
from srifty.network.testbed.sweep import SweepPlan, run_sweep

__all__ = [
    "CONTROLLER_HOST",
    "DEFAULT_SCALE",
    "ENV_RATE_VARIATION",
    "ENV_TESTBED_HOST",
    "ENV_TESTBED_STATE",
    "HOST_IFACE",
    "STATE_DIR",
    "Family",
    "RateVariation",
    "SweepPlan",
    "TestbedFaults",
    "TestbedHost",
    "TestbedState",
    "attach_controller",
    "detach_controller",
    "down",
    "draw_factors",
    "family_from_catalog",
    "heal",
    "host_namespaces",
    "hostfile_text",
    "launch",
    "list_links",
    "list_namespaces",
    "load_state",
    "partition",
    "read_state",
    "run_sweep",
    "state_path",
    "status",
    "up",
    "vanish",
]
