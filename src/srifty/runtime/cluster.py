"""``srifty run --hosts``: one ``torchrun`` per host, watched over the network, re-planned when hosts are lost.

Each launch maps the configuration's groups onto hosts (:func:`~srifty.runtime.hosts.assign_hosts`) and
starts ``torchrun --nnodes N --node-rank i`` on host ``i`` through a launcher (local, netns, ssh), every
node joining the c10d TCP store on the first host (torchrun's static rendezvous, so node ``i`` takes the
ranks that follow node ``i−1``'s and each rank gets the local batch the plan gave its GPU). Workers report
heartbeats, progress and checkpoints to the controller's HTTP endpoint (:mod:`srifty.runtime.endpoint`); no
shared filesystem is assumed except the checkpoint location the user gives (``--ckpt-dir``).

A host is **lost** when its launch exits by a signal or an ssh connection loss, when a worker on it was
killed, or when no report from it arrived for ``heartbeat_timeout_s`` while the others' did (a partition;
its collectives hang). Then every process of the launch is ended on every host, progress rolls back to the
last checkpoint a worker reported, the controller re-plans over the hosts that remain (and the spares in
the host file), and the job relaunches with the new world size, batches and weights. A worker that exits
with an error of its own stops the run (no re-plan can fix a script).

A host is **slow** when the throughput window's optimistic bound says the deadline or budget will be missed
and the workers' own compute times (``compute_s`` in their reports) single it out
(:mod:`srifty.runtime.stragglers`): it is set aside like a lost host and the job re-plans over the rest.
Hosts with ``cpu=`` in the host file run under a CPU quota from their first process (an emulated slower VM),
and ``--fault slow@ITER:HOST`` lowers a host's quota mid-run (:mod:`srifty.runtime.cpu_quota`).

The run's state (``run.json``: hosts, launcher, the owner mark of the processes, the last checkpoint) is
rewritten atomically at every change, so ``srifty run --resume RUN_DIR`` after the controller was killed
(``kill -9``) ends what is left of the old launch on every host, logs ``resume`` after the decisions
already made, and continues from the last checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from srifty.artifacts import atomic_write_text, write_json_artifact
from srifty.errors import SpecError, SriftyError
from srifty.processes import ProcessGuard, descendants, end_processes, is_alive, pids_marked
from srifty.runtime.controller import Controller
from srifty.runtime.cpu_quota import QuotaGroups
from srifty.runtime.decisions import Decision
from srifty.runtime.endpoint import ControllerEndpoint
from srifty.runtime.hosts import Host, assign_hosts
from srifty.runtime.launchers import Launcher
from srifty.runtime.local import (
    ENV_LAUNCH_ID,
    STARTUP_TIMEOUT_S,
    RunOutcome,
    first_error_line,
    rank_layout,
    torchrun_env,
    worker_exit_codes,
)
from srifty.runtime.progress import DEFAULT_WINDOW_S
from srifty.runtime.stragglers import find_stragglers
from srifty.vocab import Config
from srifty.vocab.commands import torchrun_target

RUN_STATE_KIND = "run-state"
RUN_STATE_VERSION = 1
#: After one host's launch fails, how long the others get to fail too before the failure is judged.
SETTLE_S = 3.0
#: Every host's launch runs under :func:`srifty.processes.shield` (a local process of this machine).
SHIELD = (sys.executable, "-m", "srifty.processes", "shield", "--")
#: Exit code of a worker that ended itself because the controller gave up on it (srifty.torch.courier).
FENCED_EXIT = 75

#: What a worker's error says when a peer failed, not its own code.
BROKEN_COLLECTIVE = re.compile(r"Connection (closed|reset) by peer|remote worker crash|gloo/transport", re.IGNORECASE)

FaultKind = Literal["vanish", "partition", "slow"]
#: CPU quota (cores) a slow fault leaves a host with when none is given.
DEFAULT_SLOW_CPU = 0.1
#: Compute-time samples kept per rank (the most recent ones) to judge stragglers.
COMPUTE_SAMPLES = 5


@dataclass(frozen=True)
class HostFault:
    """An injected fault: once the job reaches ``iteration``, ``kind`` hits host ``host`` (its index in the
    host file). ``vanish``: every process on the host is killed (and, on the testbed, its link goes down);
    ``partition``: the host is cut off with its processes alive; ``slow``: the host's CPU quota drops to
    ``cpu`` cores (its processes keep running, slower)."""

    kind: FaultKind
    iteration: int
    host: int
    cpu: float | None = None

    def describe(self) -> str:
        """``slow@70:2:cpu=0.1``, as ``--fault`` takes it."""
        tail = f":cpu={self.cpu:g}" if self.kind == "slow" and self.cpu is not None else ""
        return f"{self.kind}@{self.iteration}:{self.host}{tail}"


#: Injects a fault on a host; gets the kind, the host and the pids of its launch on this machine (for a
#: partition, its workers only).
Injector = Callable[[str, Host, list[int]], None]


def inject_locally(kind: str, host: Host, pids: list[int]) -> None:
    """The local launcher's faults: ``vanish`` SIGKILLs the host's processes; ``partition`` SIGSTOPs its
    workers (an emulation: a stopped worker is as silent as a cut-off one, and its peers' collectives hang;
    its torchrun keeps running, as a partitioned host's would, so that it can still act on signals)."""
    sig = signal.SIGKILL if kind == "vanish" else signal.SIGSTOP
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


@dataclass
class ClusterOptions:
    """How a multi-host run is watched (seconds) and checkpointed."""

    ckpt_dir: str
    ckpt_every: int
    heartbeat_timeout_s: float = 10.0
    hang_timeout_s: float = 120.0
    lease_s: float = 30.0
    max_launches: int = 8
    endpoint_address: str = "127.0.0.1"
    check_timeout_s: float = 15.0
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    #: The throughput window (``K`` in the paper) the controller projects with.
    window_s: float = DEFAULT_WINDOW_S
    #: Names of this machine's environment variables to pass on to every host (ssh starts a clean one).
    forward_env: tuple[str, ...] = ()


@dataclass
class _Launch:
    launch_id: str
    config: Config
    hosts: list[Host]
    procs: list[subprocess.Popen[bytes]]
    logs: list[Path]
    log_offsets: list[int]
    layout: list[tuple[int, int]]
    node_of_rank: list[int] = field(default_factory=list)
    #: Each rank's recent ``(iteration, compute_s)`` reports.
    compute: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    #: Whether a progress line of this launch has arrived yet.
    progressed: bool = False


class ClusterRunner:
    """Runs one job across hosts to completion (see the module docstring).

    Args:
        controller: progress and re-planning (its ``quotas`` count the hosts alive).
        hosts: every host of the host file.
        launcher: how commands reach the hosts.
        train_command: ``python train.py …``.
        run_dir: run state, timeline, per-host logs (on this machine).
        options: timeouts and checkpointing.
        faults: injected faults, each fired once; ``inject`` does it (the launcher's own by default).
        lost: addresses already lost (a resumed run).
        started_unix: when the run started (wall clock; a resumed run keeps the original).
    """

    def __init__(
        self,
        controller: Controller,
        hosts: Sequence[Host],
        launcher: Launcher,
        train_command: Sequence[str],
        run_dir: Path,
        options: ClusterOptions,
        faults: Sequence[HostFault] = (),
        inject: Injector = inject_locally,
        lost: Sequence[str] = (),
        started_unix: float | None = None,
        report: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.controller = controller
        self.hosts = list(hosts)
        self.launcher = launcher
        self.train_command = list(train_command)
        self.run_dir = run_dir
        self.options = options
        self.faults = list(faults)
        self.inject = inject
        self.lost: list[str] = list(lost)
        self.started_unix = time.time() if started_unix is None else started_unix
        self.report = report
        self.guard = ProcessGuard("run")
        self.token = secrets.token_hex(16)
        self.timeline: list[dict[str, object]] = []
        self.warnings: list[str] = []
        self.launches = 0
        self.configs: list[str] = []
        self.checkpoint_step: int | None = None
        self._current: _Launch | None = None
        self.cpu_groups = QuotaGroups(self.guard.variable.removeprefix("SRIFTY_OWNER_"))
        controller.find_slow = self._slow_hosts
        #: What the run was started with (spec, host file, launcher, command, options), kept in run.json.
        self.setup: dict[str, object] = {}

    # ---- bookkeeping -------------------------------------------------------------------------------

    def now(self) -> float:
        """Seconds since the run started (wall clock, so that a resumed run continues the same time axis)."""
        return time.time() - self.started_unix

    def _event(self, kind: str, **details: object) -> None:
        self.timeline.append(
            {"time_s": round(self.now(), 3), "iteration": self.controller.iteration, "event": kind, **details}
        )

    def alive_hosts(self) -> list[Host]:
        """Hosts of the host file neither lost nor set aside as slow, in file order."""
        return [h for h in self.hosts if h.address not in self.lost and h.address not in self.controller.set_aside]

    def save_state(self) -> None:
        """Rewrite ``run.json`` (atomically): what ``--resume`` needs."""
        launch = self._current
        doc = {
            "started_unix": self.started_unix,
            "controller_pid": os.getpid(),
            "mark": self.guard.variable,
            "config": self.controller.config.notation(),
            "markets": {g.instance.name: g.market for g in self.controller.config.groups},
            "zone": self.controller.config.zone,
            "quotas": [[t, m, n] for (t, m), n in sorted((self.controller.quotas or {}).items())],
            "lost": self.lost,
            "slow": self.controller.set_aside,
            "iteration": self.controller.iteration,
            "checkpoint_step": self.checkpoint_step,
            "spent_usd": self.controller.cost_so_far_usd(self.now()),
            "launch_hosts": [h.address for h in launch.hosts] if launch else [],
            "launches": self.launches,
        }
        write_json_artifact(self.run_dir / "run.json", RUN_STATE_KIND, RUN_STATE_VERSION, {**self.setup, **doc})
        self._write_timeline()  # a killed controller leaves its timeline up to here

    # ---- launching ---------------------------------------------------------------------------------

    def _launch(self, endpoint: ControllerEndpoint) -> _Launch:
        config = self.controller.config
        try:
            hosts = assign_hosts(config, self.alive_hosts())
        except SpecError as err:
            raise SriftyError(f"cannot continue: {err}") from None
        layout = rank_layout(config)
        launch_id = uuid.uuid4().hex[:12]
        endpoint.start_launch(launch_id)
        port = 20000 + secrets.randbelow(20000)
        env = {
            ENV_LAUNCH_ID: launch_id,
            "SRIFTY_RANK_BATCHES": ",".join(str(b) for _, b in layout),
            "SRIFTY_GLOBAL_BATCH": str(config.global_batch),
            **config.sharding_env(),
            "SRIFTY_ITERATIONS": str(self.controller.spec.iterations),
            "SRIFTY_CKPT_DIR": self.options.ckpt_dir,
            "SRIFTY_CKPT_EVERY": str(self.options.ckpt_every),
            "SRIFTY_CONTROLLER_URL": endpoint.url,
            "SRIFTY_CONTROLLER_TOKEN": self.token,
            "SRIFTY_LEASE_S": f"{self.options.lease_s:g}",
            "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
            **torchrun_env(),
            **{name: os.environ[name] for name in self.options.forward_env if name in os.environ},
            **self.launcher.env,
            self.guard.variable: "1",  # the mark travels to remote hosts too (ssh), so they can be ended there
        }
        first = {} if self.launches else {"target_iterations": self.controller.spec.iterations}
        self._event("launch", config=config.notation(), hosts=[h.address for h in hosts], **first)
        procs, logs, offsets, node_of_rank = [], [], [], []
        for node, host in enumerate(hosts):
            command = [
                self.launcher.python,
                "-m", "torch.distributed.run",
                "--nnodes", str(len(hosts)), "--node-rank", str(node), "--nproc-per-node", str(host.gpus),
                "--master-addr", hosts[0].address, "--master-port", str(port), "--max-restarts", "0",
                *torchrun_target(self.train_command),
            ]  # fmt: skip
            argv, extra = self.launcher.argv(host, command, env)
            argv = [*SHIELD, *argv]  # one ending signal for torchrun, however many threads this process has
            log = self.run_dir / "hosts" / f"{host.address}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            offsets.append(log.stat().st_size if log.exists() else 0)
            join = None
            if host.cpu is not None:  # an emulated slower VM: every process of its launch under the quota
                self.cpu_groups.cap(host.address, host.cpu)
                join = self.cpu_groups.joiner(host.address)
            with open(log, "ab") as handle:
                handle.write(f"--- launch {launch_id} node {node}: {config.notation()}\n".encode())
                handle.flush()
                procs.append(
                    self.guard.popen(
                        argv,
                        env={**os.environ, **extra},
                        preexec_fn=join,
                        stdin=subprocess.DEVNULL,
                        stdout=handle,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
            logs.append(log)
            node_of_rank += [node] * host.gpus
        self.launches += 1
        self.configs.append(config.notation())
        self._current = _Launch(launch_id, config, hosts, procs, logs, offsets, layout, node_of_rank)
        self.save_state()
        return self._current

    def _end_launch(self, launch: _Launch, reachable: Sequence[Host] = ()) -> list[str]:
        """End every process of ``launch`` on every host (remote ones through the launcher); a lost host is
        skipped unless it is in ``reachable`` (lost to a hang: there, but its rank makes no progress)."""
        medians = self._compute_medians(launch)
        if medians:
            self._event("compute", median_s=medians)
        for host in launch.hosts:
            if host.address in self.lost and host not in reachable:
                continue  # unreachable: its workers fence themselves when their lease runs out
            why = self.launcher.end_remote(host, self.guard.variable, self.options.check_timeout_s)
            if why:
                self.warnings.append(f"could not end the processes on {host.address}: {why}")
        self.cpu_groups.lift_all()  # a throttled process would take seconds to act on SIGTERM
        ended = self.guard.end()
        if ended:
            self._event("ended_processes", processes=ended)
        return ended

    # ---- watching ----------------------------------------------------------------------------------

    def _host_pids(self, launch: _Launch, node: int) -> list[int]:
        proc = launch.procs[node]
        return ([proc.pid] if proc.poll() is None else []) + descendants(proc.pid)

    def _worker_pids(self, launch: _Launch, node: int) -> list[int]:
        """The host's workers: what runs below its launch's torchrun (the shield's child)."""
        below = descendants(launch.procs[node].pid)
        return descendants(below[0]) if below else []

    def _fire_faults(self, launch: _Launch, endpoint: ControllerEndpoint) -> None:
        beats = endpoint.beats()
        for fault in list(self.faults):
            if self.controller.iteration < fault.iteration:
                continue
            host = self.hosts[fault.host]
            if host not in launch.hosts:
                self.faults.remove(fault)
                self._skip(fault, f"host {host.address} is not in the current launch")
                continue
            node = launch.hosts.index(host)
            ranks = [r for r, n in enumerate(launch.node_of_rank) if n == node]
            if not all(r in beats for r in ranks):
                continue  # wait until its workers are up
            self.faults.remove(fault)
            pids = self._host_pids(launch, node)
            if fault.kind == "slow":
                cores = fault.cpu if fault.cpu is not None else DEFAULT_SLOW_CPU
                self.cpu_groups.cap(host.address, cores)
                self.cpu_groups.add(host.address, pids)
                self._event("inject_slow", host=host.address, cpu=cores)
            else:
                if fault.kind == "partition":  # the workers only: a partitioned host's torchrun is alive
                    pids = self._worker_pids(launch, node)
                self.inject(fault.kind, host, pids)
                self._event(f"inject_{fault.kind}", host=host.address)
            self.report(f"injected {fault.describe()} on host {host.address} at iteration {self.controller.iteration}")

    def _skip(self, fault: HostFault, why: str) -> None:
        text = f"the {fault.kind} of host #{fault.host} at iteration {fault.iteration} was not injected: {why}"
        self.warnings.append(text)
        self._event("fault_not_injected", detail=why)
        self.report(text)

    def _sample_compute(self, launch: _Launch, endpoint: ControllerEndpoint) -> None:
        """Keep each rank's latest compute-time reports (``compute_s`` in its heartbeat)."""
        for rank, beat in endpoint.beats().items():
            value, iteration = beat.record.get("compute_s"), beat.record.get("compute_iteration")
            if not isinstance(value, int | float) or not isinstance(iteration, int) or rank >= len(launch.layout):
                continue
            samples = launch.compute.setdefault(rank, [])
            if not samples or samples[-1][0] != iteration:
                samples.append((iteration, float(value)))
                del samples[:-COMPUTE_SAMPLES]

    def _record_quotas(self, launch: _Launch) -> None:
        """Log, from the kernel's own list, how many of each quota'd host's processes its group holds."""
        for node, host in enumerate(launch.hosts):
            if host.address in self.cpu_groups.created:
                pids = set(self._host_pids(launch, node))
                held = len(pids & self.cpu_groups.members(host.address))
                self._event("cpu_quota", host=host.address, processes=len(pids), in_quota=held)

    def _compute_by_host(self, launch: _Launch) -> dict[str, list[float]]:
        by_host: dict[str, list[float]] = {}
        for rank, samples in launch.compute.items():
            host = launch.hosts[launch.node_of_rank[rank]]
            by_host.setdefault(host.address, []).extend(v for _, v in samples)
        return by_host

    def _compute_medians(self, launch: _Launch) -> dict[str, float]:
        """Each host's median reported compute time (seconds) over its recent samples."""
        return {h: round(statistics.median(v), 6) for h, v in self._compute_by_host(launch).items() if v}

    def _slow_hosts(self) -> list[tuple[str, str, str, str]]:
        """Hosts of the current launch whose workers' compute is slow next to the others' (the controller
        asks before a deadline or budget re-plan)."""
        launch = self._current
        if launch is None:
            return []
        found = find_stragglers(self._compute_by_host(launch))
        slow = []
        for straggler in found:
            host = next(h for h in launch.hosts if h.address == straggler.host)
            slow.append((host.address, host.instance.name, host.market, f"{host.address}: {straggler.describe()}"))
            self._event("slow_host", host=host.address, ratio=round(straggler.ratio, 2))
        return slow

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
                    self.controller.tracker.reset_window(iteration, self.now())
                    self._record_quotas(launch)  # every worker is up by now
                self.timeline.append(
                    {
                        "time_s": round(self.now(), 3),
                        "iteration": iteration,
                        "event": "iteration",
                        "loss": line.get("loss"),
                    }
                )
                if decision is not None and decision.action in ("keep", "no_alternative"):
                    self._event(decision.action, reason=decision.reason, config=decision.config)
                if decision is not None and launch is not None and self._must_relaunch(launch):
                    switch = decision
        step = endpoint.checkpoint_step
        if step is not None and step != self.checkpoint_step:
            self.checkpoint_step = step
            self.save_state()
        return switch

    def _must_relaunch(self, launch: _Launch) -> bool:
        """Whether the controller moved the job off ``launch``: another configuration, or a host set aside."""
        if self.controller.config.tagged() != launch.config.tagged():  # markets too: a fall back to on-demand
            return True
        return any(h.address in self.controller.set_aside for h in launch.hosts)

    def _silent_nodes(self, launch: _Launch, endpoint: ControllerEndpoint) -> list[int]:
        """Nodes with a rank whose reports stopped arriving while another node's still arrive."""
        beats = endpoint.beats()
        now = time.monotonic()
        fresh = {n for r, n in enumerate(launch.node_of_rank) if r in beats and now - beats[r].arrived_s < 2.0}
        silent = {
            n
            for r, n in enumerate(launch.node_of_rank)
            if r in beats and now - beats[r].arrived_s > self.options.heartbeat_timeout_s
        }
        return sorted(silent - fresh) if fresh or len(launch.hosts) == 1 else []

    def _watch(self, launch: _Launch, endpoint: ControllerEndpoint) -> tuple[str, list[tuple[Host, str]]]:
        """Watch ``launch`` until it ends; returns ``("done"|"lost"|"switch"|"hang", lost hosts and why)``."""
        started_s = time.monotonic()
        last_progress_s = time.monotonic()
        up = False
        while True:
            time.sleep(0.1)
            before = self.controller.iteration
            self._sample_compute(launch, endpoint)
            if self._progress(endpoint) is not None:
                return "switch", []
            if self.controller.iteration > before:
                last_progress_s = time.monotonic()
            self._fire_faults(launch, endpoint)
            if self.controller.iteration >= self.controller.spec.iterations:
                self.cpu_groups.lift_all()  # training is done: an emulated slow VM need not also exit slowly
            codes = [p.poll() for p in launch.procs]
            if all(c == 0 for c in codes):
                self._progress(endpoint)
                return "done", []
            if any(c not in (None, 0) for c in codes):
                return "lost", self._judge_failure(launch, endpoint)
            silent = self._silent_nodes(launch, endpoint)
            if silent:
                why = f"no heartbeat for {self.options.heartbeat_timeout_s:g} s while the other hosts' arrive"
                self._event("heartbeat_timeout", hosts=[launch.hosts[n].address for n in silent])
                return "lost", [(launch.hosts[n], why) for n in silent]
            beats = endpoint.beats()
            if len(beats) < len(launch.layout):
                if time.monotonic() - started_s > self.options.startup_timeout_s:
                    missing = sorted(
                        {launch.hosts[n].address for r, n in enumerate(launch.node_of_rank) if r not in beats}
                    )
                    raise SriftyError(
                        f"the workers on {', '.join(missing)} did not start within "
                        f"{self.options.startup_timeout_s:.0f} s; see their logs in {self.run_dir / 'hosts'}"
                    )
                continue
            if not up:
                up, last_progress_s = True, time.monotonic()
            if time.monotonic() - last_progress_s > self.options.hang_timeout_s:
                slowest = min(beats, key=lambda r: int(beats[r].record.get("iteration", 0)))
                host = launch.hosts[launch.node_of_rank[slowest]]
                why = f"no progress for {self.options.hang_timeout_s:g} s; rank {slowest} is the furthest behind"
                self._event("hang_detected", host=host.address, detail=why)
                return "hang", [(host, why)]

    def _log_text(self, launch: _Launch, node: int) -> str:
        with open(launch.logs[node], "rb") as handle:
            handle.seek(launch.log_offsets[node])
            return handle.read().decode("utf-8", errors="replace")

    def _judge_failure(self, launch: _Launch, endpoint: ControllerEndpoint) -> list[tuple[Host, str]]:
        """Which hosts a failed launch lost; raises when it is the training script's own error."""
        deadline = time.monotonic() + SETTLE_S

        def gone() -> bool:
            return any(self.launcher.host_gone(c) for c in (p.poll() for p in launch.procs) if c is not None)

        while time.monotonic() < deadline and not gone() and any(p.poll() is None for p in launch.procs):
            time.sleep(0.1)
            self._progress(endpoint)
        lost = []
        for node, proc in enumerate(launch.procs):
            code = proc.poll()
            if code is not None and self.launcher.host_gone(code):
                lost.append((launch.hosts[node], f"its launch ended with {_code_text(code)}"))
        if lost:
            return lost
        for node in range(len(launch.hosts)):
            codes = worker_exit_codes(self._log_text(launch, node))
            killed = [(r, c) for r, c in codes if c < 0]
            if killed:
                lost.append((launch.hosts[node], f"rank {killed[0][0]} was killed by signal {-killed[0][1]}"))
        if lost:
            return lost
        silent = self._silent_nodes(launch, endpoint)
        if silent:
            return [(launch.hosts[n], "its heartbeats stopped first") for n in silent]
        errors = []
        for node in range(len(launch.hosts)):
            text = self._log_text(launch, node)
            codes = [(r, c) for r, c in worker_exit_codes(text) if c not in (0, FENCED_EXIT)]
            if codes:
                errors.append((node, *codes[-1], first_error_line(text)))
        if errors:
            # a peer's failure breaks everyone's collectives: the root cause is the error that is not that
            node, rank, code, line = next((e for e in errors if not BROKEN_COLLECTIVE.search(e[3])), errors[0])
            raise SriftyError(
                f"the training command failed on host {launch.hosts[node].address} (rank {rank}, exit code "
                f"{code}), which is its own error, not a lost host: {line}. Fix the script (the output is in "
                f"{launch.logs[node]})."
            )
        failed = [n for n, p in enumerate(launch.procs) if p.poll() not in (None, 0)]
        node = failed[0]
        raise SriftyError(
            f"torchrun on host {launch.hosts[node].address} ended with {_code_text(launch.procs[node].poll() or 0)} "
            f"before training finished; see {launch.logs[node]}"
        )

    # ---- the run -----------------------------------------------------------------------------------

    def run(self) -> RunOutcome:
        """Launch, watch, re-plan and relaunch until every iteration is done; on every way out, end every
        process this run started on every host."""
        endpoint = ControllerEndpoint(self.options.endpoint_address, self.token)
        endpoint.set_checkpoint_step(self.checkpoint_step)
        try:
            return self._run(endpoint)
        finally:
            ended = self._end_launch(self._current) if self._current is not None else []
            endpoint.close()
            ended += self.guard.end()
            if ended:
                self._event("ended_processes", processes=ended)
                self.report(f"ended {len(ended)} process(es) this run started: " + "; ".join(ended))
            for left in self.cpu_groups.remove_all():
                self.warnings.append(f"could not remove a CPU-quota group: {left}")
            self._write_timeline()

    def _write_timeline(self) -> None:
        path = self.run_dir / "timeline.json"
        atomic_write_text(path, json.dumps(self.timeline, indent=1))

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
                self._event("host_lost", host=host.address, detail=why)
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
            self._rollback()
            if outcome == "switch":
                self._event("switch", config=self.controller.config.notation())
                continue
            decision = self.controller.on_hosts_lost(
                [(h.address, h.instance.name, h.market) for h, _ in lost], self.now(), "; ".join(w for _, w in lost)
            )
            self._event(decision.action, reason=decision.reason, config=decision.config)
            self.save_state()
        for fault in self.faults:
            self._skip(fault, f"the run finished at iteration {self.controller.iteration} first")
        self._event("finished", config=self.controller.config.notation())
        self.save_state()
        return RunOutcome(
            self.controller.iteration,
            self.launches,
            self.configs,
            self.timeline,
            self.controller.log.path,
            self.warnings,
        )

    def _rollback(self) -> None:
        step = self.checkpoint_step or 0
        if step < self.controller.iteration:
            self._event("rollback", from_iteration=self.controller.iteration, to_iteration=step)
            self.controller.iteration = step
            self.controller.tracker.reset_window(step, self.now())


def _code_text(code: int) -> str:
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"exit code {code}"


def end_leftovers(mark: str) -> list[int]:
    """End this machine's processes still carrying a dead controller's ``mark``; returns their pids."""
    pids = [p for p in pids_marked(mark) if is_alive(p)]
    return end_processes(pids)
