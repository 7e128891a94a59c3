"""How a multi-host launch loses hosts, and how a failed one is judged.

A host is **lost** when its launch exits by a signal or an ssh connection loss, when a worker on it was killed,
or when no report from it arrived for the heartbeat timeout while the others' did (a partition: its
collectives hang); a launch that makes no progress for the hang timeout while every worker reports loses the
host of the rank furthest behind. A worker that exits with an error of its own is not a lost host: no re-plan
can fix a script, so it stops the run (:class:`~srifty.errors.SriftyError` naming the host and the error).
Times are seconds.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping

from srifty.errors import SriftyError
from srifty.runtime.cluster_launch import Launch
from srifty.runtime.endpoint import Beat
from srifty.runtime.hosts import Host
from srifty.runtime.launchers import Launcher
from srifty.runtime.torchrun import BROKEN_COLLECTIVE, FENCED_EXIT, first_error_line, killed_worker, worker_exit_codes

#: After one host's launch fails, how long (s) the others get to fail too before the failure is judged.
SETTLE_S = 3.0


def silent_hosts(launch: Launch, beats: Mapping[int, Beat], timeout_s: float) -> list[tuple[Host, str]]:
    """The hosts of ``launch`` gone silent (:meth:`~srifty.runtime.cluster_launch.Launch.silent_nodes`), and why
    they count as lost."""
    why = f"no heartbeat for {timeout_s:g} s while the other hosts' arrive"
    return [(launch.hosts[n], why) for n in launch.silent_nodes(beats, timeout_s)]


def hung_host(launch: Launch, beats: Mapping[int, Beat], timeout_s: float) -> tuple[Host, str]:
    """After ``timeout_s`` seconds without progress: the host of the rank with the lowest reported
    iteration, and why it counts as lost."""
    slowest = min(beats, key=lambda r: int(beats[r].record.get("iteration", 0)))
    why = f"no progress for {timeout_s:g} s; rank {slowest} is the furthest behind"
    return launch.hosts[launch.node_of_rank[slowest]], why


def settled_losses(
    launch: Launch,
    launcher: Launcher,
    beats: Callable[[], Mapping[int, Beat]],
    timeout_s: float,
    clock: Callable[[], float],
    meanwhile: Callable[[], object],
) -> list[tuple[Host, str]]:
    """:func:`lost_hosts` of a launch in which a host's launch failed, once the others had :data:`SETTLE_S`
    seconds (on ``clock``) to fail too, or a host is known gone; ``meanwhile`` runs every 0.1 s of the wait."""
    deadline_s = clock() + SETTLE_S
    while clock() < deadline_s and any(c is None for c in launch.codes()):
        if any(launcher.host_gone(c) for c in launch.codes() if c is not None):
            break
        time.sleep(0.1)
        meanwhile()
    return lost_hosts(launch, launcher, beats(), timeout_s)


def lost_hosts(
    launch: Launch, launcher: Launcher, beats: Mapping[int, Beat], timeout_s: float
) -> list[tuple[Host, str]]:
    """Which hosts a failed launch lost, and how that shows: a launch ended by a signal or a lost
    connection, a worker killed by a signal, heartbeats that stopped first.

    Raises:
        SriftyError: none was lost: the training command failed on its own (its error named), or a
            torchrun ended early.
    """
    lost = []
    for node, code in enumerate(launch.codes()):
        if code is not None and launcher.host_gone(code):
            lost.append((launch.hosts[node], f"its launch ended with {code_text(code)}"))
    if lost:
        return lost
    for node in range(len(launch.hosts)):
        killed = killed_worker(launch.log_text(node))
        if killed is not None:
            lost.append((launch.hosts[node], f"rank {killed[0]} was killed by signal {killed[1]}"))
    if lost:
        return lost
    silent = launch.silent_nodes(beats, timeout_s)
    if silent:
        return [(launch.hosts[n], "its heartbeats stopped first") for n in silent]
    raise own_failure(launch)


def own_failure(launch: Launch) -> SriftyError:
    """The error of a failed launch that lost no host: the training command's own (the root cause when a peer's
    failure broke the others' collectives), or a torchrun that ended early."""
    errors = []
    for node in range(len(launch.hosts)):
        text = launch.log_text(node)
        codes = [(r, c) for r, c in worker_exit_codes(text) if c not in (0, FENCED_EXIT)]
        if codes:
            errors.append((node, *codes[-1], first_error_line(text)))
    if errors:
        # a peer's failure breaks everyone's collectives: the root cause is the error that is not that
        node, rank, code, line = next((e for e in errors if not BROKEN_COLLECTIVE.search(e[3])), errors[0])
        return SriftyError(
            f"the training command failed on host {launch.hosts[node].address} (rank {rank}, exit code "
            f"{code}), which is its own error, not a lost host: {line}. Fix the script (the output is in "
            f"{launch.logs[node]})."
        )
    node = next(n for n, c in enumerate(launch.codes()) if c not in (None, 0))
    return SriftyError(
        f"torchrun on host {launch.hosts[node].address} ended with {code_text(launch.procs[node].poll() or 0)} "
        f"before training finished; see {launch.logs[node]}"
    )


def code_text(code: int) -> str:
    """``signal SIGKILL`` or ``exit code 1``."""
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"exit code {code}"
