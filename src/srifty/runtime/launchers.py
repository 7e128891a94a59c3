"""How ``srifty run --hosts`` starts a command on a host: three launchers behind one interface.

* ``local``: the host is this machine (its address a loopback one, ``127.x.y.z``); the command runs as a
  child process. Several "hosts" on 127.0.0.1, 127.0.0.2, … make a multi-node torchrun on one machine.
* ``netns``: the host is a network namespace of the network testbed (``ip netns exec``), found by its
  address; needs root. The whole multi-host path (rendezvous, gloo between hosts, heartbeats over the
  network) runs on one machine, across shaped links.
* ``ssh``: OpenSSH with the user's keys: ``BatchMode`` (never a password prompt), a connect timeout,
  keep-alives, a remote pseudo-terminal (so a dropped connection hangs up the remote command). For any
  cluster: VMs from SkyPilot, bare metal, a university cluster.

Every value reaches ``ip``/``ssh`` as an argument of a vector; the remote command line ssh hands to the
remote shell is built with :func:`shlex.quote` from checked values. Processes are ended by the
:class:`~srifty.processes.ProcessGuard` that started them (local and netns: they are this machine's
processes) and, for ssh, also on the remote host by their owner mark (``python -m srifty.processes end``).
"""

from __future__ import annotations

import abc
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from srifty.errors import SpecError
from srifty.runtime.hosts import Host

LAUNCHERS = ("local", "netns", "ssh")
#: ssh's exit code when the connection failed or dropped (the remote command's own codes are passed on).
SSH_CONNECTION_LOST = 255


class Launcher(abc.ABC):
    """Starts commands on hosts; subclasses say how (each implements ``argv`` and ``check``)."""

    name = "launcher"
    #: The Python that runs torchrun on the hosts.
    python = sys.executable
    #: Variables every host's command gets (the testbed's gloo interface, for example).
    env: dict[str, str] = {}  # noqa: RUF012 - replaced per instance, never mutated

    @abc.abstractmethod
    def argv(self, host: Host, command: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        """The local argument vector and extra local environment that run ``command`` with ``env`` on ``host``."""

    @abc.abstractmethod
    def check(self, host: Host, timeout_s: float) -> str | None:
        """``None`` if ``host`` can be reached now, else why not."""

    def host_gone(self, returncode: int) -> bool:
        """Whether a launch's exit code means its host was lost (killed or unreachable) rather than the
        command failing on it."""
        return returncode < 0

    def end_remote(self, host: Host, mark: str, timeout_s: float) -> str | None:
        """End the processes carrying ``mark`` on ``host`` when they are not this machine's; ``None`` or
        why it could not. Local launchers have nothing to do: the process guard ends them."""
        return None


class LocalLauncher(Launcher):
    """Hosts on this machine's loopback addresses."""

    name = "local"

    def argv(self, host: Host, command: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        return list(command), dict(env)

    def check(self, host: Host, timeout_s: float) -> str | None:
        if not host.address.startswith("127."):
            return f"the local launcher runs every host on this machine; {host.address} is not a 127.x address"
        return None


@dataclass
class NetnsLauncher(Launcher):
    """Hosts as network-testbed namespaces: ``namespaces`` maps each address to its namespace."""

    namespaces: dict[str, str]
    iface: str = "sft0"
    name = "netns"

    def _namespace(self, host: Host) -> str:
        try:
            return self.namespaces[host.address]
        except KeyError:
            raise SpecError(
                f"host {host.address} is not in the testbed (its hosts: {', '.join(sorted(self.namespaces))})."
            ) from None

    def argv(self, host: Host, command: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        return ["ip", "netns", "exec", self._namespace(host), *command], dict(env)

    def check(self, host: Host, timeout_s: float) -> str | None:
        if host.address not in self.namespaces:
            return f"no testbed namespace has address {host.address}"
        namespace = self.namespaces[host.address]
        result = subprocess.run(
            ["ip", "netns", "exec", namespace, "cat", f"/sys/class/net/{self.iface}/carrier"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if result.returncode != 0:
            return result.stderr.strip() or f"exit code {result.returncode}"
        return None if result.stdout.strip() == "1" else f"the link of {namespace} is down"


@dataclass
class SshLauncher(Launcher):
    """Hosts reached with OpenSSH (``BatchMode``: keys only).

    Args:
        identity: a private key file (``-i``), or ``None`` for the user's ssh configuration.
        user: login name for hosts without ``user=`` in the host file (``None``: ssh's default).
        port: port for hosts without ``port=`` (``None``: 22 or the ssh configuration's).
        connect_timeout_s: ssh's ``ConnectTimeout``.
        workdir: folder the command runs in on the host (the same path as here by default).
        python: the Python interpreter on the hosts (this one's path by default: the same image).
        options: further ``-o`` options (for example ``StrictHostKeyChecking=accept-new``).
    """

    identity: Path | None = None
    user: str | None = None
    port: int | None = None
    connect_timeout_s: int = 10
    workdir: Path = field(default_factory=Path.cwd)
    python: str = sys.executable
    options: tuple[str, ...] = ()
    name = "ssh"

    def _ssh(self, host: Host, *, tty: bool) -> list[str]:
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout_s}"]
        argv += ["-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=3", "-o", "LogLevel=ERROR"]
        for option in self.options:
            argv += ["-o", option]
        if self.identity is not None:
            argv += ["-i", str(self.identity), "-o", "IdentitiesOnly=yes"]
        port = host.port or self.port
        if port is not None:
            argv += ["-p", str(port)]
        user = host.user or self.user
        if user is not None:
            argv += ["-l", user]
        argv += ["-tt"] if tty else ["-T"]
        return [*argv, host.address, "--"]

    def remote_line(self, command: Sequence[str], env: Mapping[str, str]) -> str:
        """The command line the remote shell runs: into the work folder, then the command under ``env``."""
        exports = [f"{k}={v}" for k, v in sorted(env.items())]
        parts = ["cd", str(self.workdir), "&&", "exec", "env", *exports, *command]
        return " ".join(p if p in ("&&",) else shlex.quote(p) for p in parts)

    def argv(self, host: Host, command: Sequence[str], env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        return [*self._ssh(host, tty=True), self.remote_line(command, env)], {}

    def check(self, host: Host, timeout_s: float) -> str | None:
        try:
            result = subprocess.run(
                [*self._ssh(host, tty=False), "true"], capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            return f"ssh did not answer within {timeout_s:g} s"
        if result.returncode != 0:
            return result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit code {result.returncode}"
        return None

    def host_gone(self, returncode: int) -> bool:
        return returncode < 0 or returncode == SSH_CONNECTION_LOST

    def end_remote(self, host: Host, mark: str, timeout_s: float) -> str | None:
        line = " ".join(shlex.quote(p) for p in (self.python, "-m", "srifty.processes", "end", mark))
        try:
            result = subprocess.run(
                [*self._ssh(host, tty=False), line], capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            return f"ssh did not answer within {timeout_s:g} s"
        return None if result.returncode == 0 else (result.stderr.strip() or f"exit code {result.returncode}")
