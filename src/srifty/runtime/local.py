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

import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from srifty.errors import SriftyError
from srifty.runtime.controller import Controller
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.faults import Fault, FireResult
from srifty.runtime.local_launch import LocalLaunch, hung_rank, last_checkpoint, progress_file, read_progress
from srifty.runtime.runner import Clock, Reporter, Runner, RunOutcome, no_report
from srifty.runtime.state import LocalRunState
from srifty.runtime.torchrun import STARTUP_TIMEOUT_S, launch_env, rank_layout
from srifty.vocab import Config


class LocalRunner(Runner[Fault]):
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
        super().__init__(controller, run_dir, clock, clock() - elapsed_s, report, faults)
        self.train_command = list(train_command)
        self.hang_timeout_s = hang_timeout_s
        self.ckpt_every = ckpt_every
        self.max_launches = max_launches
        self._offset = 0  # where the next read of progress.jsonl starts (bytes)
        self._switched: Decision | None = None  # a switch decided while the current launch runs
        self._launch: LocalLaunch | None = None  # the current (or last) launch
        self.state = state
        self.finished = False
        self._launches_before = state.launches if state is not None else 0  # a resumed run's earlier launches
        if resumed_after is not None:
            self.continue_timeline(state.checkpoint_step if state is not None else 0, resumed_after)

    def _start(self, config: Config) -> LocalLaunch:
        launch_id = uuid.uuid4().hex[:12]
        ckpt_dir = str(self.run_dir / "checkpoints")
        env = {
            **os.environ,
            **launch_env(config, self.controller.spec.iterations, ckpt_dir, self.ckpt_every, launch_id),
            "SRIFTY_RUN_DIR": str(self.run_dir / "workers"),
        }
        spec = self.controller.spec
        first = {} if self.timeline else {"deadline_s": spec.deadline_s, "target_iterations": spec.iterations}
        self.event("launch", config=config.notation(), world_size=len(rank_layout(config)), **first)
        self.launched(config)
        cwd = self.state.cwd if self.state is not None else None
        self._launch = LocalLaunch.start(launch_id, config, self.train_command, self.run_dir, env, self.guard, cwd)
        self.save_state()
        return self._launch

    def run(self) -> RunOutcome:
        try:
            outcome = self._run()
            self.finished = True
            return outcome
        except (KeyboardInterrupt, SystemExit) as stop:
            self.interrupted(stop)
            raise
        finally:
            self.say_ended(self.guard.end())
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
        return self._launch is not None and self._launch.running()

    def request_stop(self, how: str) -> None:
        if self._launch is not None:
            self._launch.request_stop(how)

    def take_progress(self) -> None:
        self._take_progress(timeline=False)

    def last_checkpoint(self) -> int:
        return last_checkpoint(self.run_dir)

    def _take_progress(self, timeline: bool) -> bool:
        """Feed the controller the iterations the workers reported since the last look (and add them to the
        timeline if ``timeline``); returns whether an iteration was new. A switch the controller decides while
        the launch runs (a re-plan, the spot policy) is kept for :meth:`_watch` to end the launch."""
        launch_id = self._launch.launch_id if self._launch is not None else ""
        lines, self._offset = read_progress(progress_file(self.run_dir), self._offset, launch_id)
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
            launch = self._start(config)
            layout = rank_layout(config)
            failed_rank = self._watch(launch, len(layout))
            self.end_started()  # whatever is left of the launch (workers torchrun did not stop)
            launch.proc.wait()
            self._take_progress(timeline=False)
            if launch.proc.returncode == 0 and self.controller.iteration >= self.controller.spec.iterations:
                break
            switched, self._switched = self._switched, None
            if switched is not None:  # the launch was ended for the new configuration: resume from the checkpoint
                self.rollback(self.last_checkpoint())
                self.event(switched.action, reason=switched.reason, config=switched.config)
                config = self.controller.config
                continue
            if failed_rank is None:
                failed_rank = launch.failure()
            if failed_rank is None:
                failed_rank = hung_rank(launch.heartbeats()) if launch.heartbeats() else (0, "unknown")
            group = config.groups[layout[failed_rank[0]][0]]
            self.rollback(self.last_checkpoint())
            if "preempted" in failed_rank[1]:
                decision = self.controller.on_preemption(group.instance.name, group.market, 1, self.now())
            else:
                decision = self.controller.on_hang(group.instance.name, group.market, self.now(), failed_rank[1])
            self.event(decision.action, reason=decision.reason, config=decision.config)
            config = self.controller.config
        self.finish(config)
        return self.outcome()

    def _watch(self, launch: LocalLaunch, world_size: int) -> tuple[int, str] | None:
        """Watch a launch until torchrun exits, a worker hangs or the controller switches configurations;
        returns the failed rank and why (``None``: not known yet)."""
        failed_rank: tuple[int, str] | None = None
        last_progress = self.now()
        started = False

        def fire(fault: Fault) -> FireResult:
            return launch.fire(fault, world_size, self.guard.owns)

        while launch.running():
            time.sleep(0.1)
            if self._take_progress(timeline=True):
                last_progress = self.now()
            if self._switched is not None:
                break
            for fault in self.fire_due(fire):
                if fault.kind == "preempt":
                    failed_rank = (fault.rank, "preempted (injected SIGKILL)")
            beats = launch.heartbeats()
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


def make_log(run_dir: Path) -> DecisionLog:
    """The run's decision log (an earlier run's log in ``run_dir`` is kept under another name)."""
    return DecisionLog.fresh(run_dir / "decisions.jsonl")
