"""The runtime controller: track progress and cost against the plan, re-plan only when certain.

Fed with finished iterations and events (preemption, a hung worker) and the time they happened; it never
reads a clock itself. After each iteration it projects the rest of the job with the *optimistic* bound of
the windowed throughput (:mod:`srifty.runtime.progress`). Only when even that misses the deadline or the
budget does it re-plan, with what is left: ``N − n`` iterations, ``T − t`` seconds, ``$ − c`` dollars, the
spec's switching overheads and its original goal, in the zone the job runs in. A preempted instance type
(on its market) is never chosen again, except for the VMs of it still running. Every decision goes to the
decision log.

On a host file (``srifty run --hosts``) the candidates are the hosts themselves: ``quotas`` counts the hosts
of each instance type and market still alive. A lost host lowers its count by one and the job is re-planned
over the hosts that remain (spares included); no type is banned, since the other hosts of it are still
there. When the window says the deadline or budget will be missed, the controller first asks which hosts
are slow (``find_slow``, from the workers' own compute times: :mod:`srifty.runtime.stragglers`); those are
set aside like lost hosts before it re-plans. A re-plan that finds nothing better than the configuration
already running keeps it (``keep``): relaunching the same VMs would only cost a restart.

With a spot policy (:mod:`srifty.spot.policy`, the same object the trace replay of ``srifty eval spot``
calls), every loss of spot VMs and every progress check on spot asks it whether to stay on spot or fall back
to on-demand (``spot_policy`` decisions, logged with the view it saw and its reason). Staying on spot re-plans
as above; falling back re-plans over on-demand VMs only, for the rest of the job. A *zone move* (the policy
answers spot in another zone of the region; a real run does not know where capacity is, so the policy sees
the other zones as "not known") re-plans the whole job in that zone: its bans were of the zone left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from srifty.catalog import load_catalog
from srifty.errors import CatalogError, SpecError
from srifty.plan import Plan, expand_offers
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.progress import DEFAULT_WINDOW_S, ProgressTracker
from srifty.spec import CandidateSpec, JobSpec
from srifty.units import usd_for
from srifty.vocab import Config, ConfigGroup, SpotDecision, SpotPolicy, SpotView

Replanner = Callable[[JobSpec], Plan]
#: Hosts found slow: ``(address, instance type, market, why)``.
SlowHostFinder = Callable[[], list[tuple[str, str, str, str]]]


@dataclass(frozen=True)
class Projection:
    """Where the job is heading, by the optimistic bound of the window."""

    remaining_iterations: int
    optimistic_remaining_s: float
    optimistic_end_s: float
    optimistic_cost_usd: float
    misses_deadline: bool
    exceeds_budget: bool


class Controller:
    """Progress, cost and re-planning for one job.

    Args:
        spec: the job as the user asked for it (original constraints, measured from ``start_s``).
        config: the configuration training starts on.
        replan: plans a :class:`JobSpec` (the remaining job); usually :func:`srifty.plan.api.plan_job`.
        log: where decisions go.
        start_s: when the job started (its VMs started billing).
        window_s: the throughput window (``K`` minutes in the paper; 5 by default).
        quotas: hosts alive per ``(instance type, market)`` when running on a host file, else ``None``.
        first: the first decision to log (a resumed run's ``resume``; ``start`` by default).
        find_slow: on a host file, which hosts are slow now (asked before a deadline/budget re-plan).
        set_aside: hosts already set aside as slow (a resumed run's).
        policy: the spot policy asked on spot losses and progress checks (``None``: none).

    The controller owns what it holds: other objects read it through read-only properties and change it only
    through its methods (events, :meth:`rollback_to`, :meth:`restart_window`, :meth:`resume_at`).
    """

    # No attribute can be added from outside, and the public ones are read-only properties.
    __slots__ = (
        "_banned", "_config", "_config_since_s", "_find_slow", "_iteration", "_log", "_next_check_s",
        "_on_demand_only", "_policy", "_policy_said", "_quotas", "_replan_fn", "_set_aside", "_spec",
        "_spent_before_usd", "_start_s", "_survivors", "_tracker", "_zone",
    )  # fmt: skip

    def __init__(
        self,
        spec: JobSpec,
        config: Config,
        replan: Replanner,
        log: DecisionLog,
        start_s: float = 0.0,
        window_s: float = DEFAULT_WINDOW_S,
        quotas: dict[tuple[str, str], int] | None = None,
        first: Decision | None = None,
        find_slow: SlowHostFinder | None = None,
        set_aside: Sequence[str] = (),
        policy: SpotPolicy | None = None,
    ) -> None:
        self._spec = spec
        self._config = config
        self._replan_fn = replan
        self._log = log
        self._start_s = start_s
        self._tracker = ProgressTracker(window_s)
        self._tracker.record(0, start_s)
        self._iteration = 0
        self._config_since_s = start_s
        self._spent_before_usd = 0.0
        self._banned: set[tuple[str, str]] = set()
        self._next_check_s = start_s
        # VMs of the current configuration still running after a preemption (None: all of them).
        self._survivors: list[ConfigGroup] | None = None
        self._quotas = None if quotas is None else dict(quotas)
        self._find_slow = find_slow
        # Hosts set aside as slow (addresses), in the order they were.
        self._set_aside: list[str] = list(set_aside)
        self._policy = policy
        # Whether the policy has moved the job to on-demand VMs for good.
        self._on_demand_only = False
        # The job starts on its planned markets: only a change of the policy's answer is logged at a check.
        self._policy_said = "spot" if any(g.market == "spot" for g in config.groups) else "on_demand"
        # The zone the job's spot VMs run in, once the policy has moved them (None: the configuration's).
        self._zone: str | None = None
        self._emit(
            first or Decision(start_s, 0, "start", "training starts on the planned configuration", config.notation())
        )

    # ---- what it holds (read-only: only the controller's own methods change it) ---------------------

    @property
    def spec(self) -> JobSpec:
        """The job as the user asked for it."""
        return self._spec

    @property
    def config(self) -> Config:
        """The configuration the job runs on now (or is to be relaunched on)."""
        return self._config

    @property
    def iteration(self) -> int:
        """Iterations done (after a rollback: those the last checkpoint holds)."""
        return self._iteration

    @property
    def log(self) -> DecisionLog:
        """The decision log."""
        return self._log

    @property
    def window_s(self) -> float:
        """The throughput window (s)."""
        return self._tracker.window_s

    @property
    def on_demand_only(self) -> bool:
        """Whether the spot policy has moved the job to on-demand VMs for good."""
        return self._on_demand_only

    @property
    def quotas(self) -> dict[tuple[str, str], int] | None:
        """On a host file, the hosts alive per ``(instance type, market)`` (a copy), else ``None``."""
        return None if self._quotas is None else dict(self._quotas)

    @property
    def set_aside_hosts(self) -> tuple[str, ...]:
        """Hosts set aside as slow (addresses), in the order they were."""
        return tuple(self._set_aside)

    def resume_at(self, iteration: int, now_s: float, spent_usd: float) -> None:
        """Continue a job restarted by ``srifty run --resume``: ``iteration`` done (its last checkpoint),
        ``spent_usd`` spent before ``now_s``."""
        self._iteration = iteration
        self._tracker.reset_window(iteration, now_s)
        self._spent_before_usd = spent_usd
        self._config_since_s = now_s
        self._next_check_s = now_s

    def on_interrupt(self, now_s: float, how: str, checkpoint_step: int) -> Decision:
        """The run was interrupted (``how``: Ctrl-C, SIGTERM): where it stopped, and where a resume starts."""
        return self._emit(
            Decision(
                now_s,
                self.iteration,
                "interrupted",
                f"interrupted by {how} at iteration {self.iteration} of {self.spec.iterations}; the last checkpoint "
                f"is at iteration {checkpoint_step}, where `srifty run --resume` continues",
                self.config.notation(),
                {"signal": how, "checkpoint_step": checkpoint_step},
            )
        )

    def rollback_to(self, iteration: int, now_s: float) -> None:
        """Training restarts from the checkpoint at ``iteration`` (after a failure, at ``now_s``): the work
        since is undone and the throughput window starts again there."""
        self._iteration = iteration
        self._tracker.reset_window(iteration, now_s)

    def restart_window(self, now_s: float) -> None:
        """Start the throughput window again at the current iteration (the first iteration of a launch
        includes torchrun's start-up: not a throughput sample)."""
        self._tracker.reset_window(self._iteration, now_s)

    # ---- accounting --------------------------------------------------------------------------------

    def cost_so_far_usd(self, now_s: float) -> float:
        """What the job has cost up to ``now_s``: earlier configurations plus the current one since it started."""
        return self._spent_before_usd + usd_for(self._config.price_usd_per_hour(), now_s - self._config_since_s)

    def project(self, now_s: float) -> Projection | None:
        """The optimistic projection, or ``None`` while the window holds too few iterations."""
        window = self._tracker.window()
        if window is None:
            return None
        remaining = self._spec.iterations - self._iteration
        rest_s = remaining * window.optimistic_iter_s
        end_s = now_s + rest_s
        cost = self.cost_so_far_usd(now_s) + usd_for(self._config.price_usd_per_hour(), rest_s)
        deadline = self._spec.deadline_s
        budget = self._spec.budget_usd
        return Projection(
            remaining,
            rest_s,
            end_s,
            cost,
            deadline is not None and end_s - self._start_s > deadline,
            budget is not None and cost > budget,
        )

    # ---- events ------------------------------------------------------------------------------------

    def on_iteration(self, iteration: int, now_s: float) -> Decision | None:
        """Iteration count ``iteration`` reached at ``now_s``; returns a switch decision if it re-plans."""
        self._iteration = iteration
        self._tracker.record(iteration, now_s)
        if iteration >= self._spec.iterations:
            return self._emit(
                Decision(
                    now_s,
                    iteration,
                    "finish",
                    "all iterations done",
                    self._config.notation(),
                    {"cost_usd": self.cost_so_far_usd(now_s), "elapsed_s": now_s - self._start_s},
                )
            )
        fallback = self._policy_fallback(now_s, "tick")
        if fallback is not None:
            return fallback
        projection = self.project(now_s)
        if projection is None or now_s < self._next_check_s:
            return None
        if not (projection.misses_deadline or projection.exceeds_budget):
            return None
        what = []
        if projection.misses_deadline:
            what.append(
                "even at the optimistic throughput the job ends at "
                f"{projection.optimistic_end_s - self._start_s:.0f} s "
                f"> deadline {self._spec.deadline_s:.0f} s"
            )
        if projection.exceeds_budget:
            what.append(
                f"even optimistically it costs ${projection.optimistic_cost_usd:.2f} > budget "
                f"${self._spec.budget_usd:.2f}"
            )
        why = "; ".join(what)
        slow = self._find_slow() if self._find_slow is not None else []
        if slow:
            return self.on_hosts_lost(
                [(a, t, m) for a, t, m, _ in slow], now_s, f"{why}; " + "; ".join(w for *_, w in slow), slow=True
            )
        return self._replan(now_s, why, {"projection": projection.__dict__}, keep_same=True)

    def on_preemption(self, instance_type: str, market: str, lost_vms: int, now_s: float) -> Decision:
        """``lost_vms`` VMs of ``instance_type`` on ``market`` were taken away at ``now_s``."""
        self._banned.add((instance_type, market))
        survivors = []
        for g in self._config.groups:
            if g.instance.name == instance_type and g.market == market:
                if g.count > lost_vms:
                    survivors.append(ConfigGroup(g.instance, g.count - lost_vms, g.local_batch, g.market))
            else:
                survivors.append(g)
        self._settle(now_s)
        self._emit(
            Decision(
                now_s,
                self._iteration,
                "preempted",
                f"{lost_vms} {instance_type} ({market}) VM(s) preempted; {instance_type} will not be launched again",
                self._config.notation(),
                {"survivors": [g.notation() for g in survivors]},
            )
        )
        self._survivors = survivors
        why = f"{instance_type} preempted"
        if market == "spot" and self._ask_policy(now_s, "loss") == "on_demand":
            self._on_demand_only = True
            why += "; the spot policy falls back to on-demand"
        return self._replan(now_s, why, {}, force=True)

    def on_hang(self, instance_type: str, market: str, now_s: float, detail: str) -> Decision:
        """A worker stopped making progress: treated as the preemption of its VM."""
        self._emit(
            Decision(
                now_s,
                self._iteration,
                "hang",
                f"worker hung ({detail}); treating its VM as preempted",
                self._config.notation(),
            )
        )
        return self.on_preemption(instance_type, market, 1, now_s)

    def on_hosts_lost(self, lost: list[tuple[str, str, str]], now_s: float, why: str, slow: bool = False) -> Decision:
        """Hosts ``(address, instance type, market)`` were lost at ``now_s`` (``why``: how it was seen), or
        set aside as too slow (``slow``); re-plan over the hosts left (needs ``quotas``)."""
        if self._quotas is None:
            raise ValueError("on_hosts_lost needs the hosts' quotas")
        gone: dict[tuple[str, str], int] = {}
        for _, instance_type, market in lost:
            key = (instance_type, market)
            gone[key] = gone.get(key, 0) + 1
            self._quotas[key] = max(0, self._quotas.get(key, 0) - 1)
        # What carries on if the re-plan finds nothing: each running group at its size where the host file has
        # spares of its type to stand in for the hosts gone, else shrunk to the hosts left of that type.
        survivors = []
        for g in self._config.groups:
            left = min(g.count, self._quotas.get((g.instance.name, g.market), 0))
            if left > 0:
                survivors.append(ConfigGroup(g.instance, left, g.local_batch, g.market))
        self._settle(now_s)
        addresses = ", ".join(a for a, _, _ in lost)
        if slow:
            self._set_aside += [a for a, _, _ in lost]
        self._emit(
            Decision(
                now_s,
                self._iteration,
                "slow_host" if slow else "host_lost",
                f"host(s) {addresses} {'set aside as slow' if slow else 'lost'} ({why}); re-planning over the "
                f"{sum(self._quotas.values())} host(s) left",
                self._config.notation(),
                {"lost": [list(x) for x in lost], "survivors": [g.notation() for g in survivors]},
            )
        )
        self._survivors = survivors
        why = f"host(s) {addresses} {'slow' if slow else 'lost'}"
        if not slow and any(m == "spot" for _, _, m in lost) and self._ask_policy(now_s, "loss") == "on_demand":
            self._on_demand_only = True
            why += "; the spot policy falls back to on-demand"
        return self._replan(now_s, why, {}, force=True)

    # ---- the spot policy ---------------------------------------------------------------------------

    def spot_view(self, now_s: float, event: str) -> SpotView:
        """What the spot policy sees now (``event``: ``loss`` or ``tick``); spot capacity is not known in a
        real run (a relaunch is simply tried)."""
        on_spot = any(g.market == "spot" for g in self.config.groups)
        zone = self.spot_zone()
        moves = dict(getattr(self._policy, "zone_prices_usd_per_hour", ()))
        return SpotView(
            now_s=now_s - self._start_s,
            deadline_s=self.spec.deadline_s,
            budget_usd=self.spec.budget_usd,
            spent_usd=self.cost_so_far_usd(now_s),
            iterations_done=float(self.iteration),
            iterations_total=self.spec.iterations,
            mode="waiting" if event == "loss" else ("spot" if on_spot else "on_demand"),
            event=event,  # type: ignore[arg-type]
            spot_available=None,
            next_ask_s=self._iteration_s(),
            observed_iter_s=self._iteration_s() or None,
            zone=zone,
            zones_available=tuple((other, None) for other in sorted(moves) if other != zone),
        )

    def spot_zone(self) -> str | None:
        """The zone the job's spot VMs run in (or are relaunched in)."""
        if self._zone is not None:
            return self._zone
        try:
            return self._config.spot_zone()
        except CatalogError:
            return None

    def _iteration_s(self) -> float:
        """The last window's mean iteration time (the policy is asked again after the next iteration)."""
        window = self._tracker.window()
        return 0.0 if window is None else float(window.mean_iter_s)

    def _ask_policy(self, now_s: float, event: str) -> str | None:
        """The policy's action on spot (logged when it is asked after a loss, or when its answer changes)."""
        if self._policy is None or self._on_demand_only:
            return None
        view = self.spot_view(now_s, event)
        decision: SpotDecision = self._policy.decide(view)
        if event == "loss" or decision.action != self._policy_said:
            self._emit(
                Decision(
                    now_s,
                    self.iteration,
                    "spot_policy",
                    f"{self._policy.name} policy: {decision.action} ({decision.reason})",
                    self.config.notation(),
                    {"action": decision.action, "policy": self._policy.name, "view": view.__dict__, **decision.details},
                )
            )
        if decision.zone is not None and decision.zone != view.zone:
            self._emit(
                Decision(
                    now_s,
                    self.iteration,
                    "zone_move",
                    f"the spot VMs move from {view.zone} to {decision.zone}; bans of {view.zone} are lifted",
                    self.config.notation(),
                    {"from": view.zone, "to": decision.zone, "banned_before": sorted(map(list, self._banned))},
                )
            )
            self._zone = decision.zone
            self._banned.clear()
            self._survivors = []  # the whole job relaunches in the new zone
        self._policy_said = decision.action
        return decision.action

    def _policy_fallback(self, now_s: float, event: str) -> Decision | None:
        """While on spot, the policy's safety net: a switch to on-demand VMs when it says so."""
        if self._policy is None or not any(g.market == "spot" for g in self.config.groups):
            return None
        if self._ask_policy(now_s, event) != "on_demand":
            return None
        self._on_demand_only = True
        return self._replan(now_s, "the spot policy falls back to on-demand", {}, force=True)

    # ---- re-planning -------------------------------------------------------------------------------

    def remaining_spec(self, now_s: float) -> JobSpec | None:
        """The job that is left, or ``None`` when no time or money is left to plan with.

        It stays where the job runs (the surviving VMs are there): the current configuration's cloud, region
        and spot zone. A ``candidates: auto`` spec becomes the list of what may be rented there.
        """
        elapsed = now_s - self._start_s
        deadline = None if self._spec.deadline_s is None else self._spec.deadline_s - elapsed
        budget = None if self._spec.budget_usd is None else self._spec.budget_usd - self.cost_so_far_usd(now_s)
        if (deadline is not None and deadline <= 0) or (budget is not None and budget <= 0):
            return None
        alive = self._survivors if self._survivors is not None else list(self._config.groups)
        running = {(g.instance.name, g.market): g.count for g in alive}
        zone = self.spot_zone()
        here = self._spec.model_copy(
            update={
                "cloud": self._config.cloud,
                "clouds": (),
                "region": self._config.region,
                "regions": (),
                "zones": (zone,) if zone else self._spec.zones,
            }
        )
        try:
            offers = expand_offers(here, load_catalog())
        except SpecError:
            return None
        candidates = []
        for offer in offers:
            if self._on_demand_only and offer.market == "spot":
                continue  # the spot policy has fallen back to on-demand
            key = (offer.instance.name, offer.market)
            quota = running.get(key, 0) if key in self._banned else offer.quota
            if self._quotas is not None:
                quota = self._quotas.get(key, 0)
            if quota > 0:
                candidates.append(
                    CandidateSpec(instance_type=key[0], market=offer.market, quota=quota, zone=offer.zone)
                )
        if not candidates:
            return None
        return here.model_copy(
            update={
                "iterations": self._spec.iterations - self._iteration,
                "deadline_s": deadline,
                "budget_usd": budget,
                "candidates": tuple(candidates),
            }
        )

    def _replan(self, now_s: float, why: str, details: dict, force: bool = False, keep_same: bool = False) -> Decision:
        remaining = self.remaining_spec(now_s)
        if remaining is None:
            self._next_check_s = now_s + self._tracker.window_s
            return self._emit(
                Decision(
                    now_s,
                    self._iteration,
                    "no_alternative",
                    f"{why}; no time, money or instance types left to re-plan with",
                    self._config.notation(),
                    details,
                )
            )
        plan = self._replan_fn(remaining)
        if not plan.feasible or plan.best is None:
            self._next_check_s = now_s + self._tracker.window_s
            reason = plan.infeasibility.message if plan.infeasibility else "no feasible configuration"
            carry_on = ""
            if force and self._survivors:
                # Nothing meets the deadline and budget: carry on at the global batch (see _carry_on).
                carry_on = self._carry_on(remaining, plan)
                self._config_since_s = now_s
            return self._emit(
                Decision(
                    now_s,
                    self._iteration,
                    "no_alternative",
                    f"{why}; re-plan found none: {reason.rstrip('.') if carry_on else reason}{carry_on}",
                    self._config.notation(),
                    details,
                )
            )
        best = plan.best
        if keep_same and best.config.notation() == self._config.notation():
            self._next_check_s = now_s + self._tracker.window_s
            return self._emit(
                Decision(
                    now_s,
                    self._iteration,
                    "keep",
                    f"{why}; the re-plan chose the configuration already running, so it keeps running (a "
                    "relaunch would only add a restart)",
                    self._config.notation(),
                    {**details, "predicted_remaining_s": best.time_s, "remaining_iterations": remaining.iterations},
                )
            )
        self._settle(now_s)
        previous = self._config.notation()
        self._config = best.config
        self._config_since_s = now_s
        self._survivors = list(best.config.groups)
        self._tracker.reset_window(self._iteration, now_s)
        return self._emit(
            Decision(
                now_s,
                self._iteration,
                "switch",
                f"{why}; switching {previous} → {best.config.notation()}",
                best.config.notation(),
                {
                    **details,
                    "predicted_remaining_s": best.time_s,
                    "predicted_cost_usd": best.cost_usd,
                    "remaining_iterations": remaining.iterations,
                    "remaining_deadline_s": remaining.deadline_s,
                    "remaining_budget_usd": remaining.budget_usd,
                },
            )
        )

    def _carry_on(self, remaining: JobSpec, plan: Plan) -> str:
        """After a loss with no plan that meets the deadline and budget (``plan``), the job goes on at its
        ``global_batch``: in the configuration the planner names closest to meeting them (the likeliest to finish in
        time where the deadline binds), else in the fastest configuration of the VMs left (no new ones; planned
        without the deadline and budget), else in the fastest one within the budget (planned without the
        deadline), else, where no configuration adds up to ``global_batch``, on the VMs left at their batches,
        which changes the global batch. Sets the configuration; returns what the decision's reason adds."""
        closest = plan.infeasibility.closest if plan.infeasibility else None
        if closest is not None:
            self._config = closest.config
            self._survivors = list(closest.config.groups)
            return (
                f"; carrying on with {self._config.notation()}, the configuration the re-plan names closest, at "
                f"global_batch {self._spec.global_batch}"
            )
        left = {(g.instance.name, g.market): g.count for g in self._survivors or ()}
        own = tuple(
            c.model_copy(update={"quota": min(c.quota, left[(c.instance_type, c.market)])})
            for c in remaining.candidates
            if left.get((c.instance_type, c.market), 0) > 0
        )
        attempts: list[tuple[dict[str, object], str, str]] = [
            (
                {"deadline_s": None, "budget_usd": None, "candidates": own},
                "the fastest configuration of the VMs left",
                "planned without the deadline and budget",
            ),
            ({"deadline_s": None}, "the fastest configuration within the budget", "planned without the deadline"),
        ]
        for update, what, how in attempts if own else attempts[1:]:
            plan = self._replan_fn(remaining.model_copy(update={**update, "goal": "min_time"}))
            if plan.feasible and plan.best is not None:
                self._config = plan.best.config
                self._survivors = list(plan.best.config.groups)
                return (
                    f"; carrying on with {self._config.notation()}, {what} that keeps global_batch "
                    f"{self._spec.global_batch} ({how})"
                )
        self._config = replace(self._config, groups=tuple(self._survivors or ()))
        if self._config.global_batch == self._spec.global_batch:
            return f"; carrying on with the VMs left ({self._config.notation()})"
        return (
            f"; carrying on with the VMs left at their batches ({self._config.notation()}): no configuration "
            f"adds up to global_batch {self._spec.global_batch}, so each step now takes {self._config.global_batch} "
            "samples"
        )

    def _settle(self, now_s: float) -> None:
        """Bank the current configuration's cost up to ``now_s``."""
        self._spent_before_usd = self.cost_so_far_usd(now_s)
        self._config_since_s = now_s

    def _emit(self, decision: Decision) -> Decision:
        self._log.append(decision)
        return decision
