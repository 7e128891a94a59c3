"""The testbed as hosts for ``srifty run --hosts``: the controller's address, host files, and cloud faults.

* The controller (srifty itself, in the root namespace) gets an address on the testbed's bridge,
  :data:`CONTROLLER_HOST`, so the hosts' workers can report to it over the testbed's links. Only one
  testbed at a time can carry it (every testbed uses the same subnet); :func:`attach_controller` refuses a
  second.
* Faults as a cloud delivers them: a host **vanishes** (every process in its namespace killed, its link
  down) or is **partitioned** (its link down, its processes alive: their collectives hang).
  :class:`TestbedFaults` injects them for ``srifty run --hosts`` and heals the hosts afterwards.

Needs root and iproute2, like the rest of the testbed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

from srifty.network.errors import TestbedError
from srifty.network.testbed.namespaces import HOST_IFACE, _run, check_privileges, load_state
from srifty.network.testbed.state import STATE_DIR, SUBNET_PREFIX, TestbedState, bridge_name

__all__ = [
    "CONTROLLER_HOST",
    "HOST_IFACE",
    "TestbedFaults",
    "attach_controller",
    "detach_controller",
    "heal",
    "partition",
    "vanish",
]

#: The controller's address on a testbed's bridge.
CONTROLLER_HOST = f"{SUBNET_PREFIX}254"


def _addresses(device: str | None = None) -> list[tuple[str, str]]:
    """``(device, IPv4 address)`` of the root namespace's interfaces."""
    cmd = ["ip", "-j", "-4", "addr", "show"] + (["dev", device] if device else [])
    found = json.loads(_run(*cmd, check=False) or "[]")
    return [(d.get("ifname", ""), a["local"]) for d in found for a in d.get("addr_info", []) if "local" in a]


def attach_controller(name: str) -> str:
    """Give the root namespace :data:`CONTROLLER_HOST` on testbed ``name``'s bridge; returns the address.

    Raises:
        TestbedError: not root, or another device already holds the address (another run's testbed).
    """
    check_privileges()
    bridge = bridge_name(name)
    holders = [dev for dev, ip in _addresses() if ip == CONTROLLER_HOST]
    if holders == [bridge]:
        return CONTROLLER_HOST
    if holders:
        raise TestbedError(
            f"{CONTROLLER_HOST} is already the controller address on {holders[0]}; only one testbed at a time can "
            "run `srifty run --hosts`. Wait for that run, or take its testbed down."
        )
    _run("ip", "addr", "add", f"{CONTROLLER_HOST}/24", "dev", bridge)
    return CONTROLLER_HOST


def detach_controller(name: str) -> None:
    """Remove the controller's address from testbed ``name``'s bridge (nothing if it is not there)."""
    bridge = bridge_name(name)
    if any(ip == CONTROLLER_HOST for _, ip in _addresses(bridge)):
        _run("ip", "addr", "del", f"{CONTROLLER_HOST}/24", "dev", bridge, check=False)


def host_namespaces(state: TestbedState) -> dict[str, str]:
    """``{address: namespace}`` of a testbed's hosts (what the netns launcher needs)."""
    return {h.ip: h.namespace for h in state.hosts}


def hostfile_text(state: TestbedState, market: str = "spot", spares: int = 0) -> str:
    """A host file for the testbed's hosts (the represented instance type on ``market``)."""
    lines = [
        f"# testbed '{state.name}': {len(state.hosts)} emulated {state.instance_type} VMs (network namespaces)",
        "# address      instance type   market",
    ]
    lines += [f"{h.ip:<14} {state.instance_type:<15} {market}" for h in state.hosts]
    return "\n".join(lines) + "\n"


def _host(state: TestbedState, address: str) -> tuple[str, str]:
    for host in state.hosts:
        if host.ip == address:
            return host.namespace, host.link
    raise TestbedError(f"no host of testbed '{state.name}' has address {address}.")


def vanish(name: str, address: str, state_dir: Path = STATE_DIR) -> list[int]:
    """Host ``address`` vanishes: its link goes down and every process in its namespace is SIGKILLed.
    Returns the pids killed."""
    state = load_state(name, state_dir)
    namespace, link = _host(state, address)
    _run("ip", "link", "set", link, "down")
    pids = [int(p) for p in _run("ip", "netns", "pids", namespace, check=False).split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def partition(name: str, address: str, state_dir: Path = STATE_DIR) -> None:
    """Cut host ``address`` off (its link down); its processes keep running."""
    state = load_state(name, state_dir)
    _run("ip", "link", "set", _host(state, address)[1], "down")


def heal(name: str, address: str, state_dir: Path = STATE_DIR) -> None:
    """Bring host ``address``'s link back up."""
    state = load_state(name, state_dir)
    _run("ip", "link", "set", _host(state, address)[1], "up")


class TestbedFaults:
    """The injector of ``srifty run --hosts`` faults on testbed ``name`` (the runtime's ``Injector``): a
    ``vanish`` or ``partition`` of a host by its address; :meth:`heal` brings every host it cut back, as a
    fresh VM would come back for the next run."""

    __test__ = False  # not a pytest class

    def __init__(self, name: str, state_dir: Path = STATE_DIR) -> None:
        self.name = name
        self.state_dir = state_dir
        self.cut: list[str] = []

    def __call__(self, kind: str, address: str, pids: list[int]) -> None:
        """Inject ``kind`` on the host at ``address`` (its processes are found by namespace, not by ``pids``)."""
        self.cut.append(address)
        if kind == "vanish":
            vanish(self.name, address, self.state_dir)
        else:
            partition(self.name, address, self.state_dir)

    def heal(self) -> None:
        """Bring back every host cut."""
        for address in self.cut:
            heal(self.name, address, self.state_dir)
        self.cut.clear()
