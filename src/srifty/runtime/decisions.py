"""The decision log: one JSON line per decision, appended and fsync'ed, so a killed runtime loses none."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from srifty.errors import ArtifactError

Action = Literal[
    "start",
    "resume",
    "continue",
    "replan",
    "switch",
    "keep",
    "preempted",
    "hang",
    "host_lost",
    "slow_host",
    "no_alternative",
    "spot_policy",
    "zone_move",
    "interrupted",
    "finish",
]


@dataclass(frozen=True)
class Decision:
    """What the controller decided at ``time_s`` after ``iteration`` iterations, and why."""

    time_s: float
    iteration: int
    action: Action
    reason: str
    config: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


class DecisionLog:
    """Append-only JSON-lines file. Each write is flushed and fsync'ed before returning."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @classmethod
    def fresh(cls, path: str | Path) -> DecisionLog:
        """A log for a new run at ``path``; an earlier run's log there is kept, renamed with its mtime."""
        target = Path(path)
        if target.exists():
            stamp = int(target.stat().st_mtime)
            target.rename(target.with_name(f"{target.stem}.{stamp}{target.suffix}"))
        return cls(target)

    def append(self, decision: Decision) -> None:
        """Append one decision durably."""
        line = json.dumps(asdict(decision), sort_keys=True) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[Decision]:
        """Every complete decision in the log.

        A last line without its newline is what a crash while appending leaves: it is skipped. Any other
        line that is not a decision means the file was damaged or is not a decision log.

        Raises:
            ArtifactError: naming the file and the line.
        """
        if not self.path.exists():
            return []
        try:
            text = self.path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ArtifactError(f"'{self.path}' is not a decision log (not UTF-8 text).") from None
        lines = text.split("\n")
        out = []
        for number, line in enumerate(lines, start=1):
            torn = number == len(lines)  # after the last newline: empty, or a torn append
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                decision = Decision(**record)
                if not isinstance(decision.action, str) or not isinstance(decision.iteration, int):
                    raise TypeError("action must be a string and iteration an integer")
            except (json.JSONDecodeError, TypeError, ValueError) as err:
                if torn:
                    continue
                raise ArtifactError(
                    f"'{self.path}' line {number} is not a decision ({err}); the log was damaged. Move it "
                    "aside: a new run starts a fresh log."
                ) from None
            out.append(decision)
        return out
