"""The judge of spot policies: a job replayed against a real spot trace, on the emulated cloud's clock and truth.

A run starts at some tick of a trace and follows the trace's held count as the behaviour of the plan's own
zone (whatever zone or region the file name says). A job's spot configuration needs its ``n`` spot VMs: with a
trace of at most ``K`` held, they are all there when ``min(n, held) = n`` (``n ≤ K``); for ``n > K`` the
trace's held count is scaled, ``⌊n · held / K⌋`` VMs, so the job has them all only when the trace holds all
``K`` (losses of the trace's VMs stand for losses of the same share of the plan's). When fewer are there, the
job's spot VMs are lost at that tick (and not billed from then), it rolls back to its last checkpoint, and
spot cannot be relaunched until they are all there again. On-demand VMs are never lost.

The policy under judgement (:class:`~srifty.vocab.spot_policy.SpotPolicy`) is asked at the start, after every
loss and at every tick, and says ``spot`` or ``on_demand``:

* ``spot``: run the spot configuration; when its VMs are away, run the on-demand core alone if the job has
  one (a mixed configuration), else wait (nothing held, nothing billed);
* ``on_demand``: run the on-demand fallback.

*Zone moves.* A run may be given the traces of the region's other zones, recorded over the same days as its
own (``zones``: zone name → trace, each replayed as that zone's behaviour from the same start). The policy
then sees, at every ask, which of those zones could hold the spot configuration now, and may answer ``spot``
in another zone: the configuration (its on-demand core too, since a data-parallel job keeps its VMs in one
zone) is launched there, beside what trains if anything does, and billed at that zone's spot price; from then
on losses follow that zone's trace. Without ``zones`` the job stays in its own zone.

Once the spot configuration or its on-demand twin (the same groups) has trained, the policy sees its true
iteration time as the pace measured so far (what a real run's throughput window tells the controller).

Switching while running launches the new VMs while the old ones keep training (both billed), then checkpoints
and restores (``restore_s``); after a loss or from waiting, the launch and restore stop the job. Launch times
are the emulated cloud's (the largest of the new VMs' draws; draws in the same order for every policy: common
random numbers). Iteration times are the emulated cloud's true mean for each configuration. Training pauses
``checkpoint_s`` every policy's checkpoint interval. Costs: the catalog's prices of what is held.

The oracle (:func:`oracle_run`) knows the traces: it trains on spot whenever spot is there in any zone it is
given (at the cheapest such zone's price) and on on-demand only for the work spot cannot do by the deadline,
with no launch, restore, checkpoint or lost work: a lower bound on the cost of any policy, zone moves
included.

This module is the judge: it reads traces and the emulated cloud's truth, never srifty's spot model or
predictors. Nothing here is a measurement of a real cloud.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from srifty.units import SECONDS_PER_HOUR
from srifty.vocab import Config, SpotDecision, SpotPolicy, SpotTrace, SpotView
from srifty.vocab import SpotMode as Mode

#: A run that has not finished after this many times the deadline (or the job's on-demand time, without one)
#: is stopped and counted as never finishing.
HORIZON_FACTOR = 4.0


@dataclass(frozen=True)
class ReplayJob:
    """A job as the judge replays it: configurations and their true mean iteration times (s).

    Attributes:
        spot: what ``spot`` runs (it needs its spot VMs).
        on_demand: what ``on_demand`` runs (``None``: no fallback).
        core: the spot configuration's on-demand VMs alone (``None``: none that hold the global batch).
        iter_s: true mean iteration time of ``spot``, ``on_demand`` and ``core`` by those names.
        launch_s: draws one VM launch (s) from a generator (the emulated cloud's).
    """

    iterations: int
    deadline_s: float | None
    budget_usd: float | None
    spot: Config
    on_demand: Config | None
    core: Config | None
    iter_s: dict[str, float]
    restore_s: float
    checkpoint_s: float
    launch_s: Callable[[np.random.Generator], float]

    @property
    def spot_vms(self) -> int:
        """Spot VMs the spot configuration needs."""
        return sum(g.count for g in self.spot.groups if g.market == "spot")

    @property
    def home_zone(self) -> str:
        """The zone the spot configuration starts in."""
        return self.spot.spot_zone() or ""

    def price_per_s(self, what: str, zone: str | None = None) -> float:
        """USD per second of holding ``spot`` (in ``zone``; ``None``: its own), ``core`` or ``on_demand``."""
        config = {"spot": self.spot, "core": self.core, "on_demand": self.on_demand}[what]
        if config is None:
            return 0.0
        if what == "spot" and zone and zone != config.zone:
            config = replace(config, zone=zone)
        return config.price_usd_per_hour() / SECONDS_PER_HOUR


@dataclass
class RunRecord:
    """One replayed run.

    Attributes:
        finish_s: when the job finished (``inf``: not within the horizon).
        losses: spot loss events that hit the job.
        decisions: ``(time s, action, reason)`` whenever the policy changed its answer or moved zone.
        at_losses: ``(time s, iterations saved, action)`` of the policy's answer after each loss.
        zone_moves: how often the spot configuration was relaunched in another zone.
    """

    policy: str
    trace: str
    start_s: float
    finish_s: float
    cost_usd: float
    deadline_met: bool | None
    budget_met: bool | None
    losses: int = 0
    decisions: list[tuple[float, str, str]] = field(default_factory=list)
    at_losses: list[tuple[float, float, str]] = field(default_factory=list)
    zone_moves: int = 0


def spot_vms_held(trace: SpotTrace, needed: int, t_s: float) -> bool:
    """Whether all ``needed`` spot VMs can be held at trace time ``t_s`` (see the module docstring); the
    trace repeats past its end."""
    held = trace.held[int(t_s // trace.gap_s) % len(trace.held)]
    top = trace.max_held
    have = min(needed, held) if needed <= top else (needed * held) // top
    return have >= needed


@dataclass
class _State:
    t: float = 0.0
    mode: Mode = "waiting"
    running: str | None = None  # which configuration trains: spot, core or on_demand
    ready_at: float = 0.0  # training (re)starts then (launch and restore done)
    pending: str | None = None  # a configuration launching beside the running one
    pending_at: float = 0.0
    zone: str = ""  # where the spot configuration runs (or is relaunched)
    pending_zone: str = ""  # where a pending spot configuration is launching
    base: float = 0.0  # iterations saved when the current training began
    since: float = 0.0  # when it began
    cost: float = 0.0
    launches: int = 0
    trained: bool = False  # the spot configuration or its on-demand twin has trained (its pace is known)


def replay(
    job: ReplayJob,
    trace: SpotTrace,
    start_s: float,
    policy: SpotPolicy,
    rng_for_launch: Callable[[int], np.random.Generator],
    zones: Mapping[str, SpotTrace] | None = None,
) -> RunRecord:
    """Replay ``job`` from ``start_s`` seconds into ``trace`` under ``policy`` (see the module docstring).

    Args:
        rng_for_launch: the generator of the ``k``-th launch of this run (the same for every policy).
        zones: the other zones the job may move to, each with its trace (recorded with ``trace``).
    """
    needed = job.spot_vms
    home = job.home_zone
    traces = {**(zones or {}), home: trace}
    interval = float(getattr(policy, "checkpoint_interval_s", 600.0))
    od_time = job.iterations * job.iter_s.get("on_demand", job.iter_s["spot"])
    horizon = HORIZON_FACTOR * (job.deadline_s if job.deadline_s is not None else od_time)
    s = _State(zone=home, pending_zone=home)
    record = RunRecord(policy.name, trace.name, start_s, math.inf, 0.0, None, None)
    last_action = ""

    def available(t: float, zone: str | None = None) -> bool:
        return spot_vms_held(traces[zone or s.zone], needed, start_s + t)

    def spot_lost() -> bool:
        """Whether the spot VMs running or launching are taken away now."""
        return (s.running == "spot" and not available(s.t)) or (
            s.pending == "spot" and not available(s.t, s.pending_zone)
        )

    def progress(t: float) -> tuple[float, float]:
        """(iterations done, iterations saved) at ``t``."""
        if s.running is None or t < s.ready_at:
            return s.base, s.base
        it = job.iter_s[s.running]
        cycle = interval + job.checkpoint_s
        u = t - s.ready_at
        k = math.floor(u / cycle)
        r = u - k * cycle
        return s.base + (k * interval + min(r, interval)) / it, s.base + k * interval / it

    def finish_time() -> float:
        assert s.running is not None
        work = (job.iterations - s.base) * job.iter_s[s.running]
        return s.ready_at + work + math.floor(work / interval) * job.checkpoint_s

    def launch(what: str, count: int) -> float:
        rng = rng_for_launch(s.launches)
        s.launches += 1
        return max(job.launch_s(rng) for _ in range(max(count, 1)))

    def vms(what: str) -> int:
        config = {"spot": job.spot, "core": job.core, "on_demand": job.on_demand}[what]
        return 0 if config is None else config.n_vms

    def start_fresh(what: str, zone: str | None = None) -> None:
        """Nothing trains: launch ``what`` (in ``zone``: spot only; the core's VMs are already up after a loss)
        and restore; the job stands still meanwhile."""
        up = 0.0 if what == "core" else launch(what, vms(what))
        if what == "spot" and zone is not None and zone != s.zone:
            s.zone = zone
            record.zone_moves += 1
        s.running = what
        s.ready_at = s.t + up + job.restore_s
        s.since = s.t
        s.pending = None
        s.mode = "core" if what == "core" else ("on_demand" if what == "on_demand" else "spot")

    def switch_to(what: str, zone: str | None = None) -> None:
        """While something trains: launch ``what`` beside it (from the core, only the spot VMs, unless they
        move zone); the switch happens when its VMs are up."""
        target = zone or s.zone
        if s.pending == what and (what != "spot" or s.pending_zone == target):
            return
        moving = what == "spot" and target != s.zone
        count = job.spot_vms if (what == "spot" and s.running == "core" and not moving) else vms(what)
        s.pending = what
        s.pending_zone = target if what == "spot" else s.zone
        s.pending_at = s.t + launch(what, count)

    def ask(event: str) -> SpotDecision:
        done, saved = progress(s.t)
        view = SpotView(
            s.t,
            job.deadline_s,
            job.budget_usd,
            s.cost,
            saved if event == "loss" else done,
            job.iterations,
            s.mode,
            event,  # type: ignore[arg-type]
            available(s.t),
            trace.gap_s,
            job.iter_s["spot"] if s.trained else None,
            s.zone,
            tuple((zone, available(s.t, zone)) for zone in sorted(traces) if zone != s.zone),
        )
        return policy.decide(view)

    def apply(decision: SpotDecision) -> None:
        nonlocal last_action
        if decision.action != last_action or (decision.zone is not None and decision.zone != s.zone):
            record.decisions.append((round(s.t, 1), decision.action, decision.reason))
            last_action = decision.action
        if decision.action == "on_demand":
            if job.on_demand is None or s.running == "on_demand" or s.pending == "on_demand":
                return
            switch_to("on_demand") if s.running is not None else start_fresh("on_demand")
            return
        target = decision.zone if decision.zone in traces else s.zone
        if (s.running == "spot" and target == s.zone) or (s.pending == "spot" and target == s.pending_zone):
            return
        if available(s.t, target):
            switch_to("spot", target) if s.running is not None else start_fresh("spot", target)
        elif job.core is not None and s.running is None:
            start_fresh("core")
        elif s.running is None:
            s.mode = "waiting"

    apply(ask("start"))
    while s.t < horizon:
        next_tick = (math.floor((start_s + s.t) / trace.gap_s) + 1) * trace.gap_s - start_s
        stop = min(next_tick, horizon)
        if s.pending is not None and s.pending_at <= stop:
            _bill(job, s, s.pending_at)
            s.base = progress(s.t)[0]  # a planned switch checkpoints first: nothing is lost
            if s.pending == "spot" and s.pending_zone != s.zone:
                s.zone = s.pending_zone
                record.zone_moves += 1
            s.running, s.pending = s.pending, None
            s.ready_at = s.t + job.restore_s
            s.mode = "core" if s.running == "core" else ("on_demand" if s.running == "on_demand" else "spot")
            continue
        if s.running is not None:
            end = finish_time()
            if end <= stop:
                _bill(job, s, end)
                record.finish_s = end
                break
        _bill(job, s, stop)
        if s.running in ("spot", "on_demand") and s.t > s.ready_at:
            s.trained = True
        if stop >= horizon:
            break
        if spot_lost():
            record.losses += 1
            if s.running == "spot" and not available(s.t):
                s.base, s.running = progress(s.t)[1], None
            s.pending = None
            if s.running is None:  # a spot launch beside the core (or the fallback) fails: they keep training
                s.mode = "waiting"
            decision = ask("loss")
            record.at_losses.append((s.t, s.base, decision.action))
        else:
            decision = ask("tick")
        apply(decision)
    record.cost_usd = s.cost
    if job.deadline_s is not None:
        record.deadline_met = record.finish_s <= job.deadline_s
    if job.budget_usd is not None:
        record.budget_met = record.cost_usd <= job.budget_usd and math.isfinite(record.finish_s)
    return record


def _bill(job: ReplayJob, s: _State, until: float) -> None:
    """Bill what is held from ``s.t`` to ``until`` and move the clock there."""
    span = max(until - s.t, 0.0)
    held = 0.0
    if s.running is not None:
        held += job.price_per_s(s.running, s.zone)
    if s.pending is not None:  # from the core in its zone, only the spot VMs are new
        held += job.price_per_s(s.pending, s.pending_zone)
        if s.running == "core" and s.pending == "spot" and s.pending_zone == s.zone:
            held -= job.price_per_s("core")
    s.cost += held * span
    s.t = until


def oracle_run(
    job: ReplayJob, trace: SpotTrace, start_s: float, zones: Mapping[str, SpotTrace] | None = None
) -> RunRecord:
    """The cheapest any policy could do knowing the traces (see the module docstring): spot whenever it is
    there in some zone (the cheapest of them), on-demand only for the work spot cannot do by the deadline, no
    overheads."""
    needed = job.spot_vms
    traces = {**(zones or {}), job.home_zone: trace}
    price = {zone: job.price_per_s("spot", zone) for zone in traces}
    spot_it = job.iter_s["spot"]
    od_it = job.iter_s.get("on_demand", spot_it)
    work_s = job.iterations * spot_it
    limit = job.deadline_s if job.deadline_s is not None else HORIZON_FACTOR * job.iterations * od_it
    t, spot_s, spot_cost = 0.0, 0.0, 0.0
    finish = math.inf
    while t < limit and spot_s < work_s:
        next_tick = (math.floor((start_s + t) / trace.gap_s) + 1) * trace.gap_s - start_s
        step = min(next_tick, limit) - t
        there = [price[zone] for zone, zone_trace in traces.items() if spot_vms_held(zone_trace, needed, start_s + t)]
        if there:
            use = min(step, work_s - spot_s)
            spot_s += use
            spot_cost += use * min(there)
            if spot_s >= work_s:
                finish = t + use
        t += step
    left_iters = (work_s - spot_s) / spot_it
    od_s = left_iters * od_it
    cost = spot_cost + od_s * job.price_per_s("on_demand")
    record = RunRecord("oracle", trace.name, start_s, finish, cost, None, None)
    if left_iters > 0:
        possible = job.on_demand is not None and (job.deadline_s is None or spot_s + od_s <= job.deadline_s)
        if possible:
            record.finish_s = job.deadline_s if job.deadline_s is not None else t + od_s
        elif job.on_demand is not None and job.iterations * od_it <= limit:
            record.finish_s = job.iterations * od_it
            record.cost_usd = record.finish_s * job.price_per_s("on_demand")
    if job.deadline_s is not None:
        record.deadline_met = record.finish_s <= job.deadline_s
    if job.budget_usd is not None:
        record.budget_met = record.cost_usd <= job.budget_usd and math.isfinite(record.finish_s)
    return record


def start_times_s(traces: Sequence[SpotTrace], starts: int, rng: np.random.Generator) -> list[tuple[SpotTrace, float]]:
    """``starts`` start times spread over the traces: as evenly as the count allows per trace, each at an evenly
    spaced offset of its trace shifted by one random fraction of a spacing (the same for all)."""
    out = []
    shift = float(rng.random())
    for i, trace in enumerate(traces):
        share = starts // len(traces) + (1 if i < starts % len(traces) else 0)
        for j in range(share):
            out.append((trace, (j + shift) * trace.span_s / max(share, 1)))
    return out


def summarise(records: Sequence[RunRecord]) -> dict[str, float | int | None]:
    """The judge's figures for one policy: met fractions, cost mean and p95, p95 finish, mean losses and zone
    moves, runs."""
    costs = np.array([r.cost_usd for r in records])
    finishes = np.array([r.finish_s for r in records])
    deadline = [r.deadline_met for r in records if r.deadline_met is not None]
    budget = [r.budget_met for r in records if r.budget_met is not None]
    finite = np.where(np.isfinite(finishes), finishes, np.nan)
    p95_finish = float(np.nanpercentile(finite, 95)) if np.isfinite(finishes).all() else None
    return {
        "deadline_met_fraction": float(np.mean(deadline)) if deadline else None,
        "budget_met_fraction": float(np.mean(budget)) if budget else None,
        "cost_usd_mean": float(costs.mean()) if len(costs) else None,
        "cost_usd_p95": float(np.percentile(costs, 95)) if len(costs) else None,
        "finish_s_p95": p95_finish,
        "losses_mean": float(np.mean([r.losses for r in records])) if records else None,
        "zone_moves_mean": float(np.mean([r.zone_moves for r in records])) if records else None,
        "runs": len(records),
    }
