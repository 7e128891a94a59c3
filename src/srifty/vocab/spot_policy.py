"""What a spot policy sees and says: the interface between a policy and whoever runs the job.

A *spot policy* decides, from progress, time left and money left, whether a job should run on its spot
configuration (relaunching it, or waiting for spot capacity to come back), move it to another zone of its
region, or run on its on-demand fallback.
The real controller (:mod:`srifty.runtime`) and the judge's trace replay (:mod:`srifty.evaluate.spot_replay`)
call the same policy objects through this interface; neither needs the other, nor the policies' own
models. Times are seconds from the job's start; money in USD.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

#: Where the job is: running on its spot configuration, on its on-demand core alone (spot VMs away), on the
#: on-demand fallback, or waiting for spot capacity (nothing running).
Mode = Literal["spot", "core", "on_demand", "waiting"]
#: What happened just before the policy is asked: the start, spot VMs lost, or time passing.
Event = Literal["start", "loss", "tick"]
#: The answer: run on spot (relaunch it, or wait for its capacity), or on the on-demand fallback.
Action = Literal["spot", "on_demand"]


@dataclass(frozen=True)
class SpotView:
    """What a policy sees.

    Attributes:
        now_s: seconds since the job started.
        deadline_s: the job's deadline from its start (``None``: none).
        budget_usd: the job's budget (``None``: none).
        spent_usd: money spent so far.
        iterations_done: iterations whose work is safe (at the last checkpoint once a loss has rolled back).
        iterations_total: the job's iterations.
        mode: where the job is now.
        event: what just happened.
        spot_available: whether the spot configuration's VMs can be had now (``None``: not known, as in a
            real run, where a relaunch is simply tried).
        next_ask_s: seconds until the policy is asked again at the latest (a trace's tick, a run's iteration):
            what it decides now has to hold that long.
        observed_iter_s: the iteration time measured so far on the job's spot configuration or its on-demand
            twin (the same groups; ``None`` before either has trained).
        zone: the zone the spot configuration runs in (or would be relaunched in); ``None``: not placed.
        zones_available: the other zones of the region the job may move to, each with whether the spot
            configuration's VMs can be had there now (``None``: not known, as in a real run, where a launch
            there is simply tried); empty: no other zone is offered.
    """

    now_s: float
    deadline_s: float | None
    budget_usd: float | None
    spent_usd: float
    iterations_done: float
    iterations_total: int
    mode: Mode
    event: Event
    spot_available: bool | None = None
    next_ask_s: float = 0.0
    observed_iter_s: float | None = None
    zone: str | None = None
    zones_available: tuple[tuple[str, bool | None], ...] = ()

    @property
    def remaining_iterations(self) -> float:
        """Iterations still to do."""
        return max(self.iterations_total - self.iterations_done, 0.0)

    @property
    def done_fraction(self) -> float:
        """Share of the job's iterations done."""
        return self.iterations_done / self.iterations_total if self.iterations_total > 0 else 1.0

    @property
    def time_left_s(self) -> float | None:
        """Seconds to the deadline (``None`` without one)."""
        return None if self.deadline_s is None else self.deadline_s - self.now_s


@dataclass(frozen=True)
class SpotDecision:
    """A policy's answer, with its reason in words and the figures behind it (for the decision log).

    ``zone`` (with ``action == "spot"`` only): relaunch the spot configuration in that other zone of the region
    (a *zone move*); ``None``: stay in the zone it is in.
    """

    action: Action
    reason: str
    details: dict[str, Any] = field(default_factory=dict)
    zone: str | None = None

    def __post_init__(self) -> None:
        if self.zone is not None and self.action != "spot":
            raise ValueError(f"a zone move needs action 'spot', got {self.action!r}")


class SpotPolicy(Protocol):
    """Decides between spot and the on-demand fallback; ``name`` says which policy it is."""

    @property
    def name(self) -> str:
        """The policy's name (``srifty``, ``uniform_progress``, ...)."""
        ...

    def decide(self, view: SpotView) -> SpotDecision:
        """What to run on now."""
        ...
