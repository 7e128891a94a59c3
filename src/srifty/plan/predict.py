"""Turning a configuration into predicted time, cost and constraint checks.

An :class:`Evaluator` predicts the iteration time of a configuration. srifty's is the simulator
(:class:`SimEvaluator`); the APM baseline (:class:`APMEvaluator`) plugs into the same search, as in the
paper, which compares predictors "by replacing its learned models with the baselines', keeping the
optimizer intact for fairness".
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from srifty.compute import LatencyModel, Profile, fit_linear
from srifty.errors import ProfileError
from srifty.plan.problem import PlanProblem
from srifty.sim import BusBandwidthModel, Simulator, config_busbw_bytes_per_s
from srifty.vocab import Config, bus_bytes


@dataclass(frozen=True)
class Estimate:
    """Predicted iteration time of one configuration (seconds)."""

    iter_mean_s: float
    iter_std_s: float
    iter_p5_s: float
    iter_p95_s: float
    compute_s: float
    comm_exposed_s: float
    estimated_profiles: bool = False


class Evaluator(Protocol):
    """Predicts iteration time; ``name`` says which predictor it is."""

    name: str

    def evaluate(self, config: Config) -> Estimate:
        """Predict ``config``'s iteration time."""
        ...


class SimEvaluator:
    """srifty's predictor: the simulator, with common random numbers per configuration.

    Each configuration gets its own generator seeded from ``(seed, its notation)``, so its estimate does not
    depend on the order in which the search visits configurations, and two configurations are compared on
    the same footing.
    """

    name = "srifty"

    def __init__(self, simulator: Simulator, seed: int = 0) -> None:
        self.simulator = simulator
        self.seed = seed

    def prefetch(self, configs: Sequence[Config]) -> None:
        """Warm the simulator's network cache for a whole search space (one bandwidth-model call)."""
        self.simulator.prefetch(configs)

    def evaluate(self, config: Config) -> Estimate:
        rng = np.random.default_rng([self.seed, zlib.crc32(config.notation().encode())])
        r = self.simulator.simulate(config, rng)
        return Estimate(
            r.iter_mean_s,
            r.iter_std_s,
            r.iter_p5_s,
            r.iter_p95_s,
            r.fw_mean_s + r.bw_mean_s + r.step_mean_s,
            r.comm_exposed_mean_s,
            r.estimated_profiles,
        )


class AdditiveEvaluator:
    """Iteration time as ``compute + communication`` with no overlap and no variance (Cynthia's iteration
    model, used by the APM and Paleo baselines). The slowest group's forward + backward + step sets the
    compute; every DDP bucket of its model is allreduced in turn at the bandwidth model's rate.

    Args:
        name: ``"apm"`` or ``"paleo"``.
        profiles: profile per instance type or GPU name.
        net_model: bus-bandwidth model (alpha-beta for APM, Paleo's for Paleo).
        linearize: replace each profile's latency curves by one least-squares line through its measured
            batches (Nexus' compute model, as APM does).
    """

    def __init__(self, name: str, profiles: Mapping[str, Profile], net_model: BusBandwidthModel, linearize: bool):
        self.name = name
        self.profiles = dict(profiles)
        self.net_model = net_model
        self.linearize = linearize
        self._lines: dict[int, dict[str, LatencyModel]] = {}
        self._comm: dict[tuple[int, int, int, tuple[str, ...]], float] = {}

    def _profile(self, config: Config, index: int) -> Profile:
        inst = config.groups[index].instance
        found = self.profiles.get(inst.name) or self.profiles.get(inst.gpu_name)
        if found is None:
            raise ProfileError(f"{self.name} has no profile for {inst.name} ({inst.gpu_name})")
        return found

    def _curves(self, profile: Profile) -> Mapping[str, LatencyModel]:
        if not self.linearize:
            return profile.latency
        key = id(profile)
        if key not in self._lines:
            if len(profile.samples) >= 2:
                batches = [s.batch for s in profile.samples]
                self._lines[key] = {
                    ph: fit_linear(batches, [s.mean_ms(ph) for s in profile.samples]) for ph in ("fw", "bw", "step")
                }
            else:  # an estimated profile has no samples: a line through its model's vertices
                self._lines[key] = {
                    ph: fit_linear(profile.latency[ph].vertices_batch, profile.latency[ph].vertices_ms)
                    for ph in ("fw", "bw", "step")
                }
        return self._lines[key]

    def evaluate(self, config: Config) -> Estimate:
        per_group = []
        for i, group in enumerate(config.groups):
            curves = self._curves(self._profile(config, i))
            per_group.append(sum(float(curves[ph].predict_ms(group.local_batch)[()]) for ph in ("fw", "bw", "step")))
        slowest = int(np.argmax(per_group))
        compute_s = per_group[slowest] / 1000.0
        profile = self._profile(config, slowest)
        key = (id(profile), config.world_size, config.n_vms, tuple(sorted(g.instance.name for g in config.groups)))
        if key not in self._comm:
            sizes = np.array([b.size_bytes for b in profile.buckets], dtype=float)
            if config.world_size <= 1 or len(sizes) == 0:
                self._comm[key] = 0.0
            else:
                busbw = config_busbw_bytes_per_s(
                    self.net_model, sizes, config.world_size, config.n_vms, [g.instance for g in config.groups]
                )
                self._comm[key] = float(np.sum(bus_bytes(sizes, config.world_size) / busbw))
        comm_s = self._comm[key]
        total = compute_s + comm_s
        estimated = any(self._profile(config, i).is_estimate for i in range(len(config.groups)))
        return Estimate(total, 0.0, total, total, compute_s, comm_s, estimated)


def apm_evaluator(profiles: Mapping[str, Profile], alpha_beta: BusBandwidthModel) -> AdditiveEvaluator:
    """The paper's APM baseline: Nexus' linear compute model through every profiled batch, Daydream's
    alpha-beta allreduce, Cynthia's no-overlap iteration model, no variance."""
    return AdditiveEvaluator("apm", profiles, alpha_beta, linearize=True)


def paleo_evaluator(profiles: Mapping[str, Profile]) -> AdditiveEvaluator:
    """The Paleo baseline: per-layer FLOPs/peak and bytes/bandwidth on the datasheet (from op counts only,
    no measured time), Paleo's allreduce estimate (mean of tree and ring), no overlap, no variance."""
    from srifty.compute.paleo import paleo_profile
    from srifty.compute.paleo_net import PaleoBandwidthModel

    analytic = {}
    for key, profile in profiles.items():
        gpu = profile.device.gpu
        if gpu is None:
            raise ProfileError(f"Paleo needs a GPU to predict for; the profile for {key} is a CPU profile")
        analytic[key] = paleo_profile(profile, gpu)
    return AdditiveEvaluator("paleo", analytic, PaleoBandwidthModel(), linearize=False)


@dataclass(frozen=True)
class Scored:
    """A configuration with its predicted job time, cost and constraint checks."""

    config: Config
    estimate: Estimate
    time_s: float
    cost_usd: float
    price_usd_per_hour: float
    p_meet_deadline: float | None
    violations: tuple[str, ...] = field(default=())

    @property
    def feasible(self) -> bool:
        """Meets every given constraint (as predicted)."""
        return not self.violations

    @property
    def throughput_samples_per_s(self) -> float:
        """Global batch per mean iteration."""
        return self.config.global_batch / self.estimate.iter_mean_s


def score(problem: PlanProblem, config: Config, estimate: Estimate) -> Scored:
    """Job time, cost, deadline probability and violated constraints of ``config``."""
    time_s = problem.job_time_s(estimate.iter_mean_s)
    price = config.price_usd_per_hour()
    cost = problem.cost_usd(price, time_s)
    violations = []
    p_deadline = None
    if problem.deadline_s is not None:
        p_deadline = deadline_probability(problem, estimate)
        if time_s > problem.deadline_s:
            violations.append("deadline")
    if problem.budget_usd is not None and cost > problem.budget_usd:
        violations.append("budget")
    return Scored(config, estimate, time_s, cost, price, p_deadline, tuple(violations))


def deadline_probability(problem: PlanProblem, estimate: Estimate) -> float:
    """P(job time ≤ deadline) from the per-iteration spread: the sum of N independent iterations is
    normal with mean ``N·μ`` and standard deviation ``√N·σ`` (central limit theorem)."""
    if problem.deadline_s is None:
        return 1.0
    slack = problem.deadline_s - problem.job_time_s(estimate.iter_mean_s)
    spread = math.sqrt(problem.iterations) * estimate.iter_std_s
    if spread <= 0:
        return 1.0 if slack >= 0 else 0.0
    return 0.5 * (1.0 + math.erf(slack / (spread * math.sqrt(2.0))))


def objective(problem: PlanProblem, scored: Scored) -> tuple[float, float]:
    """Sort key: smaller is better (time then cost for ``min_time``; cost then time for ``min_cost``)."""
    if problem.goal == "min_time":
        return (scored.time_s, scored.cost_usd)
    return (scored.cost_usd, scored.time_s)
