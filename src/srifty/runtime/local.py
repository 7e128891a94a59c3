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

Interrupted (Ctrl-C, SIGTERM), the runner writes ``workers/stop.json`` (:data:`~srifty.checkpoints.STOP_REQUEST_FILE`)
for the workers to checkpoint and stop (:meth:`~srifty.runtime.runner.Runner.interrupted`). With a
:class:`~srifty.runtime.state.LocalRunState`, the runner keeps ``run.json`` up to date, and a runner built
from a saved one continues that run (``srifty run --resume RUN_DIR``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from srifty.artifacts import atomic_write_text
from srifty.checkpoints import STOP_REQUEST_FILE
from srifty.errors import SriftyError
from srifty.processes import ProcessGuard
from srifty.runtime.controller import Controller
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.faults import Fault
from srifty.runtime.runner import Clock, Reporter, Runner, RunOutcome, no_report, saved_timeline
from srifty.runtime.state import LocalRunState
from srifty.runtime.torchrun import (
    STARTUP_TIMEOUT_S,
    first_error_line,
    killed_worker,
    launch_env,
    log_size,
    rank_layout,
    read_log_from,
    worker_exit_codes,
)
from srifty.vocab import Config, torchrun_target


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalRunner(Runner):
    """Runs one job to completion across relaunches.

    Args:
        controller: tracks progress and re-plans (its spec gives the iterations and overheads).
        train_command: the training command, e.g. ``["python", "examples/train_tiny.py"]``.
        run_dir: progress, heartbeats, checkpoints, decision log and timeline go here.
        faults: injected faults (each fires once).
        hang_timeout_s: no progress for this long means a worker hung.
        ckpt_every: iterations between checkpoints.
        max_launches: launches before the run gives up.
        clock: the run's clock (seconds; monotonic by default).
        report: receives one line per notable event (a fault that could not fire, processes ended).
        state: what the run was started with, kept in ``run.json`` for ``--resume`` (``None``: no ``run.json``);
            its ``cwd`` is where the training command runs.
        elapsed_s: seconds the run had already run (a resumed run continues its time axis).
        resumed_after: to resume, the old launch's leftover processes that were ended (``None``: a new run).
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
        clock: Clock = time.monotonic,
        report: Reporter = no_report,
        state: LocalRunState | None = None,
        elapsed_s: float = 0.0,
        resumed_after: Sequence[str] | None = None,
    ) -> None:
        super().__init__(controller, run_dir, clock, clock() - elapsed_s, report)
        self.train_command = list(train_command)
        self.faults = list(faults)
        self.hang_timeout_s = hang_timeout_s
        self.ckpt_every = ckpt_every
        self.max_launches = max_launches
        self._log_offset = 0
        self._offset = 0
        self._switched: Decision | None = None  # a switch decided while the current launch runs
        self._proc: subprocess.Popen[bytes] | None = None
        self.guard = ProcessGuard("run")
        self.launch_id = ""
        self.state = state
        self.finished = False
        self._launches_before = state.launches if state is not None else 0  # a resumed run's earlier launches
        if resumed_after is not None:
            self.timeline = saved_timeline(run_dir)
            step = state.checkpoint_step if state is not None else 0
            self.event("resume", from_iteration=step, ended=list(resumed_after))

    def _launch(self, config: Config) -> subprocess.Popen[bytes]:
        layout = rank_layout(config)
        self.launch_id = uuid.uuid4().hex[:12]
        ckpt_dir = str(self.run_dir / "checkpoints")
        env = {
            **os.environ,
            **launch_env(config, self.controller.spec.iterations, ckpt_dir, self.ckpt_every, self.launch_id),
            "SRIFTY_RUN_DIR": str(self.run_dir / "workers"),
        }
        for stale in [*(self.run_dir / "workers").glob("rank*.json"), self.run_dir / "workers" / STOP_REQUEST_FILE]:
            stale.unlink(missing_ok=True)
        command = [
            sys.executable, "-m", "torch.distributed.run",
            "--nnodes=1", f"--nproc-per-node={len(layout)}",
            "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{_free_port()}", "--rdzv-id=srifty-local",
            "--max-restarts=0", f"--log-dir={self.run_dir / 'torchrun'}", *torchrun_target(self.train_command),
        ]  # fmt: skip
        spec = self.controller.spec
        first = {} if self.timeline else {"deadline_s": spec.deadline_s, "target_iterations": spec.iterations}
        self.event("launch", config=config.notation(), world_size=len(layout), **first)
        log_path = self.run_dir / "torchrun.log"
        self._log_offset = log_size(log_path)
        self.launches += 1
        self.configs.append(config.notation())
        cwd = self.state.cwd if self.state is not None else None
        with open(log_path, "ab") as log:  # the child keeps its own descriptor
            self._proc = self.guard.popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd
            )
        self.save_state()
        return self._proc

    def _heartbeats(self) -> dict[int, dict[str, object]]:
        return read_heartbeats(self.run_dir / "workers", self.launch_id)

    def _progress_lines(self, offset: int) -> tuple[list[dict[str, object]], int]:
        return read_progress(self.run_dir / "workers" / "progress.jsonl", offset, self.launch_id)

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
        self.event(f"inject_{fault.kind}", rank=fault.rank, pid=pid)
        return "fired"

    def _skip(self, fault: Fault, why: str) -> None:
        text = f"the {fault.kind} of rank {fault.rank} at iteration {fault.iteration} was not injected: {why}"
        self.warn(text, rank=fault.rank, detail=why)

    def run(self) -> RunOutcome:
        try:
            outcome = self._run()
            self.finished = True
            return outcome
        except (KeyboardInterrupt, SystemExit) as stop:
            self.interrupted(stop)
            raise
        finally:
            ended = self.guard.end()
            if ended:
                self.event("ended_processes", processes=ended)
                self.report(f"ended {len(ended)} process(es) this run started: " + "; ".join(ended))
            self.save_state()
            self.write_timeline()

    def save_state(self) -> None:
        if self.state is None:
            return
        c = self.controller
        self.state = self.state.advance(
            c.config, started_unix=time.time() - self.now(), controller_pid=os.getpid(), mark=self.guard.variable,
            iteration=c.iteration, checkpoint_step=self.last_checkpoint(), spent_usd=c.cost_so_far_usd(self.now()),
            launches=self._launches_before + self.launches, finished=self.finished,
        )  # fmt: skip
        self.state.save(self.run_dir)

    def launch_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def request_stop(self, how: str) -> None:
        request = {"launch": self.launch_id, "signal": how}
        atomic_write_text(self.run_dir / "workers" / STOP_REQUEST_FILE, json.dumps(request))

    def take_progress(self) -> None:
        self._take_progress(timeline=False)

    def _end_launch(self) -> None:
        """End whatever is left of the current launch (workers torchrun did not stop)."""
        ended = self.guard.end()
        if ended:
            self.event("ended_processes", processes=ended)

    def _take_progress(self, timeline: bool) -> bool:
        """Feed the controller the iterations the workers reported since the last look (and add them to the
        timeline if ``timeline``); returns whether an iteration was new. A switch the controller decides while
        the launch runs (a re-plan, the spot policy) is kept for :meth:`_watch` to end the launch."""
        lines, self._offset = self._progress_lines(self._offset)
        progressed = False
        for line in lines:
            iteration = int(line["iteration"])  # type: ignore[call-overload]
            if iteration > self.controller.iteration:
                decision = self.controller.on_iteration(iteration, self.now())
                if timeline and decision is not None and decision.action == "switch" and self._switched is None:
                    self._switched = decision
                if timeline:
                    self.iteration_event(iteration, line.get("loss"))
                progressed = True
        return progressed

    def _run(self) -> RunOutcome:
        config = self.controller.config
        (self.run_dir / "workers").mkdir(parents=True, exist_ok=True)
        while self.controller.iteration < self.controller.spec.iterations:
            if self.launches >= self.max_launches:
                raise SriftyError(f"gave up after {self.launches} launches; see {self.run_dir / 'torchrun.log'}")
            proc = self._launch(config)
            layout = rank_layout(config)
            failed_rank = self._watch(proc, len(layout))
            self._end_launch()
            proc.wait()
            self._take_progress(timeline=False)
            if proc.returncode == 0 and self.controller.iteration >= self.controller.spec.iterations:
                break
            switched, self._switched = self._switched, None
            if switched is not None:  # the launch was ended for the new configuration: resume from the checkpoint
                self.rollback(self.last_checkpoint())
                self.event(switched.action, reason=switched.reason, config=switched.config)
                config = self.controller.config
                continue
            if failed_rank is None:
                failed_rank = self._worker_failure()
            if failed_rank is None:
                failed_rank = hung_rank(self._heartbeats()) if self._heartbeats() else (0, "unknown")
            group = config.groups[layout[failed_rank[0]][0]]
            self.rollback(self.last_checkpoint())
            if "preempted" in failed_rank[1]:
                decision = self.controller.on_preemption(group.instance.name, group.market, 1, self.now())
            else:
                decision = self.controller.on_hang(group.instance.name, group.market, self.now(), failed_rank[1])
            self.event(decision.action, reason=decision.reason, config=decision.config)
            config = self.controller.config
        for fault in self.faults:
            self._skip(fault, f"the run finished at iteration {self.controller.iteration} first")
        self.event("finished", config=config.notation())
        return self.outcome()

    def _watch(self, proc: subprocess.Popen[bytes], world_size: int) -> tuple[int, str] | None:
        """Watch a launch until torchrun exits, a worker hangs or the controller switches configurations;
        returns the failed rank and why (``None``: not known yet)."""
        failed_rank: tuple[int, str] | None = None
        last_progress = self.now()
        started = False
        while proc.poll() is None:
            time.sleep(0.1)
            if self._take_progress(timeline=True):
                last_progress = self.now()
            if self._switched is not None:
                break
            for fault in [f for f in self.faults if self.controller.iteration >= f.iteration]:
                state = self._fire(fault, world_size)
                if state != "wait":
                    self.faults.remove(fault)
                if state == "fired" and fault.kind == "preempt":
                    failed_rank = (fault.rank, "preempted (injected SIGKILL)")
            beats = self._heartbeats()
            if len(beats) < world_size:  # still starting: the hang clock runs once every rank is up
                if self.now() - last_progress > max(self.hang_timeout_s, STARTUP_TIMEOUT_S):
                    raise SriftyError(
                        f"only {len(beats)} of {world_size} workers started within "
                        f"{max(self.hang_timeout_s, STARTUP_TIMEOUT_S):.0f} s; see {self.run_dir / 'torchrun.log'}"
                    )
                continue
            if not started:
                started, last_progress = True, self.now()
            if self.now() - last_progress > self.hang_timeout_s:
                failed_rank = hung_rank(beats)
                self.event("hang_detected", detail=failed_rank[1])
                break
        return failed_rank

    def _worker_failure(self) -> tuple[int, str] | None:
        """Why torchrun failed, from its error report in this launch's part of ``torchrun.log``.

        A worker killed by a signal (negative exit code) stands for a lost VM: treated as preempted. A
        worker that exited with an error is the training command's own failure, not the cloud's: no
        re-plan can fix it, so it stops the run.

        Raises:
            SriftyError: a worker exited with a non-zero code, with the last error line of its output.
        """
        path = self.run_dir / "torchrun.log"
        text = read_log_from(path, self._log_offset)
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

    def last_checkpoint(self) -> int:
        """The step of the last checkpoint (its ``latest`` marker; 0 for none or an unreadable one)."""
        marker = self.run_dir / "checkpoints" / "latest"
        try:
            return int(json.loads(marker.read_text())["step"]) if marker.exists() else 0
        except (OSError, ValueError, KeyError, TypeError):
            return 0


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


def make_log(run_dir: Path) -> DecisionLog:
    """The run's decision log (an earlier run's log in ``run_dir`` is kept under another name)."""
    return DecisionLog.fresh(run_dir / "decisions.jsonl")
