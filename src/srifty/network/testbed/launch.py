"""Run a srifty command across testbed hosts: one torchrun per host namespace, joined by a static
rendezvous at host 0, with gloo bound to the host's shaped interface.

Host 0's output goes to this terminal; the others' to log files, whose tails are shown when a host
fails. When one host fails, the time limit passes, or the launch is interrupted (Ctrl-C, or SIGTERM
under the CLI), every process the launch started is ended: torchrun agents and their workers, which run
in sessions of their own (a :class:`~srifty.processes.ProcessGuard` finds them by its mark).

Optionally, the link rates vary during the run: every ``period_s`` each host's rate is redrawn as
``rate·(1 − depth·U(0, 1))``, the temporal variance of a shared cloud.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from srifty.network.errors import TestbedError
from srifty.network.testbed.namespaces import HOST_IFACE, load_state, set_host_rate
from srifty.network.testbed.state import (
    ENV_RATE_VARIATION,
    ENV_TESTBED_HOST,
    ENV_TESTBED_STATE,
    STATE_DIR,
    TestbedHost,
    TestbedState,
    state_path,
)
from srifty.processes import ProcessGuard


@dataclass(frozen=True)
class RateVariation:
    """Temporal variation of link rates during a launch: redraw every ``period_s`` with ``depth``."""

    depth: float
    period_s: float
    seed: int

    def __post_init__(self) -> None:
        if not 0 <= self.depth < 1 or not self.period_s > 0:
            raise TestbedError(
                f"rate variation needs 0 ≤ depth < 1 and a positive period, got {self.depth} and {self.period_s}."
            )


def _vary(state: TestbedState, n_hosts: int, variation: RateVariation, stop: threading.Event) -> None:
    rng = np.random.default_rng(variation.seed)
    try:
        while not stop.wait(variation.period_s):
            for host in state.hosts[:n_hosts]:
                set_host_rate(state, host.index, host.shaped_gbps * (1 - variation.depth * float(rng.random())))
    except TestbedError:
        return  # the testbed went away under us; the launch will report why
    finally:
        for host in state.hosts[:n_hosts]:
            with contextlib.suppress(TestbedError):
                set_host_rate(state, host.index, host.shaped_gbps)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def launch(
    name: str,
    args: Sequence[str],
    n_hosts: int | None = None,
    nproc_per_host: int | None = None,
    timeout_s: float = 3600.0,
    variation: RateVariation | None = None,
    log_dir: Path | None = None,
    master_port: int | None = None,
    state_dir: Path = STATE_DIR,
) -> None:
    """Run ``srifty ARGS`` under torchrun on hosts ``0 … n_hosts−1`` of testbed ``name``.

    Args:
        name: the testbed.
        args: the srifty command line to run on every rank, for example ``["probe", "--out", "p.parquet"]``.
        n_hosts: how many hosts take part (all by default); always the first ones.
        nproc_per_host: processes per host (the represented family's GPUs per VM by default).
        timeout_s: stop every host after this long.
        variation: vary link rates during the run, or ``None``.
        log_dir: where hosts 1… write their logs (a temporary folder by default).
        master_port: the rendezvous port on host 0 (a random one by default).

    Raises:
        TestbedError: the testbed is not up, a host failed, or the time limit passed.
    """
    state = load_state(name, state_dir)
    hosts = state.hosts[: n_hosts or len(state.hosts)]
    if n_hosts is not None and not 1 <= n_hosts <= len(state.hosts):
        raise TestbedError(f"testbed '{name}' has {len(state.hosts)} hosts; cannot launch on {n_hosts}.")
    nproc = nproc_per_host or state.gpus_per_host
    if nproc * len(hosts) < 2:
        raise TestbedError("a launch needs at least 2 processes in all; add hosts or processes per host.")
    port = master_port or int(np.random.default_rng().integers(20000, 40000))
    logs = Path(log_dir or tempfile.mkdtemp(prefix=f"srifty-{name}-"))
    logs.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GLOO_SOCKET_IFNAME": HOST_IFACE,
        ENV_TESTBED_STATE: str(state_path(name, state_dir)),
        ENV_RATE_VARIATION: f"{variation.depth if variation else 0.0:g}",
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    procs: list[subprocess.Popen[bytes]] = []
    log_files = []
    stop = threading.Event()
    varier = None
    guard = ProcessGuard(f"tb{name}", grace_s=10.0)
    try:
        for host in hosts:
            cmd = ["ip", "netns", "exec", host.namespace, sys.executable, "-m", "torch.distributed.run"]
            cmd += [
                "--nnodes",
                str(len(hosts)),
                "--node-rank",
                str(host.index),
                "--nproc-per-node",
                str(nproc),
            ]
            cmd += ["--master-addr", hosts[0].ip, "--master-port", str(port), "-m", "srifty.cli.main", *args]
            out = None
            if host.index > 0:
                handle = open(logs / f"host{host.index}.log", "wb")  # noqa: SIM115 - closed below
                log_files.append(handle)
                out = handle
            host_env = {**env, ENV_TESTBED_HOST: host.namespace}
            procs.append(guard.popen(cmd, env=host_env, stdout=out, stderr=out, start_new_session=True))
        if variation is not None:
            varier = threading.Thread(target=_vary, args=(state, len(hosts), variation, stop), daemon=True)
            varier.start()
        _wait(procs, hosts, logs, timeout_s)
    finally:
        stop.set()
        guard.end()
        if varier is not None:
            varier.join()
        for handle in log_files:
            handle.close()


def _wait(procs: Sequence[subprocess.Popen[bytes]], hosts: Sequence[TestbedHost], logs: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        codes = [p.poll() for p in procs]
        failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            i = failed[0]
            where = "its output is above" if i == 0 else f"log {logs / f'host{i}.log'}:\n{_tail(logs / f'host{i}.log')}"
            raise TestbedError(
                f"host {i} ({hosts[i].namespace}) exited with code {codes[i]}; the other hosts were stopped. {where}"
            )
        if all(c == 0 for c in codes):
            return
        if time.monotonic() > deadline:
            raise TestbedError(
                f"the launch ran past its {timeout_s:g} s limit and was stopped; raise --timeout-s, or "
                "probe fewer or smaller sizes."
            )
        time.sleep(0.2)
