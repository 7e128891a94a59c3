"""Heartbeats, progress and checkpoint notices from a worker to ``srifty run``'s controller, over HTTP.

Used when ``srifty run --hosts`` sets ``SRIFTY_CONTROLLER_URL`` (no shared filesystem is assumed). A
daemon thread posts what the worker reported, at least every :data:`BEAT_PERIOD_S` (a keep-alive, so the
controller tells a silent host from a slow iteration). It never blocks training: reports queue up while
the controller is unreachable.

**Fencing.** A worker ends itself (exit code :data:`FENCED_EXIT`) when the controller answers that its
launch is no longer the current one, or when no report got through for ``SRIFTY_LEASE_S`` seconds (a
partitioned host, or a killed controller): a worker the controller has given up on never keeps training
on its own. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

ENV_URL = "SRIFTY_CONTROLLER_URL"
ENV_TOKEN = "SRIFTY_CONTROLLER_TOKEN"
ENV_LEASE = "SRIFTY_LEASE_S"
BEAT_PERIOD_S = 0.5
DEFAULT_LEASE_S = 60.0
POST_TIMEOUT_S = 2.0
#: Exit code of a worker that fenced itself (EX_TEMPFAIL).
FENCED_EXIT = 75


class Courier:
    """Sends one worker's reports to the controller at ``url`` (see the module docstring)."""

    def __init__(self, url: str, token: str, launch: str | None, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.url = url.rstrip("/") + "/report"
        self.token = token
        self.launch = launch
        self.lease_s = lease_s
        self._lock = threading.Lock()
        self._beat: dict[str, Any] | None = None
        self._events: list[dict[str, Any]] = []
        self._wake = threading.Event()
        self._last_ok = time.monotonic()
        #: The controller asked this launch to stop (it was interrupted): see ``RunReporter.stop_requested``.
        self.stop = False
        self._thread = threading.Thread(target=self._loop, name="srifty-courier", daemon=True)
        self._thread.start()

    def beat(self, record: dict[str, Any]) -> None:
        """Replace this worker's heartbeat (only the latest one is sent)."""
        with self._lock:
            self._beat = record

    def event(self, record: dict[str, Any], urgent: bool = False) -> None:
        """Queue a record that must arrive (a progress line, a checkpoint notice)."""
        with self._lock:
            self._events.append(record)
        if urgent:
            self._wake.set()

    def flush(self, timeout_s: float = 5.0) -> None:
        """Wait until the queued records are sent (or ``timeout_s`` passes)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if not self._events:
                    return
            self._wake.set()
            time.sleep(0.02)

    def _loop(self) -> None:
        while True:
            self._wake.wait(BEAT_PERIOD_S)
            self._wake.clear()
            with self._lock:
                beat, events = self._beat, list(self._events)
            body = {"token": self.token, "launch": self.launch, "beat": beat, "events": events}
            try:
                answer = self._post(body)
            except (OSError, ValueError):
                if time.monotonic() - self._last_ok > self.lease_s:
                    self._fence(f"no report reached the controller for {self.lease_s:g} s")
                continue
            self._last_ok = time.monotonic()
            with self._lock:
                del self._events[: len(events)]
            if answer.get("stop"):
                self.stop = True  # the controller was interrupted: the script may checkpoint and stop
            if answer.get("current") is False:
                self._fence("the controller says this launch is over")

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S) as response:
            answer = json.loads(response.read() or b"{}")
        return answer if isinstance(answer, dict) else {}

    def _fence(self, why: str) -> None:
        with contextlib.suppress(OSError):
            sys.stderr.write(f"srifty: this worker stops itself: {why}\n")
            sys.stderr.flush()
        os._exit(FENCED_EXIT)


_COURIER: Courier | None = None
_COURIER_LOCK = threading.Lock()


def courier() -> Courier | None:
    """This process's courier, started on first use when ``SRIFTY_CONTROLLER_URL`` is set; else ``None``."""
    global _COURIER
    url = os.environ.get(ENV_URL)
    if not url:
        return None
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{ENV_URL} must be an http(s) URL, got {url!r}")
    with _COURIER_LOCK:
        if _COURIER is None:
            lease = float(os.environ.get(ENV_LEASE, DEFAULT_LEASE_S))
            _COURIER = Courier(url, os.environ.get(ENV_TOKEN, ""), os.environ.get("SRIFTY_LAUNCH_ID"), lease)
        return _COURIER
