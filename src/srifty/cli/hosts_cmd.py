"""``srifty run --hosts`` and ``srifty run --resume``: build the launcher, wire the testbed, run."""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from srifty.errors import SpecError
from srifty.runtime.cluster import HostFault, Injector, inject_locally
from srifty.runtime.cpu_quota import check_cores
from srifty.runtime.hosts import Host
from srifty.runtime.launchers import LAUNCHERS, Launcher, LocalLauncher, NetnsLauncher, SshLauncher
from srifty.runtime.local import RunOutcome

FAULT = re.compile(r"(vanish|partition|slow)@(\d+):(\d+)(?::cpu=([0-9.]+))?")


def parse_faults(texts: list[str]) -> list[HostFault]:
    """``vanish@ITERATION:HOST``, ``partition@ITERATION:HOST`` or ``slow@ITERATION:HOST[:cpu=CORES]``
    (``HOST``: index in the host file, from 0; ``CORES``: the slowed host's CPU quota, 0.1 by default).

    Raises:
        SpecError: a malformed fault.
    """
    faults = []
    for text in texts:
        match = FAULT.fullmatch(text.strip())
        if match is None or (match.group(4) is not None and match.group(1) != "slow"):
            raise SpecError(
                f"--fault '{text}' is not KIND@ITERATION:HOST; write for example vanish@50:1 (host 1 of the host "
                "file vanishes at iteration 50), partition@50:1, or slow@50:1:cpu=0.1 (its CPU quota drops to 0.1 "
                "cores)."
            )
        cpu = None
        if match.group(4) is not None:
            try:
                cpu = check_cores(float(match.group(4)), f"--fault {text}")
            except ValueError:
                raise SpecError(f"--fault {text}: cpu= takes a number of cores, e.g. cpu=0.1.") from None
        kind = match.group(1)
        faults.append(HostFault(kind, int(match.group(2)), int(match.group(3)), cpu))  # type: ignore[arg-type]
    return faults


@dataclass
class LauncherSetup:
    """What ``srifty run --hosts`` was told about reaching the hosts (kept in run.json for --resume)."""

    kind: str
    testbed: str | None = None
    ssh_key: str | None = None
    ssh_user: str | None = None
    ssh_port: int | None = None
    ssh_options: tuple[str, ...] = ()
    controller_address: str | None = None

    @classmethod
    def from_state(cls, doc: dict[str, Any]) -> LauncherSetup:
        """From run.json's ``launcher`` record."""
        return cls(**{**doc, "ssh_options": tuple(doc.get("ssh_options") or ())})


def _source_address(towards: str) -> str:
    """The local address this machine uses to reach ``towards`` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((towards, 9))
        except OSError as err:
            raise SpecError(f"no route to host {towards} ({err}); give --controller-address.") from None
        return str(probe.getsockname()[0])


@contextlib.contextmanager
def launcher_for(setup: LauncherSetup, first_host: str | None) -> Iterator[tuple[Launcher, str, Injector | None]]:
    """The launcher, the controller's address and the fault injector (``None``: faults unsupported) of
    ``setup``; on the testbed, the controller's address is on its bridge while the block runs."""
    if setup.kind not in LAUNCHERS:
        raise SpecError(f"--launcher must be one of {', '.join(LAUNCHERS)}, got '{setup.kind}'.")
    if setup.kind == "netns" and setup.testbed is None:
        raise SpecError("--launcher netns runs on the network testbed: give its name with --testbed NAME.")
    if setup.testbed is None:
        launcher: Launcher = LocalLauncher() if setup.kind == "local" else _ssh(setup)
        address = setup.controller_address or (
            "127.0.0.1" if setup.kind == "local" else _source_address(first_host or "127.0.0.1")
        )
        yield launcher, address, inject_locally if setup.kind == "local" else None
        return
    from srifty.network.testbed import hosts as tb
    from srifty.network.testbed import load_state

    state = load_state(setup.testbed)
    launcher = NetnsLauncher(tb.host_namespaces(state)) if setup.kind == "netns" else _ssh(setup)
    launcher.env = {"GLOO_SOCKET_IFNAME": tb.HOST_IFACE}  # gloo on the shaped link, not loopback
    name = setup.testbed

    cut: list[str] = []

    def inject(kind: str, host: Host, pids: list[int]) -> None:
        cut.append(host.address)
        (tb.vanish if kind == "vanish" else tb.partition)(name, host.address)

    address = tb.attach_controller(name)
    try:
        yield launcher, address, inject
    finally:
        tb.detach_controller(name)
        for lost in cut:  # the testbed's hosts come back for the next run, as fresh VMs would
            tb.heal(name, lost)


def _ssh(setup: LauncherSetup) -> SshLauncher:
    key = Path(setup.ssh_key) if setup.ssh_key else None
    if key is not None and not key.is_file():
        raise SpecError(f"--ssh-key {key} does not exist; give a private key file.")
    return SshLauncher(identity=key, user=setup.ssh_user, port=setup.ssh_port, options=setup.ssh_options)


def run_on_hosts(
    spec_path: Path,
    command: list[str],
    run_dir: Path,
    hostfile: Path,
    setup: LauncherSetup,
    fault_texts: list[str],
    report: Callable[[str], None],
    **options: Any,
) -> RunOutcome:
    """``srifty run SPEC --hosts HOSTFILE -- COMMAND``."""
    from srifty.runtime.cluster_api import run_cluster_job

    faults = parse_faults(fault_texts)
    first = _first_address(hostfile)
    with launcher_for(setup, first) as (launcher, address, inject):
        if faults and inject is None:
            raise SpecError("--fault needs the local launcher or the testbed (--testbed NAME) to inject faults.")
        return run_cluster_job(
            spec_path, command, run_dir, hostfile, launcher, faults=faults, inject=inject or inject_locally,
            endpoint_address=address, launcher_setup=setup.__dict__ | {"ssh_options": list(setup.ssh_options)},
            report=report, **options,
        )  # fmt: skip


def resume(run_dir: Path, fault_texts: list[str], report: Callable[[str], None]) -> RunOutcome:
    """``srifty run --resume RUN_DIR``."""
    from srifty.runtime.cluster_api import read_run_state, resume_cluster_job

    state = read_run_state(run_dir)
    setup = LauncherSetup.from_state(state["launcher"])
    faults = parse_faults(fault_texts)
    with launcher_for(setup, None) as (launcher, _, inject):
        if faults and inject is None:
            raise SpecError("--fault needs the local launcher or the testbed (--testbed NAME) to inject faults.")
        return resume_cluster_job(run_dir, launcher, faults, inject or inject_locally, report)


def _first_address(hostfile: Path) -> str | None:
    try:
        for line in hostfile.read_text(encoding="utf-8").splitlines():
            fields = line.split("#", 1)[0].split()
            if fields:
                return fields[0]
    except (OSError, UnicodeDecodeError):
        return None  # the host file's own check names the problem
    return None
