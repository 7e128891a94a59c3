"""Spot policies: when to stay on (or go back to) spot VMs and when to fall back to on-demand.

Each is a :class:`~srifty.vocab.spot_policy.SpotPolicy`: ``decide(view) -> SpotDecision``, called alike by
``srifty run``'s controller and by the judge's trace replay (``srifty eval spot``). A decision is ``spot``
(run on the spot configuration: keep it, relaunch it, or wait for its capacity) or ``on_demand`` (run on the
fallback). What a policy knows of the job's configurations is a :class:`JobPace` (predicted times, never the
judge's truth).

* :class:`SriftyPolicy`: spot while there is room, the on-demand fallback as a *safety net* at the stated
  confidence. Each time it is asked, it computes what the rest of the job needs on on-demand
  (``restart + remaining · t_od``) plus a margin ``z·σ`` (``z`` for the confidence, ``σ`` the model's error on
  that time) and the slack left beyond it. Slack above 0: stay on spot (or wait for its capacity); slack gone:
  fall back. Once on on-demand it goes back to spot only when capacity is there and the slack covers the
  switch back and the expected cost of the losses still to come (from the spot model) twice over. No deadline
  or no fallback: spot, waiting for capacity when it is away.
* :class:`UniformProgress`: the reference rule of *Can't Be Late* (Wu et al., NSDI 2024): the job should be
  ``t / (deadline − restart)`` done at time ``t``; behind that line it runs on on-demand, ahead of it on spot
  (waiting when spot is away). With the same hard safety net as srifty's (no margin): when only the
  on-demand time is left, on-demand.
* :class:`OnDemandOnly` and :class:`SpotRestart`: always on-demand; always spot (relaunch when capacity
  returns, never fall back).

Checkpoints: srifty's policy takes them every Daly interval from its loss rate
(:func:`~srifty.spot.losses.checkpoint_interval_s`); the others every :data:`BASELINE_CHECKPOINT_S` (Young's
rule with one hour between losses and a 5 s checkpoint, what ``srifty run`` assumed before a spot model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from srifty.vocab import SpotDecision, SpotView

#: Checkpoint interval of the baseline policies (s): Young's ``√(2·C·MTBF)`` with C = 5 s, MTBF = 1 h.
BASELINE_CHECKPOINT_S = math.sqrt(2 * 5.0 * 3600.0)


@dataclass(frozen=True)
class JobPace:
    """What a policy knows of the job's configurations (predictions, seconds).

    Attributes:
        spot_iter_s: predicted iteration time of the spot configuration.
        on_demand_iter_s: of the on-demand fallback (``None``: there is none).
        restart_s: a relaunch: VM launch plus checkpoint restore.
        error_rel: relative 1σ error of a predicted remaining time (model error).
    """

    spot_iter_s: float
    on_demand_iter_s: float | None
    restart_s: float
    error_rel: float = 0.0


#: Relative error (1σ) of a remaining time from a measured iteration time (stragglers and drift, not the
#: model's error).
OBSERVED_ERROR = 0.05


def fallback_slack_s(view: SpotView, pace: JobPace, z: float) -> tuple[float, float] | None:
    """``(slack, needed)``: seconds left beyond what the rest of the job needs on on-demand, and that need
    (``restart + remaining · t_od + z·σ``, plus the time until the policy is asked again while it is not on
    on-demand yet); ``None`` without a deadline or a fallback. ``t_od`` is the measured iteration time once
    there is one (the fallback has the same groups), with :data:`OBSERVED_ERROR`; else the prediction, with
    the model's error."""
    left = view.time_left_s
    if left is None or pace.on_demand_iter_s is None:
        return None
    measured = view.observed_iter_s is not None and view.observed_iter_s > 0
    iteration_s = view.observed_iter_s if measured else pace.on_demand_iter_s
    work = view.remaining_iterations * iteration_s  # type: ignore[operator]
    needed = work + z * (OBSERVED_ERROR if measured else pace.error_rel) * work
    if view.mode != "on_demand":
        needed += pace.restart_s + view.next_ask_s  # the switch must still fit when next asked
    return left - needed, needed


@dataclass(frozen=True)
class SriftyPolicy:
    """srifty's policy: spot with an on-demand safety net at the stated confidence (see the module docstring).

    Attributes:
        pace: predicted times of the job's configurations.
        confidence: how sure the deadline must be (the margin is ``Φ⁻¹(confidence)·σ``).
        events_per_s: expected spot loss events per second of running (the spot model's, for this zone).
        event_cost_s: what one loss costs on average (restart, lost work, wait for capacity).
        checkpoint_interval_s: from the loss rate (Daly).
    """

    pace: JobPace
    confidence: float = 0.9
    events_per_s: float = 0.0
    event_cost_s: float = 0.0
    checkpoint_interval_s: float = BASELINE_CHECKPOINT_S
    name: str = "srifty"

    def decide(self, view: SpotView) -> SpotDecision:
        z = NormalDist().inv_cdf(self.confidence)
        room = fallback_slack_s(view, self.pace, z)
        if room is None:
            why = "no deadline" if view.deadline_s is None else "no on-demand fallback is offered"
            return SpotDecision("spot", f"{why}: spot, waiting for capacity when it is away")
        slack, needed = room
        details = {"slack_s": round(slack, 1), "on_demand_needs_s": round(needed, 1), "z": round(z, 3)}
        if view.mode == "on_demand":
            spot_work = view.remaining_iterations * (view.observed_iter_s or self.pace.spot_iter_s)
            expected_losses = self.events_per_s * spot_work * self.event_cost_s
            reserve = 2.0 * (self.pace.restart_s + expected_losses)
            details["return_reserve_s"] = round(reserve, 1)
            if view.spot_available and slack >= reserve:
                return SpotDecision(
                    "spot",
                    f"spot capacity is back and {slack:.0f} s of slack covers going back to spot and the losses "
                    f"to expect ({reserve:.0f} s, twice over)",
                    details,
                )
            return SpotDecision("on_demand", "stay on on-demand: " + _why_stay(view, slack, reserve), details)
        if slack > 0:
            state = "capacity is away; waiting" if view.spot_available is False else "spot"
            return SpotDecision(
                "spot",
                f"{state}: {slack:.0f} s of slack beyond the {needed:.0f} s the rest needs on on-demand at "
                f"confidence {self.confidence:g}",
                details,
            )
        return SpotDecision(
            "on_demand",
            f"safety net: the rest needs {needed:.0f} s on on-demand at confidence {self.confidence:g} and "
            f"{view.time_left_s:.0f} s are left",
            details,
        )


def _why_stay(view: SpotView, slack: float, reserve: float) -> str:
    if not view.spot_available:
        return "spot capacity is not there"
    return f"{slack:.0f} s of slack is less than the {reserve:.0f} s going back to spot would need"


@dataclass(frozen=True)
class UniformProgress:
    """Uniform Progress (Can't Be Late): on-demand when behind the line ``t / (deadline − restart)``, spot when
    ahead, and the hard safety net (see the module docstring)."""

    pace: JobPace
    checkpoint_interval_s: float = BASELINE_CHECKPOINT_S
    name: str = "uniform_progress"

    def decide(self, view: SpotView) -> SpotDecision:
        if view.deadline_s is None or self.pace.on_demand_iter_s is None:
            return SpotDecision("spot", "no deadline or no fallback: spot")
        room = fallback_slack_s(view, self.pace, 0.0)
        if room is not None and room[0] <= 0:
            return SpotDecision("on_demand", "safety net: only the on-demand time is left")
        line = min(view.now_s / max(view.deadline_s - self.pace.restart_s, 1e-9), 1.0)
        details = {"progress": round(view.done_fraction, 4), "line": round(line, 4)}
        if view.done_fraction < line:
            return SpotDecision(
                "on_demand", f"behind the uniform-progress line ({view.done_fraction:.3f} < {line:.3f})", details
            )
        return SpotDecision(
            "spot", f"on or ahead of the uniform-progress line ({view.done_fraction:.3f} ≥ {line:.3f})", details
        )


@dataclass(frozen=True)
class OnDemandOnly:
    """Always the on-demand configuration."""

    checkpoint_interval_s: float = BASELINE_CHECKPOINT_S
    name: str = "on_demand"

    def decide(self, view: SpotView) -> SpotDecision:
        return SpotDecision("on_demand", "on-demand only")


@dataclass(frozen=True)
class SpotRestart:
    """Always spot: relaunch when capacity returns, never fall back (SkyPilot managed jobs' default)."""

    checkpoint_interval_s: float = BASELINE_CHECKPOINT_S
    name: str = "spot_restart"

    def decide(self, view: SpotView) -> SpotDecision:
        return SpotDecision("spot", "spot only: relaunch when capacity returns")
