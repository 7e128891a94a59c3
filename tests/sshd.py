"""A real OpenSSH server per testbed namespace, for the ssh launcher's tests: a key made for the test, a
config of its own (its address, a port, host key, authorized keys and pid file in a temp folder), run in the
foreground (``sshd -D``) so that the test ends it by its process."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from srifty.processes import ProcessGuard, end_processes
from tests.conftest import wait_for

SSHD = "/usr/sbin/sshd"
PORT = 2222


def sshd_missing() -> str | None:
    """Why an ssh test cannot run here, or ``None``."""
    if not Path(SSHD).is_file() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "OpenSSH (sshd, ssh, ssh-keygen) is not installed; apt-get install -y openssh-server openssh-client"
    return None


@dataclass
class SshServers:
    """The servers started, the client key, and the ssh options the launcher needs."""

    key: Path
    guard: ProcessGuard
    options: tuple[str, ...] = ("StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null")

    def stop(self) -> None:
        """End every server (and anything still running under it)."""
        self.guard.end()


def start_sshd(hosts: dict[str, str], folder: Path) -> SshServers:
    """Start one ``sshd`` in each namespace of ``hosts`` (``{address: namespace}``) listening on ``PORT``."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "id_test"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    host_key = folder / "host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True)
    authorized = folder / "authorized_keys"
    shutil.copy(key.with_suffix(".pub"), authorized)
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    guard = ProcessGuard("sshd", grace_s=2.0)
    servers = SshServers(key, guard)
    try:
        for address, namespace in hosts.items():
            config = folder / f"sshd-{address}.conf"
            config.write_text(
                f"ListenAddress {address}\nPort {PORT}\nHostKey {host_key}\nAuthorizedKeysFile {authorized}\n"
                f"PidFile {folder / f'sshd-{address}.pid'}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nAcceptEnv none\n"
                # drop a cut-off client's session, as a cloud image's sshd does: else it outlives a partition
                "ClientAliveInterval 2\nClientAliveCountMax 3\n"
            )
            guard.popen(
                ["ip", "netns", "exec", namespace, SSHD, "-D", "-e", "-f", str(config)],
                stdout=subprocess.DEVNULL,
                stderr=open(folder / f"sshd-{address}.log", "wb"),  # noqa: SIM115 - the child keeps it
            )
        for namespace in hosts.values():

            def listening(ns: str = namespace) -> bool:
                out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-ltn"], capture_output=True, text=True)
                return f":{PORT}" in out.stdout

            if not wait_for(listening, 10.0):
                raise RuntimeError(f"sshd did not start in {namespace}; see {folder}")
    except BaseException:
        servers.stop()
        raise
    return servers


def namespace_pids(namespace: str) -> list[int]:
    """Processes in ``namespace`` now."""
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def end_pids(pids: list[int]) -> None:
    """End ``pids`` (a test's leftovers, after it has recorded them)."""
    end_processes(pids, grace_s=1.0)
