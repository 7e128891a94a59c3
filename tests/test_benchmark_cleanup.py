"""The end-to-end benchmark, stopped mid-run, leaves nothing behind: no torchrun agent or worker, no
testbed namespace, no cgroup. Root only (it builds a testbed); a quick smoke case, not the real cases."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from srifty.processes import descendants, end_processes, owner_variable, pids_marked
from tests.conftest import REPO, wait_for
from tests.leakcheck import register_testbed

pytest.importorskip("torch")
CAN_RUN = (os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("tc") is not None) and Path(
    "/sys/fs/cgroup/cpu/cgroup.procs"
).exists()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.root,
    pytest.mark.skipif(not CAN_RUN, reason="needs root, iproute2 and cgroup v1's cpu controller"),
]


@pytest.fixture(scope="module")
def profiles_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared by both runs, so the second reuses the first's profile (measured on this machine)."""
    return tmp_path_factory.mktemp("e2e-profiles")


def _workers(pid: int) -> list[int]:
    found = []
    for child in descendants(pid):
        try:
            if b"e2e_worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            continue
    return found


def _remove_what_it_left(proc: subprocess.Popen[str], mark: str, run_name: str) -> None:
    """A benchmark that did not stop (the test failed): kill it, end its processes, remove its cgroups (the
    leak check takes its registered testbed down after this)."""
    proc.kill()
    proc.communicate()
    end_processes(pids_marked(mark), grace_s=1.0)

    def removed() -> bool:
        for cgroup in Path("/sys/fs/cgroup/cpu").glob(f"srifty-e2e-{run_name}-*"):
            with contextlib.suppress(OSError):  # busy until its last process is reaped
                cgroup.rmdir()
        return not list(Path("/sys/fs/cgroup/cpu").glob(f"srifty-e2e-{run_name}-*"))

    assert wait_for(removed, 10), f"the benchmark's cgroups srifty-e2e-{run_name}-* could not be removed"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_stopped_end_to_end_benchmark_leaves_nothing_behind(profiles_dir: Path, sig: signal.Signals) -> None:
    mark = owner_variable(f"e2etest{uuid.uuid4().hex[:8]}")
    env = {**os.environ, mark: "1", "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    command = [
        sys.executable, "-m", "benchmarks.end_to_end", "--only", "tiny 2x", "--iters", "1000000",
        "--no-write", "--no-probe", "--profiles-dir", str(profiles_dir),
    ]  # fmt: skip
    proc = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_name = register_testbed(f"e{proc.pid % 100000}")  # a failed test's namespaces are taken down too
    try:
        assert wait_for(lambda: len(_workers(proc.pid)) == 2, 240), "the DDP workers never started"
        assert f"srifty-{run_name}-h0" in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            _remove_what_it_left(proc, mark, run_name)
    assert proc.returncode == (130 if sig == signal.SIGINT else 128 + sig), err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert wait_for(lambda: not pids_marked(mark), 10), [p for p in pids_marked(mark)]
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"srifty-{run_name}-" not in spaces
    assert not list(Path("/sys/fs/cgroup/cpu").glob(f"srifty-e2e-{run_name}-*"))
