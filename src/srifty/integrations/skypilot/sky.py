"""SkyPilot's ``sky`` command, run as a program: srifty never imports SkyPilot (its pins are its own).

srifty finds ``sky`` where it is told (``--sky``, or the ``SRIFTY_SKY`` environment variable) or on ``PATH``,
and says how to install it when it is absent. Every call is an argument vector (no shell); its output goes to
the caller line by line and the last lines are kept, so a failed call becomes a :class:`LaunchError` that
names the command and quotes SkyPilot's own message. Calls are not marked as srifty's processes: the first
``sky`` call starts SkyPilot's API server, which belongs to the user and must outlive srifty.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from srifty.errors import LaunchError

SKY_ENV = "SRIFTY_SKY"
#: The SkyPilot release srifty's tests run against.
TESTED_VERSION = "0.14.1"
INSTALL_HINT = (
    "install SkyPilot in an environment of its own (its pinned dependencies are not srifty's): "
    f"python3 -m venv ~/.sky-venv && ~/.sky-venv/bin/pip install 'skypilot[aws]=={TESTED_VERSION}' "
    f"(aws, azure or gcp: the clouds you use), then give --sky ~/.sky-venv/bin/sky or set {SKY_ENV}"
)
#: ANSI colour and cursor codes, and SkyPilot's spinner payload lines, are dropped from quoted output.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PAYLOAD = re.compile(r"<sky-payload>.*</sky-payload>")
TAIL_LINES = 12


def find_sky(given: str | Path | None = None) -> Path:
    """The ``sky`` executable: ``given``, else ``$SRIFTY_SKY``, else ``sky`` on ``PATH``.

    Raises:
        LaunchError: none found, or not an executable file; the message says how to install SkyPilot.
    """
    named = given if given is not None else os.environ.get(SKY_ENV)
    if named:
        path = Path(named).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
        source = "--sky" if given is not None else SKY_ENV
        raise LaunchError(f"{source} {named} is not an executable file; {INSTALL_HINT}")
    found = shutil.which("sky")
    if found is None:
        raise LaunchError(f"SkyPilot's `sky` command is not on PATH; {INSTALL_HINT}")
    return Path(found)


def clean(line: str) -> str:
    """A line of SkyPilot's output without colour codes or spinner payloads."""
    return _PAYLOAD.sub("", _ANSI.sub("", line)).rstrip()


@dataclass
class SkyCall:
    """One ``sky`` invocation: its arguments, exit code, cleaned output and wall time."""

    argv: list[str]
    returncode: int
    output: list[str]
    wall_s: float

    @property
    def command(self) -> str:
        """The call as a shell line (``sky launch …``)."""
        return shlex.join(["sky", *self.argv[1:]])

    def tail(self) -> str:
        """SkyPilot's last meaningful lines, for an error message."""
        lines = [line for line in self.output if line.strip()]
        return " | ".join(lines[-TAIL_LINES:]) or "(no output)"


@dataclass
class Sky:
    """Runs ``sky`` subcommands; ``echo`` receives each output line as it comes."""

    executable: Path
    echo: Callable[[str], None] = lambda _line: None
    calls: list[SkyCall] = field(default_factory=list)

    def run(self, args: Sequence[str], check: bool = True) -> SkyCall:
        """``sky ARGS…``; with ``check``, a non-zero exit raises :class:`LaunchError` naming the command.

        Raises:
            LaunchError: the call failed (``check``) or could not start.
        """
        argv = [str(self.executable), *args]
        start = time.monotonic()
        output: deque[str] = deque(maxlen=400)
        try:
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True
            )
        except OSError as error:
            raise LaunchError(f"`{shlex.join(['sky', *args])}` could not start: {error}; {INSTALL_HINT}") from None
        assert proc.stdout is not None
        with proc:
            for raw in proc.stdout:
                line = clean(raw)
                output.append(line)
                if line.strip():
                    self.echo(line)
        call = SkyCall(argv, proc.returncode, list(output), time.monotonic() - start)
        self.calls.append(call)
        if check and call.returncode != 0:
            raise LaunchError(f"`{call.command}` failed (exit code {call.returncode}): {call.tail()}")
        return call
