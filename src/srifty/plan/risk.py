"""A configuration's job time and cost as distributions: the promise a plan makes.

Sources of spread (all in seconds of job time):

* **model error**: the systematic error of the predicted mean iteration time (``iter_mean_error_s``:
  every profile's held-out error, measured profiles included, and the bandwidth model's), ``N`` times over;
* **iteration variance and stragglers**: ``√N`` times the per-iteration spread;
* **VM launch**: :data:`LAUNCH_SPREAD` of the spec's launch time (the paper planned with 150 s and saw
  95–138 s);
* **spot losses** (:mod:`srifty.spot.losses`): events from the spot model's figures for the configuration's
  zone, each costing a relaunch, a restore, the work since the last checkpoint (the interval chosen from the
  loss rate, Daly) and the wait for capacity, or, with an on-demand core that can hold the global batch, the
  core's slower training meanwhile.

The first three are normal with standard deviation ``σ``. The spot delay is a few weighted outcomes
(:func:`~srifty.spot.losses.delay_nodes`: none with the chance of no loss, quantiles of the rest); each is a
job-time outcome ``T_j`` with weight ``w_j``. With a deadline and an **on-demand fallback** (the same groups
on on-demand VMs, where the spec offers them), srifty's policy switches to it when spot losses leave no
more room than the fallback needs at the stated confidence (``z·σ``): an outcome past ``deadline − z·σ``
ends there instead, having run on spot until the switch (``t_s``, where the remaining work at the spot
path's pace just fits on on-demand) and on on-demand after it. Costs follow each outcome's markets and
times; nothing is billed while spot capacity is away and no VM is held (each outcome's delay is billed but
for its expected idle share).

``P(deadline) = Σ_j w_j Φ((deadline − T_j)/σ)``, ``P(budget)`` likewise on the costs; expected time and
cost are the weighted means (the goal ranks on them); p95s are quantiles of the same mixture. Closed forms: a few
microseconds per configuration, so every configuration the search scores is judged on its distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from srifty.plan.predict import Estimate
from srifty.plan.problem import PlanProblem
from srifty.spot.losses import delay_nodes, loss_process, spot_delay
from srifty.units import SECONDS_PER_HOUR
from srifty.vocab import Config, ConfigGroup

# The standard library's normal rather than scipy.special's: importing scipy.special costs a cold
# ``srifty plan`` about 0.4 s (see srifty.sim.sampling.normal_quantile).
_STANDARD_NORMAL = NormalDist()
#: ``Φ(z)`` element-wise (``z`` may be ±inf).
_normal_cdf = np.frompyfunc(lambda z: 0.5 * math.erfc(-z / math.sqrt(2.0)), 1, 1)

#: Standard deviation of a VM launch as a share of the spec's launch time.
LAUNCH_SPREAD = 0.2


@dataclass(frozen=True)
class Risk:
    """A configuration's job time and cost as distributions (see the module docstring).

    Attributes:
        time_nodes_s, cost_nodes_usd: the outcomes (before the normal model error), with their
            probabilities ``node_weights``.
        spread_s: ``σ``, the normal spread around each node (model error, iterations, launch).
        p_meet_deadline, p_meet_budget: ``None`` without that constraint.
        expected_losses: expected spot loss events (each a restart).
        expected_vms_lost: expected spot VMs lost.
        checkpoint_interval_s: the checkpoint interval chosen from the loss rate (``None`` without spot).
        p_fallback: chance that srifty's policy falls back to on-demand.
        fallback: the on-demand configuration it falls back to (``None``: the spec offers none).
        spot_sources: per spot type, where its figures come from (a trace, a region's traces, the prior).
        p_obtain_start: chance that every spot VM can be had at the start (``None`` without spot).
        core_share: the share of throughput the on-demand VMs keep while spot VMs are away (0: none can
            hold the global batch alone).
    """

    confidence: float
    time_nodes_s: tuple[float, ...]
    cost_nodes_usd: tuple[float, ...]
    node_weights: tuple[float, ...]
    spread_s: float
    p_meet_deadline: float | None
    p_meet_budget: float | None
    expected_losses: float = 0.0
    expected_vms_lost: float = 0.0
    checkpoint_interval_s: float | None = None
    p_fallback: float = 0.0
    fallback: Config | None = None
    spot_sources: tuple[tuple[str, str], ...] = ()
    p_obtain_start: float | None = None
    core_share: float = 0.0
    _quantiles: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    @property
    def time_mean_s(self) -> float:
        """Expected job time."""
        return float(np.dot(self.time_nodes_s, self.node_weights))

    @property
    def cost_mean_usd(self) -> float:
        """Expected cost."""
        return float(np.dot(self.cost_nodes_usd, self.node_weights))

    @property
    def time_p95_s(self) -> float:
        """95th percentile of the job time."""
        if "time" not in self._quantiles:
            nodes = np.asarray(self.time_nodes_s)
            self._quantiles["time"] = _mixture_quantile(nodes, self._spreads(1.0), self._weights, 0.95)
        return self._quantiles["time"]

    @property
    def cost_p95_usd(self) -> float:
        """95th percentile of the cost."""
        if "cost" not in self._quantiles:
            costs = np.asarray(self.cost_nodes_usd)
            rates = costs / np.maximum(np.asarray(self.time_nodes_s), 1e-12)
            self._quantiles["cost"] = _mixture_quantile(costs, self._spreads(rates), self._weights, 0.95)
        return self._quantiles["cost"]

    @property
    def _weights(self) -> NDArray[np.float64]:
        return np.asarray(self.node_weights)

    def _spreads(self, scale: float | NDArray[np.float64]) -> NDArray[np.float64]:
        return np.broadcast_to(np.asarray(scale, dtype=float) * self.spread_s, (len(self.time_nodes_s),))


def assess(problem: PlanProblem, config: Config, estimate: Estimate) -> Risk:
    """The job time and cost distributions of ``config`` (placed) at ``estimate`` (see the module docstring)."""
    n = problem.iterations
    run_s = n * estimate.iter_mean_s
    spread = math.sqrt(
        n * estimate.iter_std_s**2 + (n * estimate.iter_mean_error_s) ** 2 + (LAUNCH_SPREAD * problem.vm_launch_s) ** 2
    )
    price = config.price_usd_per_hour() / SECONDS_PER_HOUR
    base = run_s + problem.overhead_s
    spot = [g for g in config.groups if g.market == "spot"]
    if not spot or problem.spot is None:
        return _finish(problem, np.array([base]), np.array([base * price]), np.array([1.0]), spread)
    model = problem.spot
    figures = [(model.figures_for(g.instance.name, config.zone, config.region), g.count) for g in spot]
    process = loss_process(figures)
    core = core_share(problem, config)
    delay = spot_delay(process, run_s, estimate.iter_mean_s, problem.vm_launch_s, problem.checkpoint_restore_s, core)
    delays, weights = delay_nodes(delay, process)
    times = base + delays
    # While capacity is away no spot VM is held, and nothing is billed: each outcome's random delay is billed
    # but for the expected idle share of it.
    random_mean = delay.mean_s - delay.checkpoints_s
    idle_share = min(delay.idle_s / random_mean, 1.0) if random_mean > 0 else 0.0
    billed = times - idle_share * (delays - delay.checkpoints_s)
    costs = billed * price
    fallback = on_demand_twin(problem, config)
    p_fallback = 0.0
    if fallback is not None and problem.deadline_s is not None:
        times, costs, late = _with_fallback(problem, times, costs, run_s + delay.checkpoints_s, spread, fallback)
        p_fallback = float(np.dot(late, weights))
    return _finish(
        problem,
        times,
        costs,
        weights,
        spread,
        expected_losses=delay.events,
        expected_vms_lost=delay.vms_lost,
        checkpoint_interval_s=delay.interval_s if math.isfinite(delay.interval_s) else None,
        p_fallback=p_fallback,
        fallback=fallback,
        spot_sources=process.sources,
        p_obtain_start=process.p_obtain_all,
        core_share=core,
    )


def _with_fallback(
    problem: PlanProblem,
    times: NDArray[np.float64],
    costs: NDArray[np.float64],
    od_run_s: float,
    spread: float,
    fallback: Config,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Outcomes past the switch line end on the on-demand fallback (see the module docstring); the spot part
    before the switch is billed as the outcome's spot path was (``costs``), pro rata."""
    assert problem.deadline_s is not None
    line = problem.deadline_s - _STANDARD_NORMAL.inv_cdf(problem.confidence) * spread
    od_price = fallback.price_usd_per_hour() / SECONDS_PER_HOUR
    restart = problem.vm_launch_s + problem.checkpoint_restore_s
    late = times > line
    span = np.maximum(times, 1e-9)
    # the switch time t_s: t_s + restart + (1 − t_s/T_j)·od_run = line (progress on spot uniform over T_j)
    pace = np.maximum(1.0 - od_run_s / span, 1e-9)
    switch = np.clip((line - restart - od_run_s) / pace, 0.0, line)
    finish = np.maximum(line, switch + restart + od_run_s * (1.0 - switch / span))
    new_times = np.where(late, finish, times)
    new_costs = np.where(late, costs * switch / span + (finish - switch) * od_price, costs)
    return new_times, new_costs, late


def _finish(
    problem: PlanProblem,
    times: NDArray[np.float64],
    costs: NDArray[np.float64],
    weights: NDArray[np.float64],
    spread: float,
    **rest: object,
) -> Risk:
    p_deadline = p_budget = None
    if problem.deadline_s is not None:
        p_deadline = _probability(problem.deadline_s, times, np.full(len(times), spread), weights)
    if problem.budget_usd is not None:
        rates = costs / np.maximum(times, 1e-12)
        p_budget = _probability(problem.budget_usd, costs, spread * rates, weights)
    return Risk(
        problem.confidence,
        tuple(times.tolist()),
        tuple(costs.tolist()),
        tuple(weights.tolist()),
        spread,
        p_deadline,
        p_budget,
        **rest,  # type: ignore[arg-type]
    )


def _probability(
    limit: float, nodes: NDArray[np.float64], spreads: NDArray[np.float64], weights: NDArray[np.float64]
) -> float:
    """``P(X ≤ limit)`` for a mixture of normals ``N(nodes_j, spreads_j²)`` with ``weights`` (a point mass
    where the spread is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(spreads > 0, (limit - nodes) / spreads, np.where(nodes <= limit, np.inf, -np.inf))
    return float(np.dot(_normal_cdf(z).astype(np.float64), weights))


def _mixture_quantile(
    nodes: NDArray[np.float64], spreads: NDArray[np.float64], weights: NDArray[np.float64], q: float
) -> float:
    """The ``q`` quantile of a mixture of normals (bisection on its CDF)."""
    lo = float(np.min(nodes - 6 * spreads))
    hi = float(np.max(nodes + 6 * spreads))
    if hi <= lo:
        return float(nodes[0])
    for _ in range(50):
        mid = (lo + hi) / 2
        if _probability(mid, nodes, spreads, weights) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def on_demand_twin(problem: PlanProblem, config: Config) -> Config | None:
    """The same groups on on-demand VMs (a type's spot and on-demand groups merged), where the spec offers that
    many on-demand VMs of each type in the region (an on-demand configuration needs no zone); ``None``
    otherwise."""
    quotas = problem.fallback_quotas
    counts: dict[str, int] = {}
    for g in config.groups:
        counts[g.instance.name] = counts.get(g.instance.name, 0) + g.count
    groups: dict[str, ConfigGroup] = {}
    for g in config.groups:
        if quotas.get(g.instance.name, 0) < counts[g.instance.name] or not g.instance.has_on_demand:
            return None
        if g.instance.name in groups and groups[g.instance.name].local_batch != g.local_batch:
            return None  # one type at two batches: not one on-demand group
        groups[g.instance.name] = ConfigGroup(g.instance, counts[g.instance.name], g.local_batch, "on_demand")
    return Config(tuple(groups.values()), None)


def core_config(problem: PlanProblem, config: Config) -> Config | None:
    """The configuration's on-demand VMs alone holding the whole global batch (every local batch scaled up by
    the same whole-sample factor, each within its type's largest batch), or ``None``: no on-demand VMs, no
    spot VMs, or they cannot hold it."""
    core = [g for g in config.groups if g.market == "on_demand"]
    if not core or len(core) == len(config.groups):
        return None
    held = sum(g.samples_per_iteration for g in core)
    limits = {(c.instance.name, c.market): c.max_batch for c in problem.candidates}
    groups = []
    for g in core:
        scaled, rest = divmod(g.local_batch * config.global_batch, held)
        if rest or scaled > limits.get((g.instance.name, g.market), 0):
            return None
        groups.append(ConfigGroup(g.instance, g.count, scaled, g.market))
    return Config(tuple(groups), config.zone)


def core_share(problem: PlanProblem, config: Config) -> float:
    """The share of the global batch a configuration's on-demand VMs process, when they can hold all of it
    alone (:func:`core_config`); 0 otherwise. Throughput is taken as proportional to samples per iteration
    (above the knee), so it is also the share of throughput the core keeps."""
    if core_config(problem, config) is None:
        return 0.0
    core = sum(g.samples_per_iteration for g in config.groups if g.market == "on_demand")
    return core / config.global_batch
