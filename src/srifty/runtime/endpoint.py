"""The controller's endpoint: workers on every host post heartbeats, progress and checkpoint notices here.

A small HTTP server (standard library, one thread per request) bound to an address every host can reach.
Each post carries the run's token (so strays from elsewhere are refused) and its launch id: reports of
any launch but the current one are dropped and answered ``{"current": false}``, which makes that worker
end itself (see :mod:`srifty.torch.courier`). What arrives is kept in memory with the time it arrived
(``time.monotonic`` of this process): the controller judges a host's silence by arrival, never by the
host's own clock.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY_BYTES = 1 << 20


@dataclass
class Beat:
    """The latest heartbeat of one rank and when it arrived (controller's monotonic clock)."""

    record: dict[str, Any]
    arrived_s: float


@dataclass
class _Inbox:
    launch: str = ""
    beats: dict[int, Beat] = field(default_factory=dict)
    progress: list[dict[str, Any]] = field(default_factory=list)
    checkpoint_step: int | None = None
    refused: int = 0


class ControllerEndpoint:
    """Listens on ``address:port`` (``port`` 0: any free one) for the workers' reports.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, address: str, token: str, port: int = 0) -> None:
        self.token = token
        self._lock = threading.Lock()
        self._inbox = _Inbox()
        self._stop = False
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if self.path != "/report" or not 0 < length <= MAX_BODY_BYTES:
                    self.send_error(400)
                    return
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    self.send_error(400)
                    return
                answer = endpoint._receive(body)
                data = json.dumps(answer).encode()
                self.send_response(200 if answer else 403)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer((address, port), Handler)
        self._server.daemon_threads = True
        self.address = address
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="srifty-endpoint", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://address:port``, what workers get as ``SRIFTY_CONTROLLER_URL``."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}"

    def _receive(self, body: object) -> dict[str, Any]:
        if not isinstance(body, dict) or body.get("token") != self.token:
            return {}
        now = time.monotonic()
        with self._lock:
            inbox = self._inbox
            if body.get("launch") != inbox.launch:
                inbox.refused += 1
                return {"current": False}
            beat = body.get("beat")
            if isinstance(beat, dict) and isinstance(beat.get("rank"), int):
                inbox.beats[beat["rank"]] = Beat(beat, now)
            for event in body.get("events") or []:
                if not isinstance(event, dict):
                    continue
                if event.get("kind") == "checkpoint" and isinstance(event.get("step"), int):
                    inbox.checkpoint_step = max(inbox.checkpoint_step or 0, event["step"])
                elif event.get("kind") == "iteration" and isinstance(event.get("iteration"), int):
                    inbox.progress.append(event)
        return {"current": True, "stop": True} if self._stop else {"current": True}

    def request_stop(self) -> None:
        """Ask the workers of the current launch to checkpoint and stop (the controller was interrupted)."""
        self._stop = True

    def start_launch(self, launch: str) -> None:
        """Accept reports of ``launch`` only, from now on (earlier heartbeats and progress are dropped)."""
        with self._lock:
            checkpoint = self._inbox.checkpoint_step
            self._inbox = _Inbox(launch=launch, checkpoint_step=checkpoint)

    def beats(self) -> dict[int, Beat]:
        """The latest heartbeat of each rank of the current launch."""
        with self._lock:
            return dict(self._inbox.beats)

    def take_progress(self) -> list[dict[str, Any]]:
        """Progress lines received since the last call, in arrival order."""
        with self._lock:
            lines, self._inbox.progress = self._inbox.progress, []
        return lines

    @property
    def checkpoint_step(self) -> int | None:
        """The latest step a checkpoint was reported saved at (over every launch), or ``None``."""
        with self._lock:
            return self._inbox.checkpoint_step

    def set_checkpoint_step(self, step: int | None) -> None:
        """Seed the checkpoint step (a resumed run's last known checkpoint)."""
        with self._lock:
            self._inbox.checkpoint_step = step

    def close(self) -> None:
        """Stop listening."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ControllerEndpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
