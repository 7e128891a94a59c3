"""``srifty run`` on one machine: real ``torchrun`` (c10d rendezvous, gloo) over local processes, with the
controller re-planning after a (real or injected) preemption and relaunching from the last checkpoint.

Each rank stands for one GPU of the planned configuration; ranks are numbered group by group, VM by VM.
Injected faults stand in for the cloud's: ``preempt_at`` kills a worker process with SIGKILL as a spot
reclaim would, ``hang_at`` stops one with SIGSTOP. A fault waits until its rank has reported a heartbeat
in the current launch. A worker that makes no progress for ``hang_timeout_s`` is treated as preempted.
This is an emulation of a cluster on one machine; the processes, DDP, gloo traffic and checkpoints are
real.

Process hygiene: torchrun puts every worker in a session of its own, so the runner starts torchrun under
a :class:`~srifty.processes.ProcessGuard` and ends the guard's processes (torchrun, its workers, anything
they started) after every launch and on every way out of :meth:`LocalRunner.run`: success, an error,
Ctrl-C, SIGTERM. Heartbeats and progress lines carry the launch's id (``SRIFTY_LAUNCH_ID``), so a
leftover from another run in the same folder is never read, nor signalled.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from srifty.artifacts import atomic_write_text
from srifty.errors import SpecError, SriftyError
from srifty.processes import ProcessGuard
from srifty.runtime.controller import Controller
from srifty.runtime.decisions import DecisionLog
from srifty.vocab import Config
from srifty.vocab.commands import torchrun_target

DEFAULT_MTBF_S = 3600.0
#: Seconds every worker gets to start (import torch, join the rendezvous) before the run gives up.
STARTUP_TIMEOUT_S = 300.0
#: Identifies one launch in the workers' heartbeats and progress lines.
ENV_LAUNCH_ID = "SRIFTY_LAUNCH_ID"


@dataclass(frozen=True)
class Fault:
    """An injected fault: at ``iteration``, ``kind`` (``preempt`` or ``hang``) hits ``rank``."""

    kind: str
    iteration: int
    rank: int


@dataclass
class RunOutcome:
    """What happened: launches, the iterations finished, the timeline and the decision log path."""

    iterations: int
    launches: int
    configs: list[str]
    timeline: list[dict[str, object]] = field(default_factory=list)
    log_path: Path | None = None
    warnings: list[str] = field(default_factory=list)


def check_faults(faults: Sequence[Fault], world_size: int, iterations: int) -> None:
    """Refuse faults that can never fire: a rank outside the starting world, or an iteration not before the
    last one.

    Raises:
        SpecError: naming the option and the valid range.
    """
    for fault in faults:
        option = "--preempt" if fault.kind == "preempt" else "--hang"
        if not 0 <= fault.rank < world_size:
            raise SpecError(
                f"{option}-rank {fault.rank} does not exist: the configuration starts with {world_size} rank(s), "
                f"numbered 0 to {world_size - 1}. Choose one of those, or start on a larger --config."
            )
        if not 0 <= fault.iteration < iterations:
            raise SpecError(
                f"{option}-at {fault.iteration} can never fire: the job runs iterations 1 to {iterations}, so a "
                f"fault must come at 0 to {iterations - 1}."
            )


def checkpoint_interval_iters(checkpoint_s: float, iter_s: float, mtbf_s: float = DEFAULT_MTBF_S) -> int:
    """Young's optimum ``sqrt(2·C·MTBF)`` between checkpoints, in iterations (at least 1).

    ``C`` is the checkpoint/restore cost from the spec's overheads; ``MTBF`` the mean time between
    preemptions (one hour by default, an assumption: spot interruption rates are not in the catalog).
    """
    if iter_s <= 0:
        return 1
    return max(1, int(math.sqrt(2.0 * max(checkpoint_s, 0.0) * mtbf_s) / iter_s))


#: Seconds torchrun gives its workers to end after SIGTERM before SIGKILL (its default is 30). A stopped
#: worker (a hang or partition fault) acts on nothing but SIGKILL, so when srifty dies and torchrun gets its
#: parent-death SIGTERM, this bounds how long such a worker outlives it.
TORCHRUN_SHUTDOWN_S = 5


def torchrun_env() -> dict[str, str]:
    """Environment for torchrun (its ``--shutdown-timeout``, as a variable: older torchruns on remote hosts
    ignore it instead of refusing an unknown option); a value the user set is kept."""
    name = "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"
    return {name: os.environ.get(name, str(TORCHRUN_SHUTDOWN_S))}


def rank_layout(config: Config) -> list[tuple[int, int]]:
    """``(group index, local batch)`` of each rank, group by group."""
    return [(i, g.local_batch) for i, g in enumerate(config.groups) for _ in range(g.n_gpus)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalRunner:
    """Runs one job to completion across relaunches.

    Args:
        controller: tracks progress and re-plans (its spec gives the iterations and overheads).
        train_command: the training command, e.g. ``["python", "examples/train_tiny.py"]``.
        run_dir: progress, heartbeats, checkpoints, decision log and timeline go here.
        faults: injected faults (each fires once).
        hang_timeout_s: no progress for this long means a worker hung.
        ckpt_every: iterations between checkpoints.
        report: receives one line per notable event (a fault that could not fire, processes ended).
    """

    def __init__(
        self,
        controller: Controller,
        train_command: Sequence[str],
        run_dir: Path,
        faults: Sequence[Fault] = (),
        hang_timeout_s: float = 60.0,
        ckpt_every: int = 10,
        max_launches: int = 5,
        clock: Callable[[], float] = time.monotonic,
        report: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.controller = controller
        self.train_command = list(train_command)
        self.run_dir = run_dir
        self.faults = list(faults)
        self.hang_timeout_s = hang_timeout_s
        self.ckpt_every = ckpt_every
        self.max_launches = max_launches
        self.clock = clock
        self._t0 = clock()
        self.timeline: list[dict[str, object]] = []
        self._log_offset = 0
        self.report = report
        self.guard = ProcessGuard("run")
        self.launch_id = ""
        self.warnings: list[str] = []

    def now(self) -> float:
        """Seconds since the run started."""
        return self.clock() - self._t0

    def _event(self, kind: str, **details: object) -> None:
        self.timeline.append(
            {"time_s": round(self.now(), 3), "iteration": self.controller.iteration, "event": kind, **details}
        )

    def _launch(self, config: Config) -> subprocess.Popen[bytes]:
        layout = rank_layout(config)
        self.launch_id = uuid.uuid4().hex[:12]
        env = {
            **os.environ,
            ENV_LAUNCH_ID: self.launch_id,
            "SRIFTY_RANK_BATCHES": ",".join(str(b) for _, b in layout),
            "SRIFTY_GLOBAL_BATCH": str(config.global_batch),
            **config.sharding_env(),
            "SRIFTY_ITERATIONS": str(self.controller.spec.iterations),
            "SRIFTY_RUN_DIR": str(self.run_dir / "workers"),
            "SRIFTY_CKPT_DIR": str(self.run_dir / "checkpoints"),
            "SRIFTY_CKPT_EVERY": str(self.ckpt_every),
            "OMP_NUM_THREADS": "1",
            **torchrun_env(),
        }
        for stale in (self.run_dir / "workers").glob("rank*.json"):
            stale.unlink()
        command = [
            sys.executable, "-m", "torch.distributed.run",
            "--nnodes=1", f"--nproc-per-node={len(layout)}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{_free_port()}", "--rdzv-id=srifty-local",
            "--max-restarts=0", *torchrun_target(self.train_command),
        ]  # fmt: skip
        spec = self.controller.spec
        first = {} if self.timeline else {"deadline_s": spec.deadline_s, "target_iterations": spec.iterations}
        self._event("launch", config=config.notation(), world_size=len(layout), **first)
        log_path = self.run_dir / "torchrun.log"
        self._log_offset = log_path.stat().st_size if log_path.exists() else 0
        with open(log_path, "ab") as log:  # the child keeps its own descriptor
            return self.guard.popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def _this_launch(self, record: object) -> bool:
        """Whether a heartbeat or progress record comes from the current launch (records of scripts that
        write their own, without a launch id, are taken as current)."""
        return isinstance(record, dict) and record.get("launch", self.launch_id) == self.launch_id

    def _heartbeats(self) -> dict[int, dict[str, object]]:
        beats = {}
        for path in (self.run_dir / "workers").glob("rank*.json"):
            try:
                record = json.loads(path.read_text())
                rank = int(record["rank"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if self._this_launch(record):
                beats[rank] = record
        return beats

    def _progress_lines(self, offset: int) -> tuple[list[dict[str, object]], int]:
        path = self.run_dir / "workers" / "progress.jsonl"
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
            if self._this_launch(record):
                lines.append(record)
        return lines, offset + len(complete.encode("utf-8"))

    def _fire(self, fault: Fault, world_size: int) -> str:
        """Inject ``fault`` if its rank has a heartbeat in this launch. Returns ``"fired"``, ``"wait"`` (the
        rank has not started yet) or ``"skipped"`` (it cannot fire any more; a warning says why)."""
        if fault.rank >= world_size:
            self._skip(fault, f"rank {fault.rank} is not in the current configuration ({world_size} ranks)")
            return "skipped"
        beat = self._heartbeats().get(fault.rank)
        if beat is None:
            return "wait"
        try:
            pid = int(beat["pid"])  # type: ignore[call-overload]
        except (KeyError, TypeError, ValueError):
            return "wait"
        if not self.guard.owns(pid):  # never signal a process this run did not start
            self._skip(fault, f"rank {fault.rank} (pid {pid}) had already exited")
            return "skipped"
        os.kill(pid, signal.SIGKILL if fault.kind == "preempt" else signal.SIGSTOP)
        self._event(f"inject_{fault.kind}", rank=fault.rank, pid=pid)
        return "fired"

    def _skip(self, fault: Fault, why: str) -> None:
        text = f"the {fault.kind} of rank {fault.rank} at iteration {fault.iteration} was not injected: {why}"
        self.warnings.append(text)
        self._event("fault_not_injected", rank=fault.rank, detail=why)
        self.report(text)

    def _hung_rank(self, beats: dict[int, dict[str, object]]) -> tuple[int, str]:
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

    def run(self) -> RunOutcome:
        """Launch, watch, re-plan and relaunch until every iteration is done; on any way out (success, an
        error, Ctrl-C, SIGTERM turned into SystemExit) every process this run started is ended first."""
        try:
            return self._run()
        finally:
            ended = self.guard.end()
            if ended:
                self._event("ended_processes", processes=ended)
                self.report(f"ended {len(ended)} process(es) this run started: " + "; ".join(ended))
            atomic_write_text(self.run_dir / "timeline.json", json.dumps(self.timeline, indent=1))

    def _end_launch(self) -> None:
        """End whatever is left of the current launch (workers torchrun did not stop)."""
        ended = self.guard.end()
        if ended:
            self._event("ended_processes", processes=ended)

    def _run(self) -> RunOutcome:
        config = self.controller.config
        launches = 0
        configs = []
        (self.run_dir / "workers").mkdir(parents=True, exist_ok=True)
        offset = 0
        while self.controller.iteration < self.controller.spec.iterations:
            if launches >= self.max_launches:
                raise SriftyError(f"gave up after {launches} launches; see {self.run_dir / 'torchrun.log'}")
            proc = self._launch(config)
            launches += 1
            configs.append(config.notation())
            layout = rank_layout(config)
            failed_rank: tuple[int, str] | None = None
            switched = None  # a switch the controller decided while this launch ran (re-plan, spot policy)
            last_progress = self.now()
            started = False
            while proc.poll() is None and switched is None:
                time.sleep(0.1)
                lines, offset = self._progress_lines(offset)
                for line in lines:
                    iteration = int(line["iteration"])  # type: ignore[call-overload]
                    if iteration > self.controller.iteration:
                        decision = self.controller.on_iteration(iteration, self.now())
                        if decision is not None and decision.action == "switch" and switched is None:
                            switched = decision
                        self.timeline.append(
                            {
                                "time_s": round(self.now(), 3),
                                "iteration": iteration,
                                "event": "iteration",
                                "loss": line.get("loss"),
                            }
                        )
                        last_progress = self.now()
                if switched is not None:
                    break
                for fault in [f for f in self.faults if self.controller.iteration >= f.iteration]:
                    state = self._fire(fault, len(layout))
                    if state != "wait":
                        self.faults.remove(fault)
                    if state == "fired" and fault.kind == "preempt":
                        failed_rank = (fault.rank, "preempted (injected SIGKILL)")
                beats = self._heartbeats()
                if len(beats) < len(layout):  # still starting: the hang clock runs once every rank is up
                    if self.now() - last_progress > max(self.hang_timeout_s, STARTUP_TIMEOUT_S):
                        raise SriftyError(
                            f"only {len(beats)} of {len(layout)} workers started within "
                            f"{max(self.hang_timeout_s, STARTUP_TIMEOUT_S):.0f} s; see {self.run_dir / 'torchrun.log'}"
                        )
                    continue
                if not started:
                    started, last_progress = True, self.now()
                if self.now() - last_progress > self.hang_timeout_s:
                    failed_rank = self._hung_rank(beats)
                    self._event("hang_detected", detail=failed_rank[1])
                    break
            self._end_launch()
            proc.wait()
            lines, offset = self._progress_lines(offset)
            for line in lines:
                iteration = int(line["iteration"])  # type: ignore[call-overload]
                if iteration > self.controller.iteration:
                    self.controller.on_iteration(iteration, self.now())
            if proc.returncode == 0 and self.controller.iteration >= self.controller.spec.iterations:
                break
            if switched is not None:  # the launch was ended for the new configuration: resume from the checkpoint
                self._resume_point()
                self._event(switched.action, reason=switched.reason, config=switched.config)
                config = self.controller.config
                continue
            if failed_rank is None:
                failed_rank = self._worker_failure()
            if failed_rank is None:
                failed_rank = self._hung_rank(self._heartbeats()) if self._heartbeats() else (0, "unknown")
            group = config.groups[layout[failed_rank[0]][0]]
            self._resume_point()
            if "preempted" in failed_rank[1]:
                decision = self.controller.on_preemption(group.instance.name, group.market, 1, self.now())
            else:
                decision = self.controller.on_hang(group.instance.name, group.market, self.now(), failed_rank[1])
            self._event(decision.action, reason=decision.reason, config=decision.config)
            config = self.controller.config
        for fault in self.faults:
            self._skip(fault, f"the run finished at iteration {self.controller.iteration} first")
        self._event("finished", config=config.notation())
        return RunOutcome(
            self.controller.iteration, launches, configs, self.timeline, self.controller.log.path, self.warnings
        )

    def _worker_failure(self) -> tuple[int, str] | None:
        """Why torchrun failed, from its error report in this launch's part of ``torchrun.log``.

        A worker killed by a signal (negative exit code) stands for a lost VM: treated as preempted. A
        worker that exited with an error is the training command's own failure, not the cloud's: no
        re-plan can fix it, so it stops the run.

        Raises:
            SriftyError: a worker exited with a non-zero code, with the last error line of its output.
        """
        path = self.run_dir / "torchrun.log"
        with open(path, "rb") as handle:
            handle.seek(self._log_offset)
            text = handle.read().decode("utf-8", errors="replace")
        codes = worker_exit_codes(text)
        if not codes:
            return None
        killed = [(r, c) for r, c in codes if c < 0]
        if killed:  # the others then fail on the broken collective: the killed one is the cause
            rank, code = killed[0]
            return rank, f"rank {rank} was killed by signal {-code}; preempted"
        rank, code = codes[-1]  # the report ends with the root cause
        last = first_error_line(text)
        raise SriftyError(
            f"the training command failed on rank {rank} with exit code {code}, which is its own error, not a "
            f"preemption: {last}. Fix the script (the full output is in {path})."
        )

    def _resume_point(self) -> None:
        """After a failure, training restarts from the last checkpoint: progress rolls back to it."""
        marker = self.run_dir / "checkpoints" / "latest"
        step = json.loads(marker.read_text())["step"] if marker.exists() else 0
        if step < self.controller.iteration:
            self._event("rollback", from_iteration=self.controller.iteration, to_iteration=step)
            self.controller.iteration = step
            self.controller.tracker.reset_window(step, self.now())


def worker_exit_codes(text: str) -> list[tuple[int, int]]:
    """``(rank, exit code)`` of each failed worker in torchrun's error report (``text``: its output)."""
    codes = re.findall(r"rank\s*:\s*(\d+)\s*\(local_rank[^)]*\)\s*\n\s*exitcode\s*:\s*(-?\d+)", text)
    return [(int(r), int(c)) for r, c in codes]


def first_error_line(text: str) -> str:
    """The first ``SomeError: …`` line of a worker in torchrun's output (not torchrun's own)."""
    pattern = re.compile(r"^(\[rank\d+\]:\s*)?[A-Za-z_.]*(Error|Exception): ")
    errors = [line for line in text.splitlines() if pattern.match(line) and "torch.distributed.elastic" not in line]
    return errors[0].strip() if errors else "no error line found"


def make_log(run_dir: Path) -> DecisionLog:
    """The run's decision log (an earlier run's log in ``run_dir`` is kept under another name)."""
    return DecisionLog.fresh(run_dir / "decisions.jsonl")
