"""A network testbed of a test's own (root only): g4dn.xlarge hosts, one process each, holding the controller
address (one run at a time may: a lock file orders the tests that need it)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from tests.leakcheck import register_testbed


@contextlib.contextmanager
def own_testbed(n_hosts: int, state_dir: Path, prefix: str) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """``(name, state folder, {address: namespace})`` of a testbed of ``n_hosts`` named after ``prefix`` and
    this process, taken down afterwards."""
    from srifty.network.testbed import down, family_from_catalog, up
    from srifty.network.testbed import hosts as tb

    name = register_testbed(f"{prefix}{os.getpid() % 100000}")
    lock = open("/tmp/srifty-controller-address.lock", "w")  # noqa: SIM115 - held for the test
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        state = up(name, n_hosts, family_from_catalog("g4dn.xlarge"), state_dir=state_dir)
        tb.attach_controller(name)
        yield name, state_dir, tb.host_namespaces(state)
    finally:
        down(name, state_dir=state_dir)
        lock.close()
