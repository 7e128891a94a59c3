"""``srifty run --hosts``: one ``torchrun`` per host, watched over the network, re-planned when hosts are lost.

Each launch maps the configuration's groups onto hosts (:func:`~srifty.runtime.hosts.assign_hosts`) and
starts ``torchrun --nnodes N --node-rank i`` on host ``i`` through a launcher (local, netns, ssh), every
node joining the c10d TCP store on the first host (:mod:`srifty.runtime.cluster_launch`). Workers report
heartbeats, progress and checkpoints to the controller's HTTP endpoint (:mod:`srifty.runtime.endpoint`); no
shared filesystem is assumed except the checkpoint location the user gives (``--ckpt-dir``).

When a host is **lost** (:mod:`srifty.runtime.host_losses`: its launch killed, a worker on it killed, its
reports silent while the others' arrive, or a hang), every process of the launch is ended on every host,
progress rolls back to the last checkpoint a worker reported, the controller re-plans over the hosts that
remain (and the spares in the host file), and the job relaunches with the new world size, batches and weights.

A host is **slow** when the throughput window's optimistic bound says the deadline or budget will be missed
and the workers' own compute times single it out (:mod:`srifty.runtime.stragglers`): it is set aside like a
lost host. ``cpu=`` hosts and ``--fault slow@ITER:HOST`` run under CPU quotas (:mod:`srifty.runtime.cpu_quota`).

The run's state (:class:`~srifty.runtime.state.RunState`, ``run.json``) is rewritten atomically at every
change; a runner constructed from a saved state continues that run from its last checkpoint (``srifty run
--resume``, after the controller was killed or interrupted: :mod:`srifty.runtime.cluster_controller`).
"""

from __future__ import annotations

import functools
import os
import secrets
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from srifty.errors import SpecError, SriftyError
from srifty.runtime.cluster_controller import cluster_controller
from srifty.runtime.cluster_launch import Launch, host_env
from srifty.runtime.controller import Replanner
from srifty.runtime.cpu_quota import QuotaGroups
from srifty.runtime.decisions import Decision
from srifty.runtime.endpoint import Beat, ControllerEndpoint
from srifty.runtime.faults import FireResult, HostFault, Injector, inject_locally
from srifty.runtime.host_losses import hung_host, settled_losses, silent_hosts
from srifty.runtime.hosts import Host, assign_hosts
from srifty.runtime.launchers import Launcher
from srifty.runtime.runner import Clock, Reporter, Runner, RunOutcome, no_report
from srifty.runtime.state import RunState
from srifty.spec import JobSpec
from srifty.vocab import SpotPolicy


class ClusterRunner(Runner[HostFault]):
    """Runs one job across hosts to completion (see the module docstring).

    Args:
        state: the run's state: a fresh one (:meth:`RunState.start`) or, to resume, the one last saved.
        spec: the job over the hosts (its candidates are the host file's VMs).
        hosts: every host of the host file.
        launcher: how commands reach the hosts.
        run_dir: run state, timeline, per-host logs, decision log (on this machine).
        replan: plans what is left of the job.
        faults: injected faults, each fired once; ``inject`` does it (the launcher's own by default).
        clock: wall-clock seconds (``run.json`` keeps the start on it, so a resumed run continues its time axis).
        resumed_after: to resume, the old launch's leftover processes that were ended (``None``: a new run).
        policy: the spot policy the controller asks on spot losses and progress checks (``None``: none).
    """

    poll_s = 0.2

    def __init__(
        self,
        state: RunState,
        spec: JobSpec,
        hosts: Sequence[Host],
        launcher: Launcher,
        run_dir: Path,
        replan: Replanner,
        faults: Sequence[HostFault] = (),
        inject: Injector = inject_locally,
        clock: Clock = time.time,
        report: Reporter = no_report,
        resumed_after: Sequence[str] | None = None,
        policy: SpotPolicy | None = None,
    ) -> None:
        self.state = state
        self.options = state.setup.options
        now = clock() - state.started_unix
        controller = cluster_controller(state, spec, replan, run_dir, now, self._slow_hosts, resumed_after, policy)
        super().__init__(controller, run_dir, clock, state.started_unix, report, faults)
        self.hosts = list(hosts)
        self.launcher = launcher
        self.inject = inject
        self.lost: list[str] = list(state.lost)
        self.launches = state.launches
        self.checkpoint_step = state.checkpoint_step
        self.token = secrets.token_hex(16)
        self._current: Launch | None = None
        self._endpoint: ControllerEndpoint | None = None
        self.cpu_groups = QuotaGroups(self.guard.variable.removeprefix("SRIFTY_OWNER_"))
        if resumed_after is not None:
            self.continue_timeline(state.checkpoint_step or 0, resumed_after)

    def alive_hosts(self) -> list[Host]:
        """Hosts of the host file neither lost nor set aside as slow, in file order."""
        aside = self.controller.set_aside_hosts
        return [h for h in self.hosts if h.address not in self.lost and h.address not in aside]

    def save_state(self, finished: bool = False) -> None:
        """Rewrite ``run.json`` (atomically) with where the run stands, and the timeline up to here."""
        c = self.controller
        self.state = self.state.advance(
            c.config, c.quotas, controller_pid=os.getpid(), mark=self.guard.variable, lost=tuple(self.lost),
            slow=c.set_aside_hosts, iteration=c.iteration, checkpoint_step=self.checkpoint_step,
            spent_usd=c.cost_so_far_usd(self.now()), launches=self.launches, finished=finished,
            launch_hosts=tuple(h.address for h in self._current.hosts) if self._current else (),
        )  # fmt: skip
        self.state.save(self.run_dir)
        self.write_timeline()  # a killed controller leaves its timeline up to here

    def _launch(self, endpoint: ControllerEndpoint) -> Launch:
        config = self.controller.config
        try:
            hosts = assign_hosts(config, self.alive_hosts())
        except SpecError as err:
            raise SriftyError(f"cannot continue: {err}") from None
        launch_id = uuid.uuid4().hex[:12]
        endpoint.start_launch(launch_id)
        env = host_env(
            config, self.controller.spec.iterations, self.options, launch_id, (endpoint.url, self.token),
            self.launcher.env, self.guard.variable,
        )  # fmt: skip
        first = {} if self.launches else {"target_iterations": self.controller.spec.iterations}
        self.event("launch", config=config.notation(), hosts=[h.address for h in hosts], **first)
        setup = self.state.setup
        self._current = Launch.start(
            launch_id, config, hosts, self.launcher, self.guard, self.cpu_groups, env, setup.train_command,
            self.run_dir, setup.cwd,
        )  # fmt: skip
        self.launched(config)
        self.save_state()
        return self._current

    def _end_launch(self, launch: Launch, reachable: Sequence[Host] = ()) -> list[str]:
        """End every process of ``launch`` on every host (remote ones through the launcher); a lost host is
        skipped (its workers fence themselves when their lease runs out) unless it is in ``reachable`` (lost to a
        hang: there, but its rank makes no progress)."""
        if medians := launch.samples.medians():
            self.event("compute", median_s=medians)
        skip = [a for a in self.lost if a not in {h.address for h in reachable}]
        self.warnings += launch.end_remote(self.launcher, self.guard.variable, self.options.check_timeout_s, skip)
        self.cpu_groups.lift_all()  # a throttled process would take seconds to act on SIGTERM
        return self.end_started()

    def _slow_hosts(self) -> list[tuple[str, str, str, str]]:
        """Hosts of the current launch whose workers' compute is slow next to the others' (the controller
        asks before a deadline or budget re-plan)."""
        slow = self._current.slow_hosts() if self._current is not None else []
        for host, straggler in slow:
            self.event("slow_host", host=host.address, ratio=round(straggler.ratio, 2))
        return [(h.address, h.instance.name, h.market, f"{h.address}: {s.describe()}") for h, s in slow]

    def _progress(self, endpoint: ControllerEndpoint) -> Decision | None:
        switch = None
        launch = self._current
        for line in endpoint.take_progress():
            iteration = int(line["iteration"])
            if iteration > self.controller.iteration:
                decision = self.controller.on_iteration(iteration, self.now())
                if launch is not None and not launch.progressed:
                    # the first iteration of a launch includes torchrun's start-up: not a throughput sample
                    launch.progressed = True
                    self.controller.restart_window(self.now())
                    for address, processes, held in launch.quota_holds(self.cpu_groups):  # every worker is up
                        self.event("cpu_quota", host=address, processes=processes, in_quota=held)
                self.iteration_event(iteration, line.get("loss"))
                if decision is not None and decision.action in ("keep", "no_alternative"):
                    self.event(decision.action, reason=decision.reason, config=decision.config)
                if decision is not None and launch is not None and launch.superseded(self.controller):
                    switch = decision
        step = endpoint.checkpoint_step
        if step is not None and step != self.checkpoint_step:
            self.checkpoint_step = step
            self.save_state()
        return switch

    def _fire_faults(self, launch: Launch, beats: Mapping[int, Beat]) -> None:
        def fire(fault: HostFault) -> FireResult:
            return launch.fire(fault, self.hosts[fault.host], beats, self.cpu_groups, self.inject)

        def say(fault: HostFault) -> str:
            where = self.hosts[fault.host].address
            return f"injected {fault.describe()} on host {where} at iteration {self.controller.iteration}"

        self.fire_due(fire, say)

    def _watch(self, launch: Launch, endpoint: ControllerEndpoint) -> tuple[str, list[tuple[Host, str]]]:
        """Watch ``launch`` until it ends; returns ``("done"|"lost"|"switch"|"hang", lost hosts and why)``."""
        started_s = last_progress_s = self.now()
        up = False

        while True:
            time.sleep(0.1)
            before = self.controller.iteration
            for rank, beat in endpoint.beats().items():
                launch.samples.add(rank, beat.record)
            if self._progress(endpoint) is not None:
                return "switch", []
            if self.controller.iteration > before:
                last_progress_s = self.now()
            self._fire_faults(launch, endpoint.beats())
            if self.controller.iteration >= self.controller.spec.iterations:
                self.cpu_groups.lift_all()  # training is done: an emulated slow VM need not also exit slowly
            codes = launch.codes()
            if all(c == 0 for c in codes):
                self._progress(endpoint)
                return "done", []
            if any(c not in (None, 0) for c in codes):
                progress, timeout_s = functools.partial(self._progress, endpoint), self.options.heartbeat_timeout_s
                return "lost", settled_losses(launch, self.launcher, endpoint.beats, timeout_s, self.now, progress)
            silent = silent_hosts(launch, endpoint.beats(), self.options.heartbeat_timeout_s)
            if silent:
                self.event("heartbeat_timeout", hosts=[h.address for h, _ in silent])
                return "lost", silent
            beats = endpoint.beats()
            if len(beats) < len(launch.layout):
                launch.require_started(beats, self.now() - started_s, self.options.startup_timeout_s, self.run_dir)
                continue
            if not up:
                up, last_progress_s = True, self.now()
            if self.now() - last_progress_s > self.options.hang_timeout_s:
                if self.controller.iteration >= self.controller.spec.iterations:
                    return "done", []  # every iteration is done: a launch slow to exit has not hung
                host, why = hung_host(launch, beats, self.options.hang_timeout_s)
                self.event("hang_detected", host=host.address, detail=why)
                return "hang", [(host, why)]

    def launch_running(self) -> bool:
        return self._current is not None and self._current.running()

    def request_stop(self, how: str) -> None:
        if self._endpoint is not None:
            self._endpoint.request_stop()

    def take_progress(self) -> None:
        if self._endpoint is not None:
            self._progress(self._endpoint)

    def last_checkpoint(self) -> int:
        heard = self._endpoint.checkpoint_step if self._endpoint is not None else None
        return max(self.checkpoint_step or 0, heard or 0)

    def run(self) -> RunOutcome:
        endpoint = self._endpoint = ControllerEndpoint(self.options.endpoint_address, self.token)
        endpoint.set_checkpoint_step(self.checkpoint_step)
        try:
            return self._run(endpoint)
        except (KeyboardInterrupt, SystemExit) as stop:
            self.interrupted(stop)
            raise
        finally:
            ended = self._end_launch(self._current) if self._current is not None else []
            endpoint.close()
            self.say_ended(ended + self.guard.end())
            self.warnings += [f"could not remove a CPU-quota group: {g}" for g in self.cpu_groups.remove_all()]
            self.write_timeline()

    def _run(self, endpoint: ControllerEndpoint) -> RunOutcome:
        while self.controller.iteration < self.controller.spec.iterations:
            if self.launches >= self.options.max_launches:
                raise SriftyError(f"gave up after {self.launches} launches; see the logs in {self.run_dir / 'hosts'}")
            launch = self._launch(endpoint)
            outcome, lost = self._watch(launch, endpoint)
            if self.controller.iteration >= self.controller.spec.iterations:
                outcome, lost = "done", []  # a host lost after the last iteration changes nothing
            for host, why in lost:  # before ending the launch: a lost host is not waited for
                self.lost.append(host.address)
                self.event("host_lost", host=host.address, detail=why)
                self.report(f"lost host {host.describe()}: {why}")
            self._end_launch(launch, [h for h, _ in lost] if outcome == "hang" else [])
            self._current = None
            self._progress(endpoint)
            if outcome == "done":
                if self.controller.iteration >= self.controller.spec.iterations:
                    break
                raise SriftyError(
                    f"every host's torchrun exited normally after {self.controller.iteration} of "
                    f"{self.controller.spec.iterations} iterations; the training command stopped early (see "
                    f"{self.run_dir / 'hosts'})"
                )
            self.rollback(self.checkpoint_step or 0)
            if outcome == "switch":
                self.event("switch", config=self.controller.config.notation())
                continue
            decision = self.controller.on_hosts_lost(
                [(h.address, h.instance.name, h.market) for h, _ in lost], self.now(), "; ".join(w for _, w in lost)
            )
            self.event(decision.action, reason=decision.reason, config=decision.config)
            self.save_state()
        self.finish(self.controller.config)
        self.save_state(finished=True)
        return self.outcome()
