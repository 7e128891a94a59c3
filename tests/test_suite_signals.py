"""The suite starts its children as a terminal would, however the suite itself was started.

A background job (``nohup make test &``, a CI runner) inherits SIGINT as ignored, and an ignored signal stays
ignored across ``exec``: the tests that stop ``srifty`` with Ctrl-C then saw it carry on (issue 26). The
conftest gives pytest a handler, so every child starts with SIGINT at its default.
"""

from __future__ import annotations

import signal
import subprocess
import sys

SIGINT_BIT = 1 << (signal.SIGINT - 1)


def _ignored_mask(status: str) -> int:
    line = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
    return int(line.split()[1], 16)


def test_every_child_starts_with_sigint_at_its_default() -> None:
    status = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True, check=True).stdout
    assert not _ignored_mask(status) & SIGINT_BIT, "a child of the suite starts with SIGINT ignored"
    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    answer = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert answer.strip() == "True", "a Python child would not turn Ctrl-C into KeyboardInterrupt"


def test_the_mask_is_read_from_the_kernel_status_line() -> None:
    """The check above reads the right bit: a child started with SIGINT ignored shows it."""
    status = subprocess.run(
        ["cat", "/proc/self/status"],
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    ).stdout
    assert _ignored_mask(status) & SIGINT_BIT
