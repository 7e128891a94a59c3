"""Processes srifty starts, and ending every one of them on every exit path.

``torchrun`` starts each worker in a session of its own, so killing torchrun's process group does not
reach the workers: they are re-parented to init and keep training (or stay stopped, or block in a
collective). A :class:`ProcessGuard` therefore marks everything it starts with an environment variable
of its own, ``SRIFTY_OWNER_<token>``, which every descendant inherits whatever session or namespace it
runs in, and ends the processes that carry the mark, plus the descendants of the ones it started, when
its ``with`` block exits: on success, on an error, on Ctrl-C, and on SIGTERM or SIGHUP (turned into
:class:`SystemExit` by :func:`signals_as_exit`). Nothing else is ever signalled: a process is ended only
if this guard started it or carries this guard's own mark.

If srifty itself is killed with SIGKILL, no handler runs; children started by :meth:`ProcessGuard.popen`
then get SIGTERM from the kernel (``PR_SET_PDEATHSIG``), which torchrun handles by ending its workers
(SIGTERM, then SIGKILL after its shutdown timeout, which ``srifty run`` shortens to
``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` = 5 s: a stopped worker acts on nothing but SIGKILL). The kernel sends
that one signal only: a child that is itself stopped keeps it pending until someone continues it, which is
why srifty's fault emulations stop workers, never the torchrun they hang from.

Linux only (it reads ``/proc``). A process that clears its environment and leaves the guard's process
tree (a double-forked daemon with ``env -i``) escapes it; srifty starts none.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType

OWNER_PREFIX = "SRIFTY_OWNER_"
PROC = Path("/proc")
PR_SET_PDEATHSIG = 1


def owner_variable(token: str) -> str:
    """The environment variable that marks a guard's processes."""
    return f"{OWNER_PREFIX}{token}"


def _ppid_map() -> dict[int, int]:
    """``{pid: parent pid}`` of every process visible in ``/proc``."""
    parents = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may contain spaces; fields after it are fixed
        fields = stat[stat.rfind(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (children, grandchildren, …), parents first."""
    children: dict[int, list[int]] = {}
    for child, parent in _ppid_map().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    frontier = [pid]
    while frontier:
        nxt = []
        for p in frontier:
            for c in children.get(p, []):
                if c not in found:
                    found.append(c)
                    nxt.append(c)
        frontier = nxt
    return found


def pids_marked(variable: str) -> list[int]:
    """Processes whose environment carries ``variable`` (excluding this one), by reading ``/proc/*/environ``.

    A process's ``environ`` is what it was started with, so the process that set the variable in its own
    ``os.environ`` is not listed; its children are.
    """
    needle = variable.encode() + b"="
    found = []
    me = os.getpid()
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if environ.startswith(needle) or b"\0" + needle in environ:
            found.append(int(entry.name))
    return sorted(found)


def describe(pid: int) -> str:
    """``pid (command line)`` for messages; the command line is shortened."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return f"{pid} (gone)"
    text = raw.replace(b"\0", b" ").decode(errors="replace").strip() or "?"
    return f"{pid} ({text[:100]})"


def is_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


def end_processes(pids: list[int], grace_s: float = 3.0) -> list[int]:
    """Ask ``pids`` to stop (SIGTERM, then SIGCONT), wait up to ``grace_s``, then SIGKILL what is left.

    Returns the pids that were alive when this began. A stopped process does not act on SIGTERM until it
    is continued, so SIGCONT follows (systemd's order: the SIGTERM is already pending when it wakes, so it
    runs nothing of its own first); SIGKILL would end it either way, but only after ``grace_s``.
    """
    alive = [p for p in pids if is_alive(p)]
    if not alive:
        return []
    for sig in (signal.SIGTERM, signal.SIGCONT):
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(is_alive(p) for p in alive):
        time.sleep(0.05)
    for pid in alive:
        if is_alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(is_alive(p) for p in alive):
        time.sleep(0.05)
    return alive


def end_marked(variable: str, grace_s: float = 3.0) -> list[int]:
    """End this machine's processes still carrying ``variable`` (a dead owner's mark, :func:`pids_marked`) as
    :func:`end_processes` does; returns the pids that were alive."""
    return end_processes(pids_marked(variable), grace_s)


class ProcessGuard:
    """Starts processes marked as this guard's, and ends all of them (and theirs) on exit.

    Use as a context manager; :meth:`popen` starts a child with the mark, :meth:`end` ends everything
    (also called by ``__exit__``). ``ended`` lists ``pid (command)`` of what the last :meth:`end` stopped.

    Args:
        label: a short word in the token, to tell guards apart in ``/proc``.
        grace_s: seconds between SIGTERM and SIGKILL.
    """

    def __init__(self, label: str = "run", grace_s: float = 3.0) -> None:
        self.token = f"{label}_{uuid.uuid4().hex[:12]}"
        self.variable = owner_variable(self.token)
        self.grace_s = grace_s
        self.children: list[subprocess.Popen[bytes]] = []
        self.ended: list[str] = []

    def env(self, base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
        """``base`` (``os.environ`` by default) plus ``extra`` and this guard's mark."""
        return {**(os.environ if base is None else base), **extra, self.variable: "1"}

    def popen(
        self,
        args: list[str],
        env: Mapping[str, str] | None = None,
        preexec_fn: Callable[[], None] | None = None,
        **kwargs: object,
    ) -> subprocess.Popen[bytes]:
        """Start ``args`` (an argument vector, never a shell string) marked as this guard's; it gets SIGTERM
        if this process dies without ending it (``preexec_fn`` runs after that is arranged)."""
        if isinstance(args, str | bytes):
            raise TypeError("pass an argument vector, not a shell string")
        setup = _die_with(os.getpid(), preexec_fn)
        proc = subprocess.Popen(args, env=self.env(env), preexec_fn=setup, **kwargs)  # type: ignore[call-overload]
        self.children.append(proc)
        return proc

    def pids(self) -> list[int]:
        """Living processes of this guard: its children, their descendants, and anything with its mark."""
        found: list[int] = []
        for proc in self.children:
            if proc.poll() is None:
                found.append(proc.pid)
            found += descendants(proc.pid)
        found += pids_marked(self.variable)
        unique = list(dict.fromkeys(found))
        return [p for p in unique if p != os.getpid() and is_alive(p)]

    def owns(self, pid: int) -> bool:
        """Whether ``pid`` is one of this guard's processes (checked before signalling it)."""
        return pid in self.pids()

    def end(self) -> list[str]:
        """End every process of this guard; returns (and keeps in ``ended``) what was running."""
        pids = self.pids()
        shown = [describe(p) for p in pids]
        ended = set(end_processes(pids, self.grace_s))
        # a child that forked while the first round ran is found by its mark now
        late = [p for p in self.pids() if p not in ended]
        shown += [describe(p) for p in late]
        ended |= set(end_processes(late, 0.5))
        for proc in self.children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
        self.ended = [s for s, p in zip(shown, pids + late, strict=True) if p in ended]
        return self.ended

    def __enter__(self) -> ProcessGuard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()


def _die_with(parent: int, then: Callable[[], None] | None) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGTERM when ``parent`` dies (Linux ``prctl``), then runs ``then``."""

    def setup() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: the guard's other paths still apply
            pass
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)
        if then is not None:
            then()

    return setup


@contextlib.contextmanager
def signals_as_exit(signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)) -> Iterator[None]:
    """Turn ``signals`` into :class:`SystemExit` (code 128 + signal) inside the block, so that ``finally``
    and ``with`` clean-ups run when srifty is terminated; the previous handlers come back afterwards.
    Ctrl-C (SIGINT) already raises :class:`KeyboardInterrupt`. Outside the main thread this does nothing."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    try:
        previous = {sig: signal.signal(sig, handler) for sig in signals}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


#: Signals :func:`shield` passes on to its command (the first one only).
SHIELDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def shield(command: list[str]) -> int:
    """Run ``command`` (an argument vector) and pass on only the *first* ending signal this process gets;
    return its exit code, or end this process with the signal that ended it (so its parent sees the same).

    Why: the kernel sends a child's parent-death signal once for every thread of the parent as the threads
    exit (each exit re-parents the child to the next thread), so when the multi-threaded srifty controller is
    killed, a torchrun it started gets a burst of SIGTERMs. torchrun's shutdown aborts on the second one,
    before it SIGKILLs workers that ignored the first (a stopped worker always does). The shield is
    single-threaded, so its own child gets one parent-death signal, and one relayed signal.

    torchrun keeps its workers' log folders in a new ``/tmp/torchelastic_*`` folder unless told where: the
    shield gives it a scratch folder (``PET_LOG_DIR``, torchrun's ``--log-dir``) and removes it afterwards."""
    scratch = None if "PET_LOG_DIR" in os.environ else tempfile.mkdtemp(prefix="srifty-torchrun-")
    env = None if scratch is None else {**os.environ, "PET_LOG_DIR": scratch}
    try:
        code = _shielded(command, env)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if code < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP keep their default anyway
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


def _shielded(command: list[str], env: dict[str, str] | None) -> int:
    """Run ``command`` relaying the first ending signal; its exit code (negative: the signal that ended it)."""
    child = subprocess.Popen(command, env=env, preexec_fn=_die_with(os.getpid(), None))
    relayed: list[int] = []

    def relay(signum: int, frame: FrameType | None) -> None:
        if not relayed:
            relayed.append(signum)
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    for sig in SHIELDED:
        signal.signal(sig, relay)
    return child.wait()


def main(argv: list[str] | None = None) -> int:
    """``python -m srifty.processes end VARIABLE``: end this machine's processes marked with ``VARIABLE``
    (what ``srifty run --hosts`` runs on a remote host through ssh). Prints what it ended.

    ``python -m srifty.processes shield -- COMMAND…``: run ``COMMAND`` under :func:`shield`."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) >= 3 and args[:2] == ["shield", "--"]:
        return shield(args[2:])
    if len(args) != 2 or args[0] != "end" or not args[1].startswith(OWNER_PREFIX) or not args[1].isidentifier():
        sys.stderr.write(f"usage: python -m srifty.processes end {OWNER_PREFIX}<token>\n")
        return 2
    pids = pids_marked(args[1])
    shown = [describe(p) for p in pids]
    ended = set(end_processes(pids))
    for text, pid in zip(shown, pids, strict=True):
        if pid in ended:
            print(f"ended {text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
