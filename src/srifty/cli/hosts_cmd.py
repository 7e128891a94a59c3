"""``srifty run --hosts`` and ``srifty run --resume``: wire the launcher (and the testbed, where the hosts are
its namespaces), parse the faults, run."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from srifty.errors import OptionError
from srifty.runtime import Injector, Launcher, LauncherSetup, RunOutcome, inject_locally, parse_host_faults


@contextlib.contextmanager
def launcher_for(
    setup: LauncherSetup, workdir: Path, first_host: str | None
) -> Iterator[tuple[Launcher, str, Injector | None]]:
    """The launcher, the controller's address and the fault injector (``None``: faults unsupported) of
    ``setup``; on the testbed, the controller's address is on its bridge while the block runs, and the hosts a
    fault cut are healed after it."""
    setup.check()
    if setup.testbed is None:
        injector = inject_locally if setup.kind == "local" else None
        yield setup.launcher(workdir), setup.address_towards(first_host), injector
        return
    from srifty.network import testbed as tb
    from srifty.network.testbed import load_state

    launcher = setup.launcher(workdir, tb.host_namespaces(load_state(setup.testbed)))
    launcher.env = {"GLOO_SOCKET_IFNAME": tb.HOST_IFACE}  # gloo on the shaped link, not loopback
    faults = tb.TestbedFaults(setup.testbed)
    address = tb.attach_controller(setup.testbed)
    try:
        yield launcher, address, faults
    finally:
        tb.detach_controller(setup.testbed)
        faults.heal()  # the testbed's hosts come back for the next run, as fresh VMs would


def _injector(inject: Injector | None, faults: list[Any]) -> Injector:
    if faults and inject is None:
        raise OptionError("fault", "needs the local launcher or the testbed (--testbed NAME) to inject faults.")
    return inject or inject_locally


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
    from srifty.runtime import run_cluster_job

    faults = parse_host_faults(fault_texts)
    with launcher_for(setup, Path.cwd(), _first_address(hostfile)) as (launcher, address, inject):
        return run_cluster_job(
            spec_path, command, run_dir, hostfile, launcher, faults=faults, inject=_injector(inject, faults),
            endpoint_address=address, launcher_setup=setup, report=report, **options,
        )  # fmt: skip


def resume(run_dir: Path, fault_texts: list[str], report: Callable[[str], None]) -> RunOutcome:
    """``srifty run --resume RUN_DIR`` (a run across hosts, or on this machine)."""
    from srifty.runtime import LocalRunState, read_run_state, resume_cluster_job, resume_local_job

    state = read_run_state(run_dir)
    if isinstance(state, LocalRunState):  # a run on this machine, no hosts
        if fault_texts:
            raise OptionError("fault", "is for runs across hosts; a run on this machine is resumed as it was started.")
        return resume_local_job(run_dir, state, report)
    setup = state.setup
    faults = parse_host_faults(fault_texts)
    with launcher_for(setup.launcher, Path(setup.cwd), None) as (launcher, _, inject):
        return resume_cluster_job(run_dir, launcher, faults, _injector(inject, faults), report)


def _first_address(hostfile: Path) -> str | None:
    try:
        for line in hostfile.read_text(encoding="utf-8").splitlines():
            fields = line.split("#", 1)[0].split()
            if fields:
                return fields[0]
    except (OSError, UnicodeDecodeError):
        return None  # the host file's own check names the problem
    return None
