"""The CPU quota this process runs under (cgroup v1 ``cpu.cfs_quota_us`` or v2 ``cpu.max``), and leaving it.

The network testbed emulates a smaller VM with a CPU quota on its processes, and a profile measured for
such a VM runs under the same quota (``benchmarks/end_to_end.py`` starts ``srifty profile`` inside it). The
interference measurement's peer rank stands for *another* VM, so it leaves the quota when it can: it moves
itself to the nearest ancestor group without one. Nothing is created or removed; where the move is not
allowed (no root, a cgroup v2 parent that holds no processes), the peer stays and the profile says so.
"""

from __future__ import annotations

import os
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")


def _own_group(proc_cgroup: str, fs: Path) -> tuple[Path, int] | None:
    """``(group folder, cgroup version)`` of the cpu controller in ``/proc/<pid>/cgroup``'s text."""
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "cpu" in parts[1].split(","):
            return fs / "cpu" / parts[2].lstrip("/"), 1
    for line in proc_cgroup.splitlines():
        if line.startswith("0::") and (fs / "cgroup.controllers").is_file():
            return fs / line[3:].lstrip("/"), 2
    return None


def _quota_cores(group: Path, version: int) -> float | None:
    """The group's own quota in cores, ``None`` without one (or unreadable)."""
    try:
        if version == 1:
            quota = int((group / "cpu.cfs_quota_us").read_text())
            period = int((group / "cpu.cfs_period_us").read_text())
            return None if quota < 0 else quota / period
        limit, period_text = (group / "cpu.max").read_text().split()
        return None if limit == "max" else int(limit) / int(period_text)
    except (OSError, ValueError):
        return None


def _chain(fs: Path, proc_cgroup: str | None) -> tuple[list[Path], int] | None:
    """This process's cpu cgroup and its ancestors up to the hierarchy's root (own group first)."""
    if proc_cgroup is None:
        proc = Path("/proc/self/cgroup")
        proc_cgroup = proc.read_text() if proc.exists() else ""
    found = _own_group(proc_cgroup, fs)
    if found is None:
        return None
    group, version = found
    root = fs / "cpu" if version == 1 else fs
    chain = [group]
    while chain[-1] != root and root in chain[-1].parents:
        chain.append(chain[-1].parent)
    return chain, version


def cpu_quota_cores(fs: Path = CGROUP_FS, proc_cgroup: str | None = None) -> float | None:
    """The tightest CPU quota on this process's cgroup and its ancestors, in cores; ``None`` without one.

    ``fs`` and ``proc_cgroup`` (the text of ``/proc/self/cgroup``) are for tests."""
    found = _chain(fs, proc_cgroup)
    if found is None:
        return None
    chain, version = found
    quotas = [q for q in (_quota_cores(g, version) for g in chain) if q is not None]
    return min(quotas) if quotas else None


def leave_cpu_quota(fs: Path = CGROUP_FS, proc_cgroup: str | None = None) -> str:
    """Move this process to the deepest cgroup above it with no CPU quota on it or its ancestors; says where
    it ended up. ``fs`` and ``proc_cgroup`` are for tests."""
    found = _chain(fs, proc_cgroup)
    if found is None:
        return "no cgroup cpu controller: the peer shares whatever this machine gives both"
    chain, version = found
    limited = [i for i, g in enumerate(chain) if _quota_cores(g, version) is not None]
    if not limited:
        return "outside any CPU quota (none set)"
    target = chain[max(limited) + 1] if max(limited) + 1 < len(chain) else None
    if target is None:
        return "sharing the profiled process's CPU quota (it is set on the hierarchy's root)"
    try:
        (target / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as err:
        return f"sharing the profiled process's CPU quota (could not leave it: {err.strerror or err})"
    return "outside the profiled process's CPU quota (as another VM would be)"
