"""The network testbed: N "hosts" on one machine, as Linux network namespaces.

**This is an emulation of cloud links on one machine, not a cloud.** Each host is a network namespace
``srifty-<name>-h<i>`` whose one interface (``sft0``, MTU 9000 like EC2's jumbo frames) is a veth pair
into a bridge ``sft-<name>-br``. Both directions of each host's link are shaped with a ``tc tbf`` qdisc
to the represented instance family's rated bandwidth divided by ``emulation_scale`` (default 50, so a
50 Gbps g4dn.8xlarge becomes 1 Gbit/s, which this machine carries), times the allocation's placement
factors (:mod:`srifty.network.testbed.state`). A family with several GPUs per VM runs that many
processes per host; their traffic crosses the host's loopback, shaped likewise to the GPUs' intra-node
link (PCIe or NVLink, per direction, from the GPU datasheet) times the GPUs per VM, divided by the same
scale. The traffic is real gloo traffic through the kernel; only the link speeds are emulated.

What it does not emulate: latency. netem is not in this kernel, so ``tc`` adds no delay, and every
host's processes share this machine's CPU cores, so small-message latency is that of local processes
(about 0.1–2 ms per hop here, set by scheduling), not of a cloud network divided by any scale.

Everything it creates carries the ``srifty-<name>-`` / ``sft-<name>-`` prefix, and only those are ever
touched. :func:`down` finds them by name in ``ip netns`` and ``ip link``, so it cleans up after a crash
even when the state file is gone. It needs root and iproute2 (``ip``, ``tc``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from srifty.network.errors import TestbedError
from srifty.network.testbed.state import (
    STATE_DIR,
    SUBNET_PREFIX,
    TestbedHost,
    TestbedState,
    bridge_name,
    check_name,
    draw_factors,
    link_name,
    namespace_name,
    read_state,
    state_path,
    write_state,
)
from srifty.units import bytes_per_s_to_gbps

#: MTU of every testbed link (EC2 uses 9001 inside a VPC; veth takes 9000).
TESTBED_MTU_BYTES = 9000
#: The interface name inside every host namespace.
HOST_IFACE = "sft0"
DEFAULT_SCALE = 50.0
MAX_HOSTS = 64
#: tbf queue: packets waiting longer than this are dropped, as a real NIC queue would.
TBF_LATENCY_MS = 20


def check_privileges() -> None:
    """Raise :class:`TestbedError` unless this process is root and ``ip`` and ``tc`` are installed."""
    if os.geteuid() != 0:
        raise TestbedError(
            "the testbed needs root (it creates network namespaces and shapes links with tc); run it "
            "with sudo, or as root in a container with CAP_NET_ADMIN."
        )
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        raise TestbedError(
            f"the testbed needs {' and '.join(missing)} from iproute2; install it (apt-get install iproute2)."
        )


def _run(*args: str, check: bool = True) -> str:
    result = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise TestbedError(f"`{' '.join(args)}` failed: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def _ns_pattern(name: str | None) -> re.Pattern[str]:
    part = re.escape(name) if name else "[a-z0-9]{1,6}"
    return re.compile(rf"^srifty-({part})-h(\d+)\Z")


def _link_pattern(name: str | None) -> re.Pattern[str]:
    part = re.escape(name) if name else "[a-z0-9]{1,6}"
    return re.compile(rf"^sft-({part})-(br|\d+)\Z")


def _split_namespace(namespace: str) -> tuple[str, int]:
    """``("tb", 3)`` from ``srifty-tb-h3``; the caller has matched the pattern."""
    match = _ns_pattern(None).match(namespace)
    if match is None:
        raise TestbedError(f"'{namespace}' is not a srifty testbed namespace.")
    return match.group(1), int(match.group(2))


def list_namespaces(name: str | None = None) -> list[str]:
    """Namespaces made by the testbed (``name``'s, or every testbed's), by testbed then host index."""
    pattern = _ns_pattern(name)
    found = [line.split()[0] for line in _run("ip", "netns", "list").splitlines() if line.strip()]
    return sorted((ns for ns in found if pattern.match(ns)), key=_split_namespace)


def list_links(name: str | None = None) -> list[str]:
    """Root-namespace links made by the testbed (bridges and veth ends)."""
    pattern = _link_pattern(name)
    links = json.loads(_run("ip", "-j", "link", "show") or "[]")
    return sorted(link["ifname"] for link in links if pattern.match(link.get("ifname", "")))


def _tbf(device: str, rate_gbps: float, namespace: str | None, verb: str = "add") -> None:
    rate_bit = max(int(rate_gbps * 1e9), 8000)
    burst_bytes = max(32 * 1024, int(rate_bit / 8 * 0.0005))
    cmd = ["tc", "qdisc", verb, "dev", device, "root", "tbf", "rate", f"{rate_bit}bit"]
    cmd += ["burst", str(burst_bytes), "latency", f"{TBF_LATENCY_MS}ms"]
    _run(*(["ip", "netns", "exec", namespace, *cmd] if namespace else cmd))


def set_host_rate(state: TestbedState, index: int, rate_gbps: float) -> None:
    """Change host ``index``'s link rate (both directions) in place, for temporal variation."""
    host = state.hosts[index]
    _tbf(host.link, rate_gbps, None, verb="change")
    _tbf(HOST_IFACE, rate_gbps, host.namespace, verb="change")


@dataclass(frozen=True)
class Family:
    """An instance family to represent: its name, GPU, GPUs per VM, rated network (Gbps) and the GPU's
    intra-node link per direction (Gbps; ``None`` when unknown)."""

    instance_type: str
    gpu: str
    gpus_per_host: int
    rated_network_gbps: float
    intra_node_gbps_per_gpu: float | None = None


def family_from_catalog(instance_type: str, rated_network_gbps: float | None = None) -> Family:
    """The family of a catalog instance type; ``rated_network_gbps`` overrides (or supplies) its rating.

    Raises:
        CatalogError: unknown type (with the closest names).
        TestbedError: the catalog has no rating for it and none was given.
    """
    from srifty.catalog import load_catalog
    from srifty.errors import CatalogError, did_you_mean

    catalog = load_catalog()
    rows = [t for t in catalog.instance_types if t.name == instance_type]
    if not rows:
        raise CatalogError(
            f"unknown instance type '{instance_type}'.{did_you_mean(instance_type, catalog.names())} "
            "Run `srifty catalog list` to see every type."
        )
    rated = rated_network_gbps if rated_network_gbps is not None else rows[0].rated_network_gbps
    if rated is None or not rated > 0:
        raise TestbedError(
            f"the catalog has no rated network bandwidth for {instance_type}; give one with --rated-network-gbps."
        )
    spec = rows[0].gpu
    intra_gbps = None
    if spec is not None:
        # the datasheet gives NVLink as total bidirectional bandwidth, PCIe per direction
        per_direction = spec.link_bytes_per_s_per_gpu / (2 if spec.intra_node_link.startswith("nvlink") else 1)
        intra_gbps = bytes_per_s_to_gbps(per_direction)
    return Family(instance_type, rows[0].gpu_name, rows[0].gpus_per_vm, float(rated), intra_gbps)


def up(
    name: str,
    n_hosts: int,
    family: Family,
    scale: float = DEFAULT_SCALE,
    seed: int = 0,
    gpus_per_host: int | None = None,
    state_dir: Path = STATE_DIR,
) -> TestbedState:
    """Create ``n_hosts`` namespaces on a bridge, shape their links, and record the allocation drawn.

    Raises:
        TestbedError: not root, tools missing, bad arguments, or the testbed is already up. On a failure
            half-way, whatever was created is removed again.
    """
    check_name(name)
    if not 1 <= n_hosts <= MAX_HOSTS:
        raise TestbedError(f"--hosts: the testbed takes 1 to {MAX_HOSTS} hosts, got {n_hosts}.")
    if not scale >= 1:
        raise TestbedError(f"--scale: the emulation scale must be ≥ 1 (links run rated/scale), got {scale}.")
    if gpus_per_host is not None and gpus_per_host < 1:
        raise TestbedError(
            f"--gpus-per-host must be at least 1 (leave it out for the type's GPUs), got {gpus_per_host}."
        )
    check_privileges()
    if list_namespaces(name) or list_links(name):
        raise TestbedError(f"testbed '{name}' is already up; run `srifty testbed down --name {name}` first.")
    factor, host_factors = draw_factors(n_hosts, np.random.default_rng(seed))
    family_gbps = family.rated_network_gbps / scale
    per_host = gpus_per_host or family.gpus_per_host
    intra_gbps = None
    if per_host > 1 and family.intra_node_gbps_per_gpu:
        intra_gbps = per_host * family.intra_node_gbps_per_gpu / scale
    hosts = tuple(
        TestbedHost(
            index=i,
            namespace=namespace_name(name, i),
            link=link_name(name, i),
            ip=f"{SUBNET_PREFIX}{i + 1}",
            bandwidth_factor=factor * f,
            shaped_gbps=family_gbps * factor * f,
        )
        for i, f in enumerate(host_factors)
    )
    state = TestbedState(
        name=name,
        instance_type=family.instance_type,
        gpu=family.gpu,
        gpus_per_host=per_host,
        rated_network_gbps=family.rated_network_gbps,
        emulation_scale=float(scale),
        family_shaped_gbps=family_gbps,
        allocation_id=f"{name}-{uuid.uuid4().hex[:10]}",
        seed=seed,
        allocation_factor=factor,
        hosts=hosts,
        mtu_bytes=TESTBED_MTU_BYTES,
        intra_node_shaped_gbps=intra_gbps,
        created_s=time.time(),
    )
    try:
        _create(state)
        write_state(state, state_dir)
    except BaseException:
        down(name, state_dir=state_dir)
        raise
    return state


def _create(state: TestbedState) -> None:
    bridge = bridge_name(state.name)
    _run("ip", "link", "add", bridge, "type", "bridge")
    _run("ip", "link", "set", bridge, "mtu", str(TESTBED_MTU_BYTES), "up")
    for host in state.hosts:
        ns = host.namespace
        _run("ip", "netns", "add", ns)
        _run("ip", "link", "add", host.link, "type", "veth", "peer", "name", HOST_IFACE, "netns", ns)
        _run("ip", "link", "set", host.link, "master", bridge, "mtu", str(TESTBED_MTU_BYTES), "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        _run("ip", "-n", ns, "link", "set", HOST_IFACE, "mtu", str(TESTBED_MTU_BYTES), "up")
        _run("ip", "-n", ns, "addr", "add", f"{host.ip}/24", "dev", HOST_IFACE)
        _tbf(host.link, host.shaped_gbps, None)  # towards the host: its download
        _tbf(HOST_IFACE, host.shaped_gbps, ns)  # from the host: its upload
        if state.intra_node_shaped_gbps:  # between the host's own processes: its GPUs' link
            _tbf("lo", state.intra_node_shaped_gbps, ns)


def _stop_processes(namespace: str, grace_s: float = 3.0) -> None:
    """Stop processes still inside one of the testbed's namespaces (left by a crashed launch)."""
    pids = [int(p) for p in _run("ip", "netns", "pids", namespace, check=False).split()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            try:
                os.kill(pid, sig)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _run("ip", "netns", "pids", namespace, check=False).split():
            time.sleep(0.1)
        pids = [int(p) for p in _run("ip", "netns", "pids", namespace, check=False).split()]


def down(name: str | None, state_dir: Path = STATE_DIR) -> list[str]:
    """Remove testbed ``name`` (every testbed when ``None``): its processes, namespaces, links and state.

    Works from what exists, not from the state file, so it also cleans up after a crash. Returns what
    was removed.
    """
    if name is not None:
        check_name(name)
    check_privileges()
    removed = []
    for ns in list_namespaces(name):
        _stop_processes(ns)
        _run("ip", "netns", "del", ns, check=False)
        removed.append(ns)
    for link in list_links(name):
        _run("ip", "link", "del", link, check=False)
        removed.append(link)
    deadline = time.monotonic() + 5.0
    while (list_namespaces(name) or list_links(name)) and time.monotonic() < deadline:
        time.sleep(0.1)
    leftover = list_namespaces(name) + list_links(name)
    if leftover:
        raise TestbedError(f"could not remove {', '.join(leftover)}; remove them with `ip netns del` / `ip link del`.")
    files = [state_path(name, state_dir)] if name else sorted(state_dir.glob("*.json"))
    for file in files:
        if file.exists():
            file.unlink()
            removed.append(str(file))
    return removed


@dataclass(frozen=True)
class HostStatus:
    """What ``status`` found for one host: its namespace, the rates really configured, and its IP."""

    namespace: str
    ip: str | None
    up_gbps: float | None
    down_gbps: float | None
    loopback_gbps: float | None


def _tbf_rate_gbps(device: str, namespace: str | None) -> float | None:
    cmd = ["tc", "-j", "qdisc", "show", "dev", device]
    out = _run(*(["ip", "netns", "exec", namespace, *cmd] if namespace else cmd), check=False)
    for qdisc in json.loads(out or "[]"):
        if qdisc.get("kind") == "tbf":
            return float(qdisc["options"]["rate"]) * 8 / 1e9  # tc reports bytes/s in JSON
    return None


def status(
    name: str | None = None, state_dir: Path = STATE_DIR
) -> dict[str, tuple[TestbedState | None, list[HostStatus]]]:
    """For each testbed found: its state (``None`` if the file is gone: a crashed ``up``) and its hosts."""
    check_privileges()
    names = sorted({_split_namespace(ns)[0] for ns in list_namespaces(name)})
    out: dict[str, tuple[TestbedState | None, list[HostStatus]]] = {}
    for tb in names:
        path = state_path(tb, state_dir)
        state = read_state(path) if path.exists() else None
        hosts = []
        for ns in list_namespaces(tb):
            index = _split_namespace(ns)[1]
            addrs = json.loads(_run("ip", "-n", ns, "-j", "addr", "show", "dev", HOST_IFACE, check=False) or "[]")
            ip = next((a["local"] for d in addrs for a in d.get("addr_info", []) if a.get("family") == "inet"), None)
            hosts.append(
                HostStatus(
                    ns,
                    ip,
                    _tbf_rate_gbps(HOST_IFACE, ns),
                    _tbf_rate_gbps(link_name(tb, index), None),
                    _tbf_rate_gbps("lo", ns),
                )
            )
        out[tb] = (state, hosts)
    return out


def load_state(name: str, state_dir: Path = STATE_DIR) -> TestbedState:
    """The state of testbed ``name``, checking that its namespaces still exist.

    Raises:
        TestbedError: the testbed is not up.
    """
    check_name(name)
    path = state_path(name, state_dir)
    if not path.exists() or not list_namespaces(name):
        raise TestbedError(f"testbed '{name}' is not up; start it with `srifty testbed up --name {name}`.")
    return read_state(path)
