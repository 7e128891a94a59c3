"""Shared fixtures."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

# Every test fails if it leaves a process or a testbed namespace of its own behind (see tests/leakcheck.py).
pytest_plugins = ["tests.leakcheck"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def sigint_at_default() -> None:
    """Give this process a SIGINT handler, so that every child it starts gets SIGINT at its default.

    A shell starts a background job (``make test &``, ``nohup``, a CI runner's script) with SIGINT ignored;
    an ignored signal stays ignored across ``exec``, so every ``srifty`` the tests start would ignore the
    Ctrl-C a test sends it (exit 0 or no exit at all, where the test expects 130). A *handled* signal is
    reset to its default by ``exec``: with Python's own handler installed here, each child starts as it
    would from a terminal. Called at import, in the main thread of pytest and of each xdist worker.
    """
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


sigint_at_default()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run the srifty CLI in-process; returns (exit_code, stdout, stderr)."""
    from srifty.cli.main import run

    def invoke(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exc:
            run(list(args))
        captured = capsys.readouterr()
        code = exc.value.code
        return (code if isinstance(code, int) else (0 if code is None else 1)), captured.out, captured.err

    return invoke


def wait_for(predicate: Callable[[], object], timeout_s: float, poll_s: float = 0.1) -> bool:
    """Poll ``predicate`` until it is true or ``timeout_s`` passes; returns whether it became true."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll_s)
    return False
