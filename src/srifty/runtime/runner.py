"""The one interface of ``srifty run``'s runners, and what they share: the run's clock, its timeline, its
warnings, the processes it started, its injected faults, the rollback to the last checkpoint, and what an
interrupted run does (Ctrl-C, SIGTERM: ask the workers to checkpoint and stop, wait for them, log where the run
stopped).

:class:`~srifty.runtime.local.LocalRunner` (one torchrun over local processes) and
:class:`~srifty.runtime.cluster.ClusterRunner` (one torchrun per host) implement :meth:`Runner.run`. Each
takes a clock (``clock() - started_at`` is the run's time in seconds), so that tests can swap it; neither
reads the time any other way for what it records. The controller's state is the controller's: a runner
changes it only through the controller's methods.
"""

from __future__ import annotations

import abc
import contextlib
import json
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from srifty.artifacts import atomic_write_text
from srifty.processes import ProcessGuard
from srifty.runtime.controller import Controller
from srifty.runtime.faults import Fault, FireResult, HostFault
from srifty.vocab import Config

#: Reads a clock in seconds (``time.monotonic`` for a run that never resumes, ``time.time`` for one that may).
Clock = Callable[[], float]
#: Receives one line per notable event (a fault that could not fire, processes ended).
Reporter = Callable[[str], None]
#: Seconds an interrupted run waits for its workers to checkpoint and stop before ending them.
STOP_GRACE_S = 30.0
#: The faults a runner injects: a rank's (one machine) or a host's.
F = TypeVar("F", Fault, HostFault)


def no_report(_: str) -> None:
    """The default reporter: says nothing."""


@dataclass
class RunOutcome:
    """What happened: launches, the iterations finished, the timeline and the decision log path."""

    iterations: int
    launches: int
    configs: list[str]
    timeline: list[dict[str, object]] = field(default_factory=list)
    log_path: Path | None = None
    warnings: list[str] = field(default_factory=list)


class Runner(abc.ABC, Generic[F]):
    """Runs one job to completion across launches, keeping its controller informed; every process it starts
    goes through its ``guard``.

    Args:
        controller: tracks progress and re-plans.
        run_dir: the timeline and everything else the runner writes go here.
        clock: the run's clock, in seconds.
        started_at: the clock's reading when the run started (``None``: now).
        report: receives one line per notable event.
        faults: injected faults, each fired once (or said to be skipped).
    """

    #: How often an interrupted run looks at its launch while it waits for the workers to stop (s).
    poll_s = 0.1

    def __init__(
        self,
        controller: Controller,
        run_dir: Path,
        clock: Clock,
        started_at: float | None = None,
        report: Reporter = no_report,
        faults: Sequence[F] = (),
    ) -> None:
        self.controller = controller
        self.run_dir = run_dir
        self.clock = clock
        self.started_at = clock() if started_at is None else started_at
        self.report = report
        self.timeline: list[dict[str, object]] = []
        self.warnings: list[str] = []
        self.launches = 0
        self.configs: list[str] = []
        self.faults: list[F] = list(faults)
        self.guard = ProcessGuard("run")

    @abc.abstractmethod
    def run(self) -> RunOutcome:
        """Launch, watch, re-plan and relaunch until every iteration is done; on every way out (success, an
        error, Ctrl-C, SIGTERM turned into ``SystemExit``) every process this run started is ended first."""

    @abc.abstractmethod
    def save_state(self) -> None:
        """Rewrite ``run.json`` (atomically) with where the run stands, for ``srifty run --resume``."""

    @abc.abstractmethod
    def launch_running(self) -> bool:
        """Whether a process of the current launch is still running."""

    @abc.abstractmethod
    def request_stop(self, how: str) -> None:
        """Ask the current launch's workers to checkpoint and stop (a script that checks
        ``RunReporter.stop_requested`` does); ``how``: what interrupted the run."""

    @abc.abstractmethod
    def take_progress(self) -> None:
        """Feed the controller the iterations the workers reported since the last look."""

    @abc.abstractmethod
    def last_checkpoint(self) -> int:
        """The iteration of the last checkpoint (0: none), where a resume starts."""

    def interrupted(self, stop: BaseException) -> None:
        """Ctrl-C or a termination signal (``stop``): ask the current launch to checkpoint and stop, wait up to
        :data:`STOP_GRACE_S` for it (a second Ctrl-C stops waiting), log an ``interrupted`` decision, save the
        state and say where the run stopped and how to continue it."""
        how = interruption_name(stop)
        if self.launch_running():
            self.request_stop(how)
            deadline = self.clock() + STOP_GRACE_S
            with contextlib.suppress(KeyboardInterrupt, SystemExit):
                while self.launch_running() and self.clock() < deadline:
                    time.sleep(self.poll_s)
                    self.take_progress()
        self.take_progress()
        step = self.last_checkpoint()
        self.controller.on_interrupt(self.now(), how, step)
        self.event("interrupted", signal=how, checkpoint_step=step)
        self.save_state()
        total = self.controller.spec.iterations
        self.report(stopped_text(how, self.controller.iteration, total, step, self.run_dir))

    def continue_timeline(self, step: int, ended: Sequence[str]) -> None:
        """A resumed run: the timeline an earlier controller saved, then a ``resume`` event (from the checkpoint
        at ``step``, after the old launch's leftover processes ``ended`` were ended)."""
        self.timeline = saved_timeline(self.run_dir)
        self.event("resume", from_iteration=step, ended=list(ended))

    def launched(self, config: Config) -> None:
        """Count a launch on ``config``."""
        self.launches += 1
        self.configs.append(config.notation())

    def now(self) -> float:
        """Seconds since the run started, on the runner's clock."""
        return self.clock() - self.started_at

    def event(self, kind: str, **details: object) -> None:
        """Add ``kind`` to the timeline, at the current time and iteration."""
        self.timeline.append(
            {"time_s": round(self.now(), 3), "iteration": self.controller.iteration, "event": kind, **details}
        )

    def iteration_event(self, iteration: int, loss: object) -> None:
        """Add a finished iteration (and the loss its rank 0 reported) to the timeline."""
        entry = {"time_s": round(self.now(), 3), "iteration": iteration, "event": "iteration", "loss": loss}
        self.timeline.append(entry)

    def fire_due(self, fire: Callable[[F], FireResult], say: Callable[[F], str] | None = None) -> list[F]:
        """Fire every fault whose iteration the run has reached through ``fire`` (the current launch's), logging
        the event it returns (and ``say``'s line to the reporter); a fault that can never fire is skipped, one
        whose target has not started waits. Returns the faults fired."""
        fired = []
        for fault in [f for f in self.faults if self.controller.iteration >= f.iteration]:
            result = fire(fault)
            if result is None:
                continue
            self.faults.remove(fault)
            if isinstance(result, str):
                self.skip_fault(fault, result)
                continue
            self.event(result[0], **result[1])
            if say is not None:
                self.report(say(fault))
            fired.append(fault)
        return fired

    def skip_fault(self, fault: F, why: str) -> None:
        """A fault that will not be injected: a warning for the outcome and the reporter, and a
        ``fault_not_injected`` event."""
        text = f"the {fault.kind} of {fault.target} at iteration {fault.iteration} was not injected: {why}"
        self.warnings.append(text)
        self.event("fault_not_injected", **fault.event_details, detail=why)
        self.report(text)

    def finish(self, config: Config) -> None:
        """The job is done on ``config``: every fault not fired is skipped, and a ``finished`` event logged."""
        for fault in self.faults:
            self.skip_fault(fault, f"the run finished at iteration {self.controller.iteration} first")
        self.event("finished", config=config.notation())

    def end_started(self) -> list[str]:
        """End every process this run started that still runs (an ``ended_processes`` event names them)."""
        ended = self.guard.end()
        if ended:
            self.event("ended_processes", processes=ended)
        return ended

    def say_ended(self, ended: list[str]) -> None:
        """On the way out: the processes ``ended`` (if any) as an ``ended_processes`` event and a report line."""
        if ended:
            self.event("ended_processes", processes=ended)
            self.report(f"ended {len(ended)} process(es) this run started: " + "; ".join(ended))

    def rollback(self, step: int) -> None:
        """Training restarts from the checkpoint at ``step``: the controller's progress rolls back to it."""
        if step < self.controller.iteration:
            self.event("rollback", from_iteration=self.controller.iteration, to_iteration=step)
            self.controller.rollback_to(step, self.now())

    def write_timeline(self) -> None:
        """``timeline.json`` in the run folder (atomically)."""
        atomic_write_text(self.run_dir / "timeline.json", json.dumps(self.timeline, indent=1))

    def outcome(self) -> RunOutcome:
        """What happened so far."""
        c = self.controller
        return RunOutcome(c.iteration, self.launches, self.configs, self.timeline, c.log.path, self.warnings)


def interruption_name(stop: BaseException) -> str:
    """``"Ctrl-C"``, or the signal a ``SystemExit`` of ``signals_as_exit`` stands for (``"SIGTERM"``)."""
    if isinstance(stop, KeyboardInterrupt):
        return "Ctrl-C"
    code = stop.code if isinstance(stop, SystemExit) and isinstance(stop.code, int) else None
    if code is not None and code > 128:
        with contextlib.suppress(ValueError):
            return signal.Signals(code - 128).name
    return "an exit request"


def stopped_text(how: str, iteration: int, total: int, checkpoint_step: int, run_dir: Path) -> str:
    """Where an interrupted run stopped and how to continue it, for people."""
    kept = (
        f"the last checkpoint is at iteration {checkpoint_step}"
        if checkpoint_step
        else "no checkpoint was written yet, so a resume starts from the beginning"
    )
    resume = f"`srifty run --resume {run_dir}`"
    return f"interrupted ({how}) at iteration {iteration} of {total}; {kept}: continue with {resume}"


def saved_timeline(run_dir: Path) -> list[dict[str, object]]:
    """The timeline an earlier controller of this run saved (``[]`` when there is none or it is unreadable)."""
    try:
        old = json.loads((run_dir / "timeline.json").read_text())
    except (OSError, ValueError):
        return []
    return old if isinstance(old, list) else []
