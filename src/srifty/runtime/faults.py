"""Injected faults, the stand-ins for the cloud's: what they are, how they are written, when they can fire,
and how they hit local processes.

* :class:`Fault` hits a rank of ``srifty run`` on one machine: ``preempt`` kills its worker (SIGKILL) as a
  spot reclaim would, ``hang`` stops it (SIGSTOP).
* :class:`HostFault` hits a host of ``srifty run --hosts``: ``vanish`` (every process killed; on the testbed
  its link goes down too), ``partition`` (cut off, processes alive), ``slow`` (its CPU quota drops).

A fault that can never fire (a rank or host that does not exist, an iteration not before the last one) is
refused before anything is launched (:func:`check_faults`). The CLI only parses the text form
(:meth:`HostFault.parse`); an :data:`Injector` carries a host fault out (:func:`inject_locally` here, the
testbed's :class:`~srifty.network.testbed.hosts.TestbedFaults` on the network testbed).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from srifty.errors import OptionError
from srifty.runtime.cpu_quota import check_cores

HostFaultKind = Literal["vanish", "partition", "slow"]
#: CPU quota (cores) a slow fault leaves a host with when none is given.
DEFAULT_SLOW_CPU = 0.1
#: The text form of a host fault: ``KIND@ITERATION:HOST[:cpu=CORES]``.
HOST_FAULT = re.compile(r"(vanish|partition|slow)@(\d+):(\d+)(?::cpu=([0-9.]+))?")


@dataclass(frozen=True)
class Fault:
    """At ``iteration``, ``kind`` (``preempt`` or ``hang``) hits ``rank``."""

    kind: Literal["preempt", "hang"]
    iteration: int
    rank: int

    @property
    def target(self) -> str:
        """``rank 3``: what it hits, for people."""
        return f"rank {self.rank}"

    @property
    def event_details(self) -> dict[str, object]:
        """What a timeline event about it names besides its kind."""
        return {"rank": self.rank}

    def check(self, world_size: int, iterations: int) -> None:
        """Refuse a fault that can never fire.

        Raises:
            OptionError: a rank outside the starting world (option ``{kind}_rank``), or an iteration not
                before the last one (``{kind}_at``).
        """
        if not 0 <= self.rank < world_size:
            raise OptionError(
                f"{self.kind}_rank",
                f"{self.rank} does not exist: the configuration starts with {world_size} rank(s), numbered 0 to "
                f"{world_size - 1}. Choose one of those, or start on a larger --config.",
            )
        if not 0 <= self.iteration < iterations:
            raise OptionError(
                f"{self.kind}_at",
                f"{self.iteration} can never fire: the job runs iterations 1 to {iterations}, so a fault must come "
                f"at 0 to {iterations - 1}.",
            )


@dataclass(frozen=True)
class HostFault:
    """Once the job reaches ``iteration``, ``kind`` hits host ``host`` (its index in the host file); a slow
    host's CPU quota drops to ``cpu`` cores (:data:`DEFAULT_SLOW_CPU` when ``None``)."""

    kind: HostFaultKind
    iteration: int
    host: int
    cpu: float | None = None

    @classmethod
    def parse(cls, text: str) -> HostFault:
        """``vanish@ITERATION:HOST``, ``partition@ITERATION:HOST`` or ``slow@ITERATION:HOST[:cpu=CORES]``.

        Raises:
            OptionError: a malformed fault (option ``fault``).
        """
        match = HOST_FAULT.fullmatch(text.strip())
        if match is None or (match.group(4) is not None and match.group(1) != "slow"):
            raise OptionError(
                "fault",
                f"'{text}' is not KIND@ITERATION:HOST; write for example vanish@50:1 (host 1 of the host file "
                "vanishes at iteration 50), partition@50:1, or slow@50:1:cpu=0.1 (its CPU quota drops to 0.1 cores).",
            )
        cpu = None
        if match.group(4) is not None:
            try:
                cpu = check_cores(float(match.group(4)), f"--fault {text}")
            except ValueError:
                raise OptionError("fault", f"{text}: cpu= takes a number of cores, e.g. cpu=0.1.") from None
        kind: HostFaultKind = match.group(1)  # type: ignore[assignment]
        return cls(kind, int(match.group(2)), int(match.group(3)), cpu)

    @property
    def target(self) -> str:
        """``host #1``: what it hits, for people."""
        return f"host #{self.host}"

    @property
    def event_details(self) -> dict[str, object]:
        """What a timeline event about it names besides its kind (nothing: the event names the address)."""
        return {}

    @property
    def cores(self) -> float:
        """The CPU quota a slow fault leaves its host with."""
        return DEFAULT_SLOW_CPU if self.cpu is None else self.cpu

    def describe(self) -> str:
        """``slow@70:2:cpu=0.1``, as ``--fault`` takes it."""
        tail = f":cpu={self.cpu:g}" if self.kind == "slow" and self.cpu is not None else ""
        return f"{self.kind}@{self.iteration}:{self.host}{tail}"

    def check(self, n_hosts: int, iterations: int) -> None:
        """Refuse a fault that can never fire.

        Raises:
            OptionError: a host outside the host file or an iteration not before the last one (option ``fault``).
        """
        where = f"{self.kind}@{self.iteration}:{self.host}"
        if not 0 <= self.host < n_hosts:
            raise OptionError("fault", f"{where}: the host file has hosts 0 to {n_hosts - 1}.")
        if not 0 <= self.iteration < iterations:
            raise OptionError("fault", f"{where} can never fire: the job runs iterations 1 to {iterations}.")


def check_faults(faults: Sequence[Fault] | Sequence[HostFault], targets: int, iterations: int) -> None:
    """Refuse faults that can never fire (``targets``: ranks or hosts to hit, numbered from 0).

    Raises:
        OptionError: naming the fault's option and the valid range.
    """
    for fault in faults:
        fault.check(targets, iterations)


def parse_host_faults(texts: Sequence[str]) -> list[HostFault]:
    """Every ``--fault`` text as a :class:`HostFault`.

    Raises:
        OptionError: a malformed fault.
    """
    return [HostFault.parse(text) for text in texts]


#: A fault fired: the timeline event ``(kind, details)`` it makes.
Fired: TypeAlias = tuple[str, dict[str, object]]
#: What a launch says when asked to fire a fault: :data:`Fired`, ``None`` (not yet: its target has not
#: started), or why it can never fire (a text).
FireResult: TypeAlias = Fired | str | None

#: Carries out a host fault: gets the kind, the host's address and the pids of its launch on this machine
#: (for a partition, its workers only).
Injector = Callable[[str, str, list[int]], None]


def inject_locally(kind: str, address: str, pids: list[int]) -> None:
    """The local launcher's faults: ``vanish`` SIGKILLs the host's processes; ``partition`` SIGSTOPs its
    workers (an emulation: a stopped worker is as silent as a cut-off one, and its peers' collectives hang;
    its torchrun keeps running, as a partitioned host's would, so that it can still act on signals)."""
    sig = signal.SIGKILL if kind == "vanish" else signal.SIGSTOP
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
