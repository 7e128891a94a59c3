"""A pytest plugin: a test that leaves a process or a testbed namespace of its own behind fails.

Several engineers run the suite at once on the same machine, so this looks only at what the test itself
started: processes that descend from this pytest process and were not there before the test, and
processes whose environment carries the test's own mark (``SRIFTY_OWNER_test…``, set in ``os.environ``
for the duration of the test, so every child inherits it even after it is re-parented to init); and the
testbed names this run registered with :func:`register_testbed`. Whatever it finds is ended (or taken
down) and the test fails at teardown, naming it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from srifty.processes import descendants, describe, end_processes, is_alive, owner_variable, pids_marked

_RUN = uuid.uuid4().hex[:8]
_COUNTER = itertools.count()
_TESTBEDS: set[str] = set()
#: Seconds a test's processes get to finish exiting on their own before they count as left behind.
SETTLE_S = 3.0
#: Helpers Python starts once per interpreter, on first use, and ends when it exits: the first test to use
#: multiprocessing starts them for the whole pytest process, so they are not that test's leftovers.
INTERPRETER_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def register_testbed(name: str) -> str:
    """Mark testbed ``name`` as this run's: a test that leaves its namespaces behind fails."""
    _TESTBEDS.add(name)
    return name


def _namespaces_left() -> dict[str, list[str]]:
    if not _TESTBEDS or os.geteuid() != 0 or shutil.which("ip") is None:
        return {}
    from srifty.network.testbed import list_namespaces

    found = {name: list_namespaces(name) for name in sorted(_TESTBEDS)}
    return {name: spaces for name, spaces in found.items() if spaces}


def _interpreter_helper(pid: int) -> bool:
    """A helper of this pytest process's own interpreter (a direct child running one of INTERPRETER_HELPERS)."""
    try:
        parent = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
        command = (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
    except (OSError, IndexError, ValueError):
        return False
    return parent == os.getpid() and any(helper in command for helper in INTERPRETER_HELPERS)


def _leftovers(variable: str, before: set[int]) -> list[int]:
    me = os.getpid()
    found = {p for p in descendants(me) if p not in before} | set(pids_marked(variable))
    return sorted(p for p in found if is_alive(p) and not _interpreter_helper(p))


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    """Fail the test if it leaves a process it started, or one of this run's testbed namespaces, behind."""
    variable = owner_variable(f"test{_RUN}x{next(_COUNTER)}")
    before = set(descendants(os.getpid()))
    os.environ[variable] = "1"
    try:
        yield
    finally:
        del os.environ[variable]
    deadline = time.monotonic() + SETTLE_S
    left = _leftovers(variable, before)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = _leftovers(variable, before)
    problems = []
    if left:
        shown = [describe(p) for p in left]
        end_processes(left, grace_s=1.0)
        problems.append(f"left {len(left)} process(es) running: " + "; ".join(shown))
    spaces = _namespaces_left()
    if spaces:
        from srifty.network.testbed import down

        for name in spaces:
            down(name, state_dir=Path("/nonexistent-srifty-state"))
        problems.append("left testbed namespaces: " + ", ".join(ns for found in spaces.values() for ns in found))
    if problems:
        pytest.fail("nothing may be left behind, but this test " + " and ".join(problems), pytrace=False)
