"""CPU quotas on this machine's processes: an emulated slower VM, and the slow-host fault.

On the network testbed every "VM" is a set of processes of this machine, so a VM's compute speed is
whatever CPU time the kernel gives them. A Linux cgroup CPU quota (cgroup v1 ``cpu.cfs_quota_us`` or v2
``cpu.max``) caps it at ``cores`` CPUs' worth of time per period: a host-file line with ``cpu=0.45``
emulates a VM slower than its neighbours, and ``--fault slow@ITER:HOST:cpu=0.1`` lowers a host's quota
mid-run, as a noisy neighbour or a throttled VM would. It is an emulation and says so; a real VM's speed is
its own (the ssh launcher refuses ``cpu=``).

**The period is 10 ms, not the kernel's default 100 ms.** A quota lets a group run at full speed until its
time for the period is spent, then stops it until the next period. With 100 ms periods, a process that waits
on the network (as every DDP rank does for its allreduce) starts its next forward pass with a whole period's
quota and runs at a full core until it is spent: measured here (``python -m benchmarks.quota_period``), a
resnet18 training step under 0.6 cores took 199 ms back to back and 140 ms after 0.3 s idle, so a quota made
a "slower VM" only while it computed without pause, and ``srifty profile`` (which does) overstated the
forward pass of the testbed's DDP runs by 20-35 %. With 10 ms periods the step takes 208 and 196 ms, nearer a
uniformly slower CPU; but the group is throttled ten times as often, which stalls latency-bound
communication more (the interference benchmark's loopback overlap check got worse), so neither period is a
slower VM. The kernel's smallest quota is 1 ms, so below 0.1 cores the period is lengthened to keep it
(:func:`quota_window_us`).

Each quota group is named after its owner (the run's mark) and the host, is created on first use and
removed when the run ends (the kernel refuses to remove a group that still holds a process, so the run
ends its processes first). Needs root and the cgroup ``cpu`` controller.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from srifty.errors import SpecError

CGROUP_FS = Path("/sys/fs/cgroup")
#: The quota's accounting period (see the module docstring for why it is short).
PERIOD_US = 10_000
#: The kernel's smallest quota and largest period.
MIN_QUOTA_US, MAX_PERIOD_US = 1_000, 1_000_000
#: Largest quota accepted, in cores (more than any host here has; a typo guard).
MAX_CORES = 1024.0
#: Every quota group srifty run makes starts with this.
PREFIX = "srifty-q-"
#: A quota group's scheduling weight, the most the kernel allows (v1 ``cpu.shares``, v2 ``cpu.weight``): an
#: emulated VM's cores are its own, so other processes of a busy machine do not take them (the quota still
#: caps it).
WEIGHT_V1, WEIGHT_V2 = 262144, 10000


def cpu_root() -> tuple[Path, int] | None:
    """``(folder new groups go in, cgroup version)`` of the ``cpu`` controller, or ``None`` without one."""
    if (CGROUP_FS / "cgroup.controllers").is_file():
        controllers = (CGROUP_FS / "cgroup.controllers").read_text().split()
        return (CGROUP_FS, 2) if "cpu" in controllers else None
    v1 = CGROUP_FS / "cpu"
    return (v1, 1) if (v1 / "cpu.cfs_quota_us").is_file() else None


def unavailable() -> str | None:
    """Why CPU quotas cannot be set here, or ``None`` when they can."""
    if os.geteuid() != 0:
        return "CPU quotas (cpu=, the slow fault) need root: they are cgroups"
    if cpu_root() is None:
        return "this machine has no cgroup cpu controller (needed by cpu= and the slow fault)"
    return None


def check_cores(cores: float, what: str) -> float:
    """``cores`` if it is a usable quota (more than 0, at most :data:`MAX_CORES`).

    Raises:
        SpecError: naming ``what`` and the allowed range.
    """
    if not 0.01 <= cores <= MAX_CORES:
        raise SpecError(f"{what}: a CPU quota is a number of cores from 0.01 to {MAX_CORES:g}, got {cores:g}.")
    return cores


def quota_window_us(cores: float) -> tuple[int, int]:
    """``(quota µs, period µs)`` that cap a group at ``cores`` CPUs: a :data:`PERIOD_US` period, lengthened
    where the quota would fall under the kernel's :data:`MIN_QUOTA_US` (below 0.1 cores)."""
    period_us = min(max(PERIOD_US, math.ceil(MIN_QUOTA_US / cores)), MAX_PERIOD_US)
    return max(MIN_QUOTA_US, round(cores * period_us)), period_us


class QuotaGroups:
    """The CPU-quota groups of one owner (a run), one per host, removed together by :meth:`remove_all`."""

    def __init__(self, owner: str) -> None:
        self.owner = "".join(c if c.isalnum() else "-" for c in owner)[:40]
        self.created: dict[str, Path] = {}

    def _path(self, host: str) -> Path:
        found = cpu_root()
        if found is None:
            raise SpecError(unavailable() or "no cgroup cpu controller")
        name = "".join(c if c.isalnum() else "-" for c in host)
        return found[0] / f"{PREFIX}{self.owner}-{name}"

    def cap(self, host: str, cores: float) -> Path:
        """Create ``host``'s group if needed and cap it at ``cores`` CPUs; returns its folder."""
        path = self._path(host)
        path.mkdir(exist_ok=True)
        self.created[host] = path
        quota_us, period_us = quota_window_us(cores)
        if (path / "cpu.max").exists():
            (path / "cpu.max").write_text(f"{quota_us} {period_us}")
            (path / "cpu.weight").write_text(str(WEIGHT_V2))
        else:
            (path / "cpu.cfs_period_us").write_text(str(period_us))
            (path / "cpu.cfs_quota_us").write_text(str(quota_us))
            (path / "cpu.shares").write_text(str(WEIGHT_V1))
        return path

    def members(self, host: str) -> set[int]:
        """The processes now in ``host``'s group (the kernel's own list; empty without a group)."""
        path = self.created.get(host)
        try:
            return {int(p) for p in (path / "cgroup.procs").read_text().split()} if path else set()
        except OSError:
            return set()

    def lift_all(self) -> None:
        """Remove every group's cap (before their processes are ended: a process throttled to a sliver of a
        CPU takes seconds to act on SIGTERM)."""
        for path in self.created.values():
            with contextlib.suppress(OSError):
                if (path / "cpu.max").exists():
                    (path / "cpu.max").write_text(f"max {PERIOD_US}")
                else:
                    (path / "cpu.cfs_quota_us").write_text("-1")

    def add(self, host: str, pids: Iterable[int]) -> int:
        """Move ``pids`` (all their threads) into ``host``'s group; returns how many moved (gone ones skip)."""
        procs = self.created[host] / "cgroup.procs"
        moved = 0
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, OSError):
                procs.write_text(str(pid))
                moved += 1
        return moved

    def joiner(self, host: str) -> Callable[[], None]:
        """A ``preexec_fn`` that puts the child in ``host``'s group before it runs anything (it must run
        before ``ip netns exec``, which hides the cgroup tree)."""
        procs = self.created[host] / "cgroup.procs"

        def join() -> None:
            procs.write_text(str(os.getpid()))

        return join

    def remove_all(self) -> list[str]:
        """Remove every group this owner created; returns those that could not be (still holding a process:
        they are moved to the root group first, so this only fails when the kernel refuses)."""
        left = []
        for host, path in list(self.created.items()):
            root = path.parent / "cgroup.procs"
            with contextlib.suppress(OSError):
                for pid in (path / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        root.write_text(pid)
            try:
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError as err:
                left.append(f"{path}: {err}")
                continue
            del self.created[host]
        return left


def groups_of(owner: str) -> list[Path]:
    """The quota groups ``owner`` made that still exist, found by name (``owner``: a run's mark without its
    ``SRIFTY_OWNER_`` prefix); none without a cgroup cpu controller."""
    found = cpu_root()
    if found is None:
        return []
    return sorted(p for p in found[0].glob(f"{PREFIX}{QuotaGroups(owner).owner}-*") if p.is_dir())


def remove_groups_of(owner: str) -> list[str]:
    """Remove every quota group ``owner`` made (a killed controller's, which never removed them); returns those
    that could not be removed."""
    groups = QuotaGroups(owner)
    for path in groups_of(owner):
        groups.created[path.name] = path
    return groups.remove_all()


def leftover_groups() -> list[Path]:
    """srifty's quota groups on this machine (a test's leftover scan)."""
    found = cpu_root()
    return [] if found is None else sorted(found[0].glob(f"{PREFIX}*"))
