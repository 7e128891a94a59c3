"""Process hygiene: a guard ends everything it started, even workers in sessions of their own; a test
that leaves a process behind fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from srifty.processes import ProcessGuard, descendants, end_processes, is_alive, pids_marked, signals_as_exit
from tests.conftest import REPO, wait_for

# A "launcher" that starts a worker in a new session (as torchrun does) and a stopped grandchild, then waits.
LAUNCHER = """
import os, signal, subprocess, sys, time
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
time.sleep(0.3)
os.kill(stopped.pid, signal.SIGSTOP)
print(worker.pid, stopped.pid, flush=True)
time.sleep(600)
"""


def _start(guard: ProcessGuard) -> tuple[subprocess.Popen[bytes], list[int]]:
    proc = guard.popen([sys.executable, "-c", LAUNCHER], stdout=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    return proc, pids


def test_a_guard_ends_workers_in_their_own_sessions_even_stopped_ones() -> None:
    with ProcessGuard("t", grace_s=1.0) as guard:
        launcher, (worker, stopped) = _start(guard)
        assert set(guard.pids()) >= {launcher.pid, worker, stopped}
    assert not any(is_alive(p) for p in (launcher.pid, worker, stopped))
    assert len(guard.ended) == 3 and any(str(worker) in line for line in guard.ended)


def test_a_stopped_process_is_ended_by_sigterm_without_waiting_for_sigkill() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        assert wait_for(lambda: _state(child.pid) == "T", 10)
        started = time.monotonic()
        assert end_processes([child.pid], grace_s=60.0) == [child.pid]
        assert time.monotonic() - started < 5.0, "the stopped child waited for SIGKILL"
        assert child.wait(timeout=5) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_re_parented_workers_are_found_by_their_mark() -> None:
    guard = ProcessGuard("t", grace_s=1.0)
    launcher, (worker, stopped) = _start(guard)
    os.kill(launcher.pid, signal.SIGKILL)  # as `kill -9` of torchrun: its workers go to init
    launcher.wait()
    assert worker not in descendants(os.getpid()) and worker in pids_marked(guard.variable)
    guard.end()
    assert not is_alive(worker) and not is_alive(stopped)


def test_a_guard_signals_nothing_it_did_not_start() -> None:
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with ProcessGuard("t", grace_s=0.5) as guard:
            assert not guard.owns(stranger.pid)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_a_shell_string_is_refused() -> None:
    with ProcessGuard("t") as guard, pytest.raises(TypeError, match="argument vector"):
        guard.popen("sleep 1; touch /tmp/pwned")  # type: ignore[arg-type]


def test_sigterm_becomes_system_exit_inside_the_block_only() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as exc, signals_as_exit():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert exc.value.code == 128 + signal.SIGTERM and signal.getsignal(signal.SIGTERM) is before


LEAKY_TEST = """
import subprocess, sys

def test_leaks():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)

def test_tidy():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""


def test_the_suite_fails_a_test_that_leaves_a_process_behind(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(LEAKY_TEST)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "src")])}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.leakcheck", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout
    assert "2 passed, 1 error" in result.stdout and "ERROR at teardown of test_leaks" in result.stdout
    assert "left 1 process(es) running" in result.stdout


def test_the_shield_passes_on_one_ending_signal_and_the_child_s_fate() -> None:
    """A burst of SIGTERMs (a multi-threaded parent's death) reaches the shielded command once; a command
    killed by a signal makes the shield end by the same signal."""
    import signal
    import subprocess
    import sys
    import time

    counter = (
        "import signal, sys, time\n"
        "got = []\n"
        "signal.signal(signal.SIGTERM, lambda *a: got.append(1))\n"
        "print('ready', flush=True)\n"
        "time.sleep(1.5)\n"
        "print(len(got), flush=True)\n"
    )
    shield = [sys.executable, "-m", "srifty.processes", "shield", "--"]
    proc = subprocess.Popen([*shield, sys.executable, "-c", counter], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for _ in range(4):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.02)
    out, _ = proc.communicate(timeout=20)
    assert out.strip() == "1" and proc.returncode == 0

    killed = subprocess.run([*shield, sys.executable, "-c", "import os, signal; os.kill(os.getpid(), 9)"], timeout=20)
    assert killed.returncode == -signal.SIGKILL
    assert subprocess.run([*shield, sys.executable, "-c", "raise SystemExit(3)"], timeout=20).returncode == 3
