"""What every ``srifty run`` launch has in common, whichever runner starts it: torchrun's command line and
environment, the rank layout, and what torchrun's output says about a failure.

Functions over configurations and text; nothing here starts a process (:func:`local_command` only asks the
kernel for a free port).
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from srifty.runtime.hosts import Host
from srifty.vocab import Config, torchrun_target

#: Seconds every worker gets to start (import torch, join the rendezvous) before the run gives up.
STARTUP_TIMEOUT_S = 300.0
#: Identifies one launch in the workers' heartbeats and progress lines.
ENV_LAUNCH_ID = "SRIFTY_LAUNCH_ID"
#: Seconds torchrun gives its workers to end after SIGTERM before SIGKILL (its default is 30). A stopped
#: worker (a hang or partition fault) acts on nothing but SIGKILL, so when srifty dies and torchrun gets its
#: parent-death SIGTERM, this bounds how long such a worker outlives it.
TORCHRUN_SHUTDOWN_S = 5
#: Exit code of a worker that ended itself because the controller gave up on it (srifty.torch.courier).
FENCED_EXIT = 75
#: What a worker's error says when a peer failed, not its own code.
BROKEN_COLLECTIVE = re.compile(r"Connection (closed|reset) by peer|remote worker crash|gloo/transport", re.IGNORECASE)


def rank_layout(config: Config) -> list[tuple[int, int]]:
    """``(group index, local batch)`` of each rank, group by group."""
    return [(i, g.local_batch) for i, g in enumerate(config.groups) for _ in range(g.n_gpus)]


def local_command(config: Config, log_dir: Path, train_command: Sequence[str]) -> list[str]:
    """torchrun on this machine: one node, a worker per rank of ``config``, c10d rendezvous on a free port of
    127.0.0.1, no restarts (srifty relaunches), per-worker logs in ``log_dir``."""
    return [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes=1", f"--nproc-per-node={len(rank_layout(config))}",
        "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}", "--rdzv-id=srifty-local",
        "--max-restarts=0", f"--log-dir={log_dir}", *torchrun_target(train_command),
    ]  # fmt: skip


def host_command(python: str, hosts: Sequence[Host], node: int, port: int, train_command: Sequence[str]) -> list[str]:
    """torchrun on node ``node`` of ``hosts``: static rendezvous on the first host's c10d store, so node ``i``
    takes the ranks that follow node ``i−1``'s and each rank gets the local batch the plan gave its GPU."""
    return [
        python,
        "-m", "torch.distributed.run",
        "--nnodes", str(len(hosts)), "--node-rank", str(node), "--nproc-per-node", str(hosts[node].gpus),
        "--master-addr", hosts[0].address, "--master-port", str(port), "--max-restarts", "0",
        *torchrun_target(train_command),
    ]  # fmt: skip


#: Where a multi-host launch's rendezvous port is drawn from: from here up to the kernel's ephemeral range.
RENDEZVOUS_PORT_LOW = 20000


def ephemeral_port_low(path: Path = Path("/proc/sys/net/ipv4/ip_local_port_range")) -> int:
    """The lowest port the kernel hands out for outgoing connections and ``bind(0)`` (Linux's default 32768
    where the file cannot be read)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def rendezvous_port(draw: int) -> int:
    """A multi-host launch's rendezvous port from ``draw`` (any non-negative integer, a random one): below the
    ephemeral range, so no connection of this machine (gloo's, an earlier launch's) holds it already. A port
    inside that range was taken by such a connection once (EADDRINUSE on a relaunch) and the run failed."""
    high = max(ephemeral_port_low(), RENDEZVOUS_PORT_LOW + 1000)
    return RENDEZVOUS_PORT_LOW + draw % (high - RENDEZVOUS_PORT_LOW)


def free_port() -> int:
    """A TCP port of 127.0.0.1 that is free now (the kernel's choice)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def torchrun_env() -> dict[str, str]:
    """Environment for torchrun (its ``--shutdown-timeout``, as a variable: older torchruns on remote hosts
    ignore it instead of refusing an unknown option); a value the user set is kept."""
    name = "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"
    return {name: os.environ.get(name, str(TORCHRUN_SHUTDOWN_S))}


def launch_env(config: Config, iterations: int, ckpt_dir: str, ckpt_every: int, launch_id: str) -> dict[str, str]:
    """What every worker of a launch reads (:mod:`srifty.torch.training`): its local batch by rank, the global
    batch, how the model is spread (DDP, FSDP or HSDP), the iterations, where and how often to checkpoint, the
    launch's id; one thread per worker."""
    return {
        ENV_LAUNCH_ID: launch_id,
        "SRIFTY_RANK_BATCHES": ",".join(str(b) for _, b in rank_layout(config)),
        "SRIFTY_GLOBAL_BATCH": str(config.global_batch),
        **config.sharding_env(),
        "SRIFTY_ITERATIONS": str(iterations),
        "SRIFTY_CKPT_DIR": ckpt_dir,
        "SRIFTY_CKPT_EVERY": str(ckpt_every),
        "OMP_NUM_THREADS": "1",
        **torchrun_env(),
    }


def read_log_from(path: Path, offset: int) -> str:
    """A log's text from byte ``offset`` on (one launch's part of a log the launches append to)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read().decode("utf-8", errors="replace")


def log_size(path: Path) -> int:
    """Where the next launch's part of an appended log starts (0 for a log not written yet)."""
    return path.stat().st_size if path.exists() else 0


def worker_exit_codes(text: str) -> list[tuple[int, int]]:
    """``(rank, exit code)`` of each failed worker in torchrun's error report (``text``: its output)."""
    codes = re.findall(r"rank\s*:\s*(\d+)\s*\(local_rank[^)]*\)\s*\n\s*exitcode\s*:\s*(-?\d+)", text)
    return [(int(r), int(c)) for r, c in codes]


def killed_worker(text: str) -> tuple[int, int] | None:
    """``(rank, signal)`` of the first worker torchrun reports killed by a signal (a lost VM), if any: the
    others then fail on the broken collective, so the killed one is the cause."""
    killed = [(rank, -code) for rank, code in worker_exit_codes(text) if code < 0]
    return killed[0] if killed else None


#: What a worker's own failure looks like when it raised nothing: the interpreter or the shell saying so.
_STARTUP_FAILURE = re.compile(r"can't open file|No such file or directory|command not found|Permission denied")


def first_error_line(text: str) -> str:
    """The script's own error, quoted from torchrun's output: its first ``SomeError: …`` line (not
    torchrun's), else the interpreter's or the shell's complaint (``python: can't open file 'trian.py'``)."""
    pattern = re.compile(r"^(\[rank\d+\]:\s*)?[A-Za-z_.]*(Error|Exception): ")
    lines = [line for line in text.splitlines() if "torch.distributed.elastic" not in line]
    errors = [line for line in lines if pattern.match(line)]
    errors = errors or [line for line in lines if _STARTUP_FAILURE.search(line)]
    return errors[0].strip() if errors else "no error line found"
