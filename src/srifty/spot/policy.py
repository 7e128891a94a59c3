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

  *Zone moves.* When the spot configuration's capacity is away from its zone (or, in a real run where
  capacity is not known, just after a loss) and another zone of the region has it (not known: may have it),
  the policy relaunches there instead of waiting when that zone's spot price is no higher, or when the
  expected cost of waiting is higher: with probability ``P(D > slack)`` (``D`` the time capacity stays away,
  log-normal with the spot model's mean and spread) the wait outlasts the slack and the rest runs on
  on-demand, so it moves when ``2 · (p_there − p_here) < P(D > slack) · (p_on-demand − p_here)`` (per hour of
  the rest of the job; twice over, the policy's usual margin, since the other zone can lose its capacity too
  and the move costs a relaunch). Among the zones it may move to, the cheapest, and only a zone whose spot
  price is below the on-demand one. From the on-demand fallback it goes back to spot in another zone under
  the same slack rule as in its own. Training in a zone dearer than one with capacity now, it moves back when
  the rest of the job saves more than twice what the relaunch costs.
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

from srifty.units import SECONDS_PER_HOUR
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
        zone_prices_usd_per_hour: the spot configuration's price per hour in each zone it may run in (its own
            included); a zone not named here is never moved to.
        on_demand_usd_per_hour: the on-demand fallback's price per hour (``None``: not compared).
        capacity_wait_s, capacity_wait_sd_s: mean and standard deviation of the time spot capacity takes to
            come back to a zone where it is away (the spot model's).
    """

    pace: JobPace
    confidence: float = 0.9
    events_per_s: float = 0.0
    event_cost_s: float = 0.0
    checkpoint_interval_s: float = BASELINE_CHECKPOINT_S
    name: str = "srifty"
    zone_prices_usd_per_hour: tuple[tuple[str, float], ...] = ()
    on_demand_usd_per_hour: float | None = None
    capacity_wait_s: float = 0.0
    capacity_wait_sd_s: float = 0.0

    def decide(self, view: SpotView) -> SpotDecision:
        z = NormalDist().inv_cdf(self.confidence)
        room = fallback_slack_s(view, self.pace, z)
        if room is None:
            why = "no deadline" if view.deadline_s is None else "no on-demand fallback is offered"
            move = self._zone_move(view, None, 0.0)
            if move is not None:
                return SpotDecision("spot", f"{why}: {move[1]}", {}, zone=move[0])
            return SpotDecision("spot", f"{why}: spot, waiting for capacity when it is away")
        slack, needed = room
        details = {"slack_s": round(slack, 1), "on_demand_needs_s": round(needed, 1), "z": round(z, 3)}
        reserve = self.return_reserve_s(view)
        if view.mode == "on_demand":
            details["return_reserve_s"] = round(reserve, 1)
            if view.spot_available and slack >= reserve:
                return SpotDecision(
                    "spot",
                    f"spot capacity is back and {slack:.0f} s of slack covers going back to spot and the losses "
                    f"to expect ({reserve:.0f} s, twice over)",
                    details,
                )
            move = self._zone_move(view, slack, reserve, from_on_demand=True) if slack >= reserve else None
            if move is not None:
                return SpotDecision(
                    "spot", f"{move[1]}; {slack:.0f} s of slack covers going back to spot", details, zone=move[0]
                )
            return SpotDecision("on_demand", "stay on on-demand: " + _why_stay(view, slack, reserve), details)
        if slack > 0:
            move = self._zone_move(view, slack, reserve)
            if move is not None:
                return SpotDecision("spot", f"{move[1]}; {slack:.0f} s of slack", details, zone=move[0])
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

    def return_reserve_s(self, view: SpotView) -> float:
        """Slack (s) that going (back) to spot should leave: a relaunch plus the losses the rest of the job
        should expect on spot, twice over."""
        spot_work = view.remaining_iterations * (view.observed_iter_s or self.pace.spot_iter_s)
        expected_losses = self.events_per_s * spot_work * self.event_cost_s
        return 2.0 * (self.pace.restart_s + expected_losses)

    def _zone_move(
        self, view: SpotView, slack: float | None, reserve: float, from_on_demand: bool = False
    ) -> tuple[str, str] | None:
        """``(zone, why)`` when the spot configuration should be relaunched in another zone (see the module
        docstring; from the on-demand fallback, any zone cheaper than on-demand will do), else ``None``."""
        prices = dict(self.zone_prices_usd_per_hour)
        if not prices:
            return None
        here = prices.get(view.zone or "", math.inf)
        known = [zone for zone, there in view.zones_available if there and zone in prices and zone != view.zone]
        away_here = view.spot_available is False or (view.spot_available is None and view.event == "loss")
        if not away_here:
            return self._move_back(view, slack, reserve, prices, here, known)
        unknown = [zone for zone, there in view.zones_available if there is None and zone in prices]
        pool = known or (unknown if view.spot_available is None else [])
        if self.on_demand_usd_per_hour is not None:
            pool = [zone for zone in pool if prices[zone] < self.on_demand_usd_per_hour]
        if not pool:
            return None
        target = min(pool, key=lambda zone: (prices[zone], zone))
        there = "has the capacity" if target in known else "may have the capacity (not known until tried)"
        if from_on_demand:
            return target, f"capacity is away from {view.zone}; go back to spot in {target}, which {there}"
        if prices[target] <= here:
            return target, f"capacity is away from {view.zone}; move to {target}, which {there} at no higher price"
        if slack is None or self.on_demand_usd_per_hour is None:
            return None  # nothing to weigh a dearer zone against
        p_late = self.p_wait_exceeds(max(slack, 0.0))
        extra = prices[target] - here
        at_risk = p_late * (self.on_demand_usd_per_hour - here)
        if 2.0 * extra >= at_risk:
            return None
        return target, (
            f"capacity is away from {view.zone}; it stays away beyond the {slack:.0f} s of slack with "
            f"probability {p_late:.2f}, and then on-demand would cost ${at_risk:.3f}/h more in expectation, "
            f"over twice the ${extra:.3f}/h {target} costs more: move to {target}, which {there}"
        )

    def _move_back(
        self,
        view: SpotView,
        slack: float | None,
        reserve: float,
        prices: dict[str, float],
        here: float,
        known: list[str],
    ) -> tuple[str, str] | None:
        """While training on spot in a zone dearer than one that has capacity now: move there when the rest of
        the job saves at least twice what the move costs (both configurations billed through a relaunch) and
        the slack covers the relaunch."""
        if view.mode != "spot" or not known or (slack is not None and slack < reserve):
            return None
        target = min(known, key=lambda zone: (prices[zone], zone))
        if prices[target] >= here:
            return None
        rest_s = view.remaining_iterations * (view.observed_iter_s or self.pace.spot_iter_s)
        saving = (here - prices[target]) * rest_s / SECONDS_PER_HOUR
        cost = (here + prices[target]) * self.pace.restart_s / SECONDS_PER_HOUR
        if saving < 2.0 * cost:
            return None
        return target, (
            f"{target} has capacity at ${prices[target]:.3f}/h against ${here:.3f}/h here: the rest of the job "
            f"saves ${saving:.3f}, more than twice the ${cost:.3f} a move costs"
        )

    def p_wait_exceeds(self, wait_s: float) -> float:
        """Chance that capacity, once away, stays away longer than ``wait_s`` (a log-normal with the spot
        model's mean and spread of the time to regain capacity; 0 without them)."""
        mean, sd = self.capacity_wait_s, self.capacity_wait_sd_s
        if mean <= 0:
            return 0.0
        if wait_s <= 0:
            return 1.0
        sigma2 = math.log1p((sd / mean) ** 2) if sd > 0 else 1e-12
        mu = math.log(mean) - sigma2 / 2
        return 1.0 - NormalDist().cdf((math.log(wait_s) - mu) / math.sqrt(sigma2))


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
