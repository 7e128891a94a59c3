"""One launch of ``srifty run`` on one machine: a ``torchrun`` over local processes, and what can be read from
it (its workers' heartbeats and progress in the run folder, its part of ``torchrun.log``) to judge how it went.

:class:`LocalLaunch` holds what a launch started and answers questions about it; starting launches one after
another, watching them and re-planning is the :class:`~srifty.runtime.local.LocalRunner`'s (as
:class:`~srifty.runtime.cluster_launch.Launch` is to the multi-host runner).

The workers (:mod:`srifty.torch.training`) write their latest heartbeat to ``workers/rank<N>.json`` and append
progress lines to ``workers/progress.jsonl``; both carry the launch's id, so that a leftover of another launch
(or run) in the same folder is never read, nor signalled. Times in the records are Unix seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from srifty.artifacts import atomic_write_text
from srifty.checkpoints import STOP_REQUEST_FILE
from srifty.errors import SriftyError
from srifty.processes import ProcessGuard
from srifty.runtime.faults import Fault, FireResult
from srifty.runtime.torchrun import (
    first_error_line,
    killed_worker,
    local_command,
    log_size,
    read_log_from,
    worker_exit_codes,
)
from srifty.vocab import Config


@dataclass
class LocalLaunch:
    """What one launch started: its id, the torchrun process, the run folder and where this launch's part of
    ``torchrun.log`` starts (``log_offset``, bytes)."""

    launch_id: str
    proc: subprocess.Popen[bytes]
    run_dir: Path
    log_offset: int

    @classmethod
    def start(
        cls,
        launch_id: str,
        config: Config,
        train_command: Sequence[str],
        run_dir: Path,
        env: Mapping[str, str],
        guard: ProcessGuard,
        cwd: str | None,
    ) -> LocalLaunch:
        """Start torchrun with one worker per rank of ``config`` (its output appended to ``torchrun.log``), the
        workers getting ``env`` (the launch's id ``launch_id`` among it), in ``cwd`` (``None``: this process's),
        under ``guard``; the last launch's heartbeats and stop request are removed first."""
        workers = run_dir / "workers"
        for stale in [*workers.glob("rank*.json"), workers / STOP_REQUEST_FILE]:
            stale.unlink(missing_ok=True)
        log_path = run_dir / "torchrun.log"
        offset = log_size(log_path)
        with open(log_path, "ab") as log:  # the child keeps its own descriptor
            proc = guard.popen(
                local_command(config, run_dir / "torchrun", train_command), env=dict(env), stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd,
            )  # fmt: skip
        return cls(launch_id, proc, run_dir, offset)

    def running(self) -> bool:
        """Whether torchrun is still running."""
        return self.proc.poll() is None

    def heartbeats(self) -> dict[int, dict[str, object]]:
        """The latest heartbeat of each rank of this launch, by rank."""
        return read_heartbeats(self.run_dir / "workers", self.launch_id)

    def request_stop(self, how: str) -> None:
        """Ask the workers to checkpoint and stop (``workers/stop.json``); ``how``: what interrupted the run."""
        request = {"launch": self.launch_id, "signal": how}
        atomic_write_text(self.run_dir / "workers" / STOP_REQUEST_FILE, json.dumps(request))

    def fire(self, fault: Fault, world_size: int, owns: Callable[[int], bool]) -> FireResult:
        """Inject ``fault`` (SIGKILL for a preemption, SIGSTOP for a hang) if its rank has a heartbeat in this
        launch and its process is one ``owns`` says this run started. Returns the ``inject_*`` event (naming the
        rank and the pid hit), ``None`` when the rank has not started yet (try again later), or why it can never
        fire."""
        if fault.rank >= world_size:
            return f"rank {fault.rank} is not in the current configuration ({world_size} ranks)"
        beat = self.heartbeats().get(fault.rank)
        if beat is None:
            return None
        try:
            pid = int(beat["pid"])  # type: ignore[call-overload]
        except (KeyError, TypeError, ValueError):
            return None
        if not owns(pid):  # never signal a process this run did not start
            return f"rank {fault.rank} (pid {pid}) had already exited"
        os.kill(pid, signal.SIGKILL if fault.kind == "preempt" else signal.SIGSTOP)
        return f"inject_{fault.kind}", {"rank": fault.rank, "pid": pid}

    def failure(self) -> tuple[int, str] | None:
        """Why torchrun failed, from its error report in this launch's part of ``torchrun.log`` (``None``: it
        reports none).

        A worker killed by a signal (negative exit code) stands for a lost VM: treated as preempted. A
        worker that exited with an error is the training command's own failure, not the cloud's: no
        re-plan can fix it, so it stops the run.

        Raises:
            SriftyError: a worker exited with a non-zero code, with the last error line of its output.
        """
        path = self.run_dir / "torchrun.log"
        text = read_log_from(path, self.log_offset)
        codes = worker_exit_codes(text)
        if not codes:
            return None
        killed = killed_worker(text)
        if killed is not None:  # the others then fail on the broken collective: the killed one is the cause
            return killed[0], f"rank {killed[0]} was killed by signal {killed[1]}; preempted"
        rank, code = codes[-1]  # the report ends with the root cause
        raise SriftyError(
            f"the training command failed on rank {rank} with exit code {code}, which is its own error, not a "
            f"preemption: {first_error_line(text)}. Fix the script (the full output is in {path})."
        )


def last_checkpoint(run_dir: Path) -> int:
    """The step of the run's last checkpoint (``checkpoints/latest``; 0 for none or an unreadable one)."""
    marker = run_dir / "checkpoints" / "latest"
    try:
        return int(json.loads(marker.read_text())["step"]) if marker.exists() else 0
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def progress_file(run_dir: Path) -> Path:
    """Where the workers of every launch append their progress lines."""
    return run_dir / "workers" / "progress.jsonl"


def this_launch(record: object, launch_id: str) -> bool:
    """Whether a heartbeat or progress record comes from launch ``launch_id`` (records of scripts that write
    their own, without a launch id, are taken as current)."""
    return isinstance(record, dict) and record.get("launch", launch_id) == launch_id


def read_heartbeats(workers: Path, launch_id: str) -> dict[int, dict[str, object]]:
    """The latest heartbeat of each rank of launch ``launch_id`` (``workers/rank*.json``), by rank."""
    beats = {}
    for path in workers.glob("rank*.json"):
        try:
            record = json.loads(path.read_text())
            rank = int(record["rank"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if this_launch(record, launch_id):
            beats[rank] = record
    return beats


def read_progress(path: Path, offset: int, launch_id: str) -> tuple[list[dict[str, object]], int]:
    """The progress records of launch ``launch_id`` in ``path`` from byte ``offset`` on (complete lines only),
    and where the next read starts."""
    if not path.exists():
        return [], offset
    with open(path, encoding="utf-8") as handle:
        handle.seek(offset)
        text = handle.read()
    complete = text[: text.rfind("\n") + 1]
    lines = []
    for line in complete.splitlines():
        try:
            record = json.loads(line)
            int(record["iteration"])
        except (ValueError, KeyError, TypeError):
            continue  # not a progress record (or a script's own stray output)
        if this_launch(record, launch_id):
            lines.append(record)
    return lines, offset + len(complete.encode("utf-8"))


def hung_rank(beats: dict[int, dict[str, object]]) -> tuple[int, str]:
    """Which rank hung: a stopped process if there is one, else the one with the oldest heartbeat."""
    for rank, beat in sorted(beats.items()):
        try:
            state = Path(f"/proc/{beat['pid']}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if state in ("T", "t"):
            return rank, f"rank {rank} (pid {beat['pid']}) is stopped"
    rank = min(beats, key=lambda r: float(beats[r]["time"]))  # type: ignore[arg-type]
    return rank, f"rank {rank} has the oldest heartbeat"
