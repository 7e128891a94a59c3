"""One launch of a multi-host run: a ``torchrun --nnodes N --node-rank i`` per host, and what can be read
from it (its processes, its logs, its workers' reports) to judge how it ended.

:class:`Launch` holds what a launch started and answers questions about it; starting and ending launches is
the :class:`~srifty.runtime.cluster.ClusterRunner`'s.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from srifty.errors import SriftyError
from srifty.processes import ProcessGuard, descendants
from srifty.runtime.controller import Controller
from srifty.runtime.cpu_quota import QuotaGroups
from srifty.runtime.endpoint import Beat
from srifty.runtime.faults import FireResult, HostFault, Injector
from srifty.runtime.hosts import Host
from srifty.runtime.launchers import Launcher
from srifty.runtime.state import ClusterOptions
from srifty.runtime.stragglers import ComputeSamples, Straggler
from srifty.runtime.torchrun import (
    host_command,
    launch_env,
    log_size,
    rank_layout,
    read_log_from,
    rendezvous_port,
)
from srifty.vocab import Config

#: Every host's launch runs under :func:`srifty.processes.shield` (a local process of this machine).
SHIELD = (sys.executable, "-m", "srifty.processes", "shield", "--")
#: A report younger than this (s) shows its host is alive.
FRESH_S = 2.0


def host_env(
    config: Config,
    iterations: int,
    options: ClusterOptions,
    launch_id: str,
    controller: tuple[str, str],
    launcher_env: Mapping[str, str],
    mark: str,
) -> dict[str, str]:
    """What every worker of a multi-host launch reads: what every launch's do
    (:func:`~srifty.runtime.torchrun.launch_env`), the controller's ``(URL, token)``, the lease (s) after which
    a worker cut off from it ends itself, unbuffered output, the variables the run forwards from this machine
    (``options.forward_env``, where set here), the launcher's own, and the run's ``mark`` (it travels to remote
    hosts too (ssh), so their processes can be ended there)."""
    return {
        **launch_env(config, iterations, options.ckpt_dir, options.ckpt_every, launch_id),
        "SRIFTY_CONTROLLER_URL": controller[0],
        "SRIFTY_CONTROLLER_TOKEN": controller[1],
        "SRIFTY_LEASE_S": f"{options.lease_s:g}",
        "PYTHONUNBUFFERED": "1",
        **{name: os.environ[name] for name in options.forward_env if name in os.environ},
        **launcher_env,
        mark: "1",
    }


@dataclass
class Launch:
    """What one launch started: its id, configuration, hosts (node ``i`` on ``hosts[i]``), each host's
    shielded torchrun and log (from ``log_offsets[i]`` on), the rank layout, and its workers' compute times."""

    launch_id: str
    config: Config
    hosts: list[Host]
    procs: list[subprocess.Popen[bytes]]
    logs: list[Path]
    log_offsets: list[int]
    layout: list[tuple[int, int]]
    node_of_rank: list[int] = field(default_factory=list)
    samples: ComputeSamples = field(default_factory=lambda: ComputeSamples(()))
    #: Whether a progress line of this launch has arrived yet.
    progressed: bool = False

    @classmethod
    def start(
        cls,
        launch_id: str,
        config: Config,
        hosts: list[Host],
        launcher: Launcher,
        guard: ProcessGuard,
        quotas: QuotaGroups,
        env: Mapping[str, str],
        train_command: Sequence[str],
        run_dir: Path,
        cwd: str,
    ) -> Launch:
        """Start ``torchrun`` on every host of ``hosts`` through ``launcher`` (each under the shield, which passes
        on one ending signal however many threads this process has; in ``cwd``; under its CPU quota when the
        host file gives one), the workers getting ``env``; each host's output is appended to its log in
        ``RUN_DIR/hosts``."""
        port = rendezvous_port(secrets.randbelow(1 << 30))
        procs, logs, offsets, node_of_rank = [], [], [], []
        for node, host in enumerate(hosts):
            command = host_command(launcher.python, hosts, node, port, train_command)
            argv, extra = launcher.argv(host, command, env)
            log = run_dir / "hosts" / f"{host.address}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            offsets.append(log_size(log))
            join = None
            if host.cpu is not None:  # an emulated slower VM: every process of its launch under the quota
                quotas.cap(host.address, host.cpu)
                join = quotas.joiner(host.address)
            with open(log, "ab") as handle:
                handle.write(f"--- launch {launch_id} node {node}: {config.notation()}\n".encode())
                handle.flush()
                proc = guard.popen(
                    [*SHIELD, *argv], env={**os.environ, **extra}, preexec_fn=join, cwd=cwd,
                    stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
            procs.append(proc)
            logs.append(log)
            node_of_rank += [node] * host.gpus
        samples = ComputeSamples([hosts[n].address for n in node_of_rank])
        return cls(launch_id, config, hosts, procs, logs, offsets, rank_layout(config), node_of_rank, samples)

    def superseded(self, controller: Controller) -> bool:
        """Whether the controller has moved the job off this launch: to another configuration (markets too: a
        fall back to on-demand), or off a host it set aside."""
        if controller.config.tagged() != self.config.tagged():
            return True
        return any(h.address in controller.set_aside_hosts for h in self.hosts)

    def codes(self) -> list[int | None]:
        """Each host's launch exit code (``None``: still running)."""
        return [p.poll() for p in self.procs]

    def running(self) -> bool:
        """Whether any host's launch is still running."""
        return any(code is None for code in self.codes())

    def end_remote(self, launcher: Launcher, mark: str, timeout_s: float, skip: Sequence[str]) -> list[str]:
        """End the processes carrying ``mark`` on every host of the launch but those in ``skip`` (addresses);
        returns why it could not on some."""
        failures = []
        for host in self.hosts:
            if host.address not in skip:
                why = launcher.end_remote(host, mark, timeout_s)
                if why:
                    failures.append(f"could not end the processes on {host.address}: {why}")
        return failures

    def slow_hosts(self) -> list[tuple[Host, Straggler]]:
        """The hosts whose workers' compute is slow next to the others' (:mod:`srifty.runtime.stragglers`)."""
        by_address = {h.address: h for h in self.hosts}
        return [(by_address[s.host], s) for s in self.samples.stragglers()]

    def host_pids(self, node: int) -> list[int]:
        """This machine's processes of node ``node``'s launch (the shield and everything below it)."""
        proc = self.procs[node]
        return ([proc.pid] if proc.poll() is None else []) + descendants(proc.pid)

    def worker_pids(self, node: int) -> list[int]:
        """The host's workers: what runs below its launch's torchrun (the shield's child)."""
        below = descendants(self.procs[node].pid)
        return descendants(below[0]) if below else []

    def quota_holds(self, quotas: QuotaGroups) -> list[tuple[str, int, int]]:
        """For each host under a CPU quota: its address, its processes, and how many of them the quota's
        group holds (from the kernel's own list)."""
        holds = []
        for node, host in enumerate(self.hosts):
            if host.address in quotas.created:
                pids = set(self.host_pids(node))
                holds.append((host.address, len(pids), len(pids & quotas.members(host.address))))
        return holds

    def inject(
        self, node: int, fault: HostFault, quotas: QuotaGroups, injector: Injector
    ) -> tuple[str, dict[str, object]]:
        """Inject ``fault`` on node ``node``: a slow fault lowers its CPU quota, the others go to ``injector`` (a
        partition hits the workers only: a partitioned host's torchrun is alive). Returns the timeline event
        (kind, details)."""
        host, pids = self.hosts[node], self.host_pids(node)
        if fault.kind == "slow":
            quotas.cap(host.address, fault.cores)
            quotas.add(host.address, pids)
            return "inject_slow", {"host": host.address, "cpu": fault.cores}
        injector(fault.kind, host.address, self.worker_pids(node) if fault.kind == "partition" else pids)
        return f"inject_{fault.kind}", {"host": host.address}

    def fire(
        self, fault: HostFault, host: Host, beats: Mapping[int, Beat], quotas: QuotaGroups, injector: Injector
    ) -> FireResult:
        """Inject ``fault`` on ``host`` (:meth:`inject`) once every worker of its node has reported (``beats``);
        ``None`` while one has not, why it cannot when the host is not in this launch."""
        if host not in self.hosts:
            return f"host {host.address} is not in the current launch"
        node = self.hosts.index(host)
        if not all(r in beats for r in self.ranks_on(node)):
            return None  # wait until its workers are up
        return self.inject(node, fault, quotas, injector)

    def ranks_on(self, node: int) -> list[int]:
        """The ranks node ``node`` runs."""
        return [r for r, n in enumerate(self.node_of_rank) if n == node]

    def log_text(self, node: int) -> str:
        """Node ``node``'s part of its host's log."""
        return read_log_from(self.logs[node], self.log_offsets[node])

    def silent_nodes(self, beats: Mapping[int, Beat], timeout_s: float) -> list[int]:
        """Nodes with a rank whose reports stopped arriving (for ``timeout_s``, on the endpoint's clock) while
        another node's still arrive."""
        now = time.monotonic()
        ranks = [(r, n) for r, n in enumerate(self.node_of_rank) if r in beats]
        fresh = {n for r, n in ranks if now - beats[r].arrived_s < FRESH_S}
        silent = {n for r, n in ranks if now - beats[r].arrived_s > timeout_s}
        return sorted(silent - fresh) if fresh or len(self.hosts) == 1 else []

    def missing_hosts(self, beats: Mapping[int, Beat]) -> list[str]:
        """Addresses of the hosts with a rank that has not reported yet."""
        return sorted({self.hosts[n].address for r, n in enumerate(self.node_of_rank) if r not in beats})

    def require_started(self, beats: Mapping[int, Beat], waited_s: float, timeout_s: float, run_dir: Path) -> None:
        """Give up on a launch whose workers have not all reported after ``waited_s`` > ``timeout_s`` seconds.

        Raises:
            SriftyError: naming the hosts whose workers did not start, and where their logs are.
        """
        if waited_s > timeout_s:
            raise SriftyError(
                f"the workers on {', '.join(self.missing_hosts(beats))} did not start within {timeout_s:.0f} s; see "
                f"their logs in {run_dir / 'hosts'}"
            )
