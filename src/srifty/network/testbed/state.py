"""The network testbed's allocation draw and its state file (pure: no ``ip`` or ``tc`` here).

An allocation stands for one draw of VM placement in a cloud. Each host's link runs at the represented
family's rating divided by ``emulation_scale``, times a placement factor ``≤ 1`` (a VM never beats its
rating): an allocation-wide factor ``a = max(1/1.8, 1 − |N(0, 0.15)|)``, since the paper saw up to 1.8×
between allocations on large buffers, times a per-host factor ``u = max(0.9, 1 − |N(0, 0.03)|)`` for
neighbours within one allocation. Latency is not varied: this kernel has no netem (see the module
docstring of :mod:`srifty.network.testbed.namespaces`).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from srifty.artifacts import read_json_artifact, write_json_artifact
from srifty.network.errors import TestbedError

#: Set by ``srifty testbed launch`` for each host's processes; the probe reads them (:mod:`srifty.network.probe`).
ENV_TESTBED_STATE = "SRIFTY_TESTBED_STATE"
ENV_TESTBED_HOST = "SRIFTY_TESTBED_HOST"
ENV_RATE_VARIATION = "SRIFTY_TESTBED_RATE_VARIATION"

STATE_KIND = "testbed-state"
STATE_SCHEMA_VERSION = 2
STATE_DIR = Path("/run/srifty/testbed")
NAME_PATTERN = re.compile(r"[a-z0-9]{1,6}")  # always fullmatch: "$" would let a trailing newline in
MIN_ALLOCATION_FACTOR = 1 / 1.8
ALLOCATION_SIGMA = 0.15
MIN_HOST_FACTOR = 0.9
HOST_SIGMA = 0.03
SUBNET_PREFIX = "10.213.0."


@dataclass(frozen=True)
class TestbedHost:
    """One emulated VM: a network namespace with one shaped veth link into the testbed's bridge."""

    __test__ = False

    index: int
    namespace: str
    link: str
    ip: str
    bandwidth_factor: float
    shaped_gbps: float


@dataclass(frozen=True)
class TestbedState:
    """A testbed that is up: the represented family, the scale, and the allocation drawn for it.

    Attributes:
        name: the testbed's name (1–6 lowercase letters or digits), part of every namespace and link.
        instance_type: the represented instance family (a catalog name, or a custom label).
        gpu: the represented family's GPU model (no GPU is used; gloo runs on the CPU).
        gpus_per_host: processes per host that stand for the family's GPUs.
        rated_network_gbps: the represented family's rated link.
        emulation_scale: shaped rates are the rating divided by this.
        family_shaped_gbps: ``rated_network_gbps / emulation_scale``, before placement factors.
        allocation_id: identifies this draw of placement.
        seed: the seed the factors were drawn from.
        allocation_factor: the allocation-wide factor ``a``.
        hosts: the hosts and their shaped rates.
        mtu_bytes: the MTU of every testbed link.
        intra_node_shaped_gbps: the rate of each host's loopback, which carries the traffic between
            its processes (the represented VM's GPUs): GPUs per host × the GPU's intra-node link per
            direction / scale. ``None`` with one process per host or no datasheet figure.
        created_s: when the testbed came up (epoch s).
    """

    __test__ = False

    name: str
    instance_type: str
    gpu: str
    gpus_per_host: int
    rated_network_gbps: float
    emulation_scale: float
    family_shaped_gbps: float
    allocation_id: str
    seed: int
    allocation_factor: float
    hosts: tuple[TestbedHost, ...]
    mtu_bytes: int
    intra_node_shaped_gbps: float | None
    created_s: float

    def to_json(self) -> dict[str, Any]:
        """JSON-ready fields."""
        doc = asdict(self)
        doc["hosts"] = [asdict(h) for h in self.hosts]
        return doc


def check_name(name: str) -> str:
    """Return ``name`` if it is a valid testbed name.

    Raises:
        TestbedError: otherwise, with the rule.
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise TestbedError(
            f"testbed name '{name}' is not 1 to 6 lowercase letters or digits (it becomes part of "
            "interface names, which Linux limits to 15 characters); for example --name tb."
        )
    return name


def namespace_name(name: str, index: int) -> str:
    """``srifty-<name>-h<index>``: the namespace of one host."""
    return f"srifty-{name}-h{index}"


def link_name(name: str, index: int) -> str:
    """``sft-<name>-<index>``: the root-namespace end of one host's veth pair."""
    return f"sft-{name}-{index}"


def bridge_name(name: str) -> str:
    """``sft-<name>-br``: the testbed's bridge."""
    return f"sft-{name}-br"


def draw_factors(n_hosts: int, rng: np.random.Generator) -> tuple[float, list[float]]:
    """``(allocation_factor, per-host factors)`` of one allocation: placement variance, all ``≤ 1``."""
    allocation = max(MIN_ALLOCATION_FACTOR, 1.0 - abs(float(rng.normal(0.0, ALLOCATION_SIGMA))))
    hosts = [max(MIN_HOST_FACTOR, 1.0 - abs(float(rng.normal(0.0, HOST_SIGMA)))) for _ in range(n_hosts)]
    return allocation, hosts


def state_path(name: str, state_dir: Path = STATE_DIR) -> Path:
    """Where the state of testbed ``name`` is kept (``/run`` is cleared at boot, like namespaces)."""
    return state_dir / f"{name}.json"


def write_state(state: TestbedState, state_dir: Path = STATE_DIR) -> Path:
    """Write the state file atomically."""
    return write_json_artifact(state_path(state.name, state_dir), STATE_KIND, STATE_SCHEMA_VERSION, state.to_json())


def read_state(path: Path) -> TestbedState:
    """Read a state file written by :func:`write_state`.

    Raises:
        TestbedError: the file is missing or unreadable (the testbed is probably not up).
    """
    from srifty.errors import ArtifactError

    try:
        doc = read_json_artifact(path, STATE_KIND, STATE_SCHEMA_VERSION)
    except ArtifactError as err:
        raise TestbedError(f"{err} Is the testbed up? Run `srifty testbed status`.") from None
    try:
        hosts = tuple(TestbedHost(**h) for h in doc.pop("hosts"))
        fields = {k: v for k, v in doc.items() if k not in ("kind", "schema_version")}
        state = TestbedState(hosts=hosts, **fields)
    except (TypeError, KeyError, AttributeError) as err:
        raise TestbedError(
            f"'{path}' is not a testbed state file srifty wrote ({err}); run `srifty testbed down`."
        ) from None
    check_state(state, path)
    return state


def check_state(state: TestbedState, path: Path) -> None:
    """Every name and address in a state file is one srifty itself would write: they reach ``ip``, ``tc``
    and ``torchrun`` as arguments, so a file edited by hand must not smuggle anything else in.

    Raises:
        TestbedError: naming the file and the field.
    """
    where = f"'{path}'"
    if not isinstance(state.name, str) or not NAME_PATTERN.fullmatch(state.name):
        raise TestbedError(f"{where}: name {state.name!r} is not a testbed name; run `srifty testbed down --all`.")
    for i, host in enumerate(state.hosts):
        expected = (namespace_name(state.name, host.index), link_name(state.name, host.index))
        if host.index != i or (host.namespace, host.link) != expected:
            raise TestbedError(
                f"{where}: hosts[{i}] names namespace {host.namespace!r} and link {host.link!r}, not the "
                f"{expected[0]!r} and {expected[1]!r} srifty makes; run `srifty testbed down --name {state.name}`."
            )
        try:
            if not isinstance(host.ip, str):
                raise ValueError(host.ip)
            address = ipaddress.IPv4Address(host.ip)
        except (ipaddress.AddressValueError, ValueError):
            raise TestbedError(
                f"{where}: hosts[{i}].ip {host.ip!r} is not an IPv4 address; run `srifty testbed down --name "
                f"{state.name}` and bring the testbed up again."
            ) from None
        if not str(address).startswith(SUBNET_PREFIX):
            raise TestbedError(f"{where}: hosts[{i}].ip {host.ip!r} is outside the testbed's {SUBNET_PREFIX}0/24.")
