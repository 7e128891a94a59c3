"""The iteration simulator: ``t_iter = t_fw + max(t_bwd, t_pe) + t_step`` (paper, section "Simulator").

Compute: every GPU rank draws its forward+backward time each iteration from a normal distribution whose
mean is its type's latency model at its local batch and whose standard deviation is the spread measured
while profiling, scaled to that batch. Synchronous training waits for the slowest rank, so per iteration
and group we draw the *maximum* of ``n`` such normals directly (inverse CDF of ``Φ(z)^n``), which is exact
for independent ranks and costs one draw per group instead of one per rank. The slowest group's
forward/backward split gives ``t_fw`` and ``t_bwd``; the step time is the slowest rank's, drawn the same way.

Communication: the event-driven allreduce (:mod:`srifty.sim.allreduce`) over the slowest type's DDP
buckets, started at their ready fractions of that iteration's ``t_bwd``. ``t_pe`` is a non-decreasing,
piecewise-linear function of ``t_bwd``; it is simulated at three values of ``t_bwd`` around the mean and
interpolated, and cached by (slowest type, its batch, world size, VM count, types present), so the
planner can call the simulator tens of thousands of times.

Model error: every profile carries its expected error (an estimate: the calibration's leave-one-model-out
error; a measurement: its latency model's held-out error at unprobed batches, :attr:`Profile.expected_error`),
and the bandwidth model its held-out error per fabric (below). Both are systematic, the same in every
iteration, so they are not added to the per-iteration spread: the result carries them as
``iter_mean_error_s`` (in quadrature: the largest expected error of the configuration's profiles times the
compute share of the iteration times the mean, and the communication's, see :func:`_comm_error_s`) and the
p5/p95 are widened by it in quadrature.

Network uncertainty: where the bandwidth model knows how far off it tends to be for the configuration
(quantiles of held-out ``log(true / predicted)`` bus bandwidth, see :func:`~srifty.sim.netquery.spread_many`),
each iteration draws one factor ``f`` on all its communication times from that distribution, scaled so
that its mean is 1 (wide for a fabric never probed, narrow for one probed on many allocations). The mean
communication time so stays the model's prediction, which is what its accuracy was measured on; the
spread widens the percentiles, the stragglers and the deadline risk. (Centred on the median instead, as
first built, a wide and skewed spread raised the mean iteration time of the testbed's end-to-end cases by
15–25 % and about doubled their error.) Scaling every transfer's duration by ``f`` is the same as
running the exchange on a clock ``f`` times slower, so
``t_pe(t_bwd; f) = f · t_pe(t_bwd / f; 1)``, read off the same cached curve: no extra event simulation.
Other models (alpha-beta, Paleo) give no spread, and communication is then as predicted.

Interference: where the slowest group's profile carries a measured interference record
(:class:`~srifty.compute.interference.InterferenceMeasurement`, from ``srifty profile``), backward and the
exchange slow each other by the measured factors instead of overlapping perfectly:
:func:`srifty.sim.overlap.simulate_overlap` runs both (a slowed backward also delays the buckets), and the
iteration is ``t_fw + end + t_step`` with ``end`` when both are done. It is simulated on a grid of backward
times and network factors and interpolated, as ``t_pe`` is. In a heterogeneous configuration every other
group whose profile has its own record is simulated the same way with its own compute and factors, and the
iteration waits for the last to finish: the allreduce is collective, so a faster type with a smaller CPU
share (whose exchange its backward slows more) can hold it back. A profile without the record keeps the
paper's perfect overlap; the result's ``iteration_model`` says which was used.

All randomness comes from the ``numpy.random.Generator`` passed in; nothing reads the clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from srifty.catalog import InstanceType
from srifty.compute import OverlapFactors, Profile
from srifty.errors import ProfileError, SriftyError
from srifty.sim.allreduce import OverlapMode, simulate_allreduce
from srifty.sim.netquery import (
    CAP_GRID_BYTES,
    SPREAD_LEVELS,
    BusBandwidthModel,
    NetRequest,
    config_busbw_many,
    spread_many,
)
from srifty.sim.overlap import simulate_overlap
from srifty.sim.result import SimResult
from srifty.sim.sampling import curve_at as _pe_at
from srifty.sim.sampling import log_time_factors as _log_time_factors
from srifty.sim.sampling import normal_quantile
from srifty.vocab import Config, bus_bytes

TransferMode = Literal["bucket", "layer"]
MS = 1e-3
Z_90 = 1.6448536269514722  # the standard normal's 95th percentile


@dataclass(frozen=True)
class SimOptions:
    """Simulator settings.

    Attributes:
        iters: iterations sampled per call.
        transfers: ``"bucket"`` (one allreduce per DDP bucket, as DDP does) or ``"layer"`` (per parameter).
        overlap: ``"fair_share"`` (the paper's sharing rule) or ``"sequential"`` (one stream).
        bucket_cap_mb: re-bucket with this DDP ``bucket_cap_mb``; ``None`` keeps the profile's buckets.
        spread_scale: multiplies every measured standard deviation (1 = as measured).
        net_spread_scale: multiplies the bandwidth model's log-spread of communication time (1 = as the
            model says, 0 = communication exactly as predicted).
        interference: use a profile's measured interference where it has one (``False``: perfect overlap
            everywhere, the paper's model).
    """

    iters: int = 100
    transfers: TransferMode = "bucket"
    overlap: OverlapMode = "fair_share"
    bucket_cap_mb: float | None = None
    spread_scale: float = 1.0
    net_spread_scale: float = 1.0
    interference: bool = True


@dataclass(frozen=True)
class _GroupCompute:
    fw_ms: float
    bwd_ms: float
    step_ms: float
    compute_std_ms: float
    step_std_ms: float


def profile_for(profiles: Mapping[str, Profile], instance: InstanceType) -> Profile:
    """The profile for ``instance`` in a map keyed by instance type name or catalog GPU name (the instance
    name wins).

    Raises:
        ProfileError: none for its name or its GPU, naming the command that would make one.
    """
    found = profiles.get(instance.name) or profiles.get(instance.gpu_name)
    if found is None:
        known = ", ".join(sorted(profiles)) or "none"
        raise ProfileError(
            f"no compute profile for {instance.name} ({instance.gpu_name}); profiles given: {known}. "
            f"Measure one on that GPU with `srifty profile --model MODEL --device cuda`, "
            "or estimate one with `srifty profile estimate`."
        )
    return found


class Simulator:
    """Simulates configurations against fixed profiles and a bandwidth model, caching shared work.

    Args:
        profiles: profile per instance type name or per catalog GPU name (the instance name wins).
        net_model: a bus-bandwidth model (see :class:`~srifty.sim.netquery.BusBandwidthModel`).
        options: :class:`SimOptions`.
    """

    def __init__(
        self, profiles: Mapping[str, Profile], net_model: BusBandwidthModel, options: SimOptions | None = None
    ):
        self.profiles = dict(profiles)
        self.net_model = net_model
        self.options = options or SimOptions()
        if self.options.iters < 1:
            raise SriftyError("the simulator needs at least one iteration")
        self._compute_cache: dict[tuple[int, int], _GroupCompute] = {}
        self._pe_cache: dict[tuple[object, ...], _PeCurve] = {}
        self._net_cache: dict[tuple[object, ...], tuple[NDArray[np.float64], float, NDArray[np.float64] | None]] = {}
        self._overlap_cache: dict[tuple[object, ...], _OverlapCurve] = {}
        self._sharded_cache: dict[tuple[object, ...], Any] = {}  # srifty.sim.fsdp's timelines

    def profile_for(self, instance: InstanceType) -> Profile:
        """The profile used for ``instance`` (see :func:`profile_for`)."""
        return profile_for(self.profiles, instance)

    def _group_compute(self, profile: Profile, batch: int) -> _GroupCompute:
        key = (id(profile), batch)
        hit = self._compute_cache.get(key)
        if hit is None:
            fw, bwd, st = (float(profile.predict_ms(ph, batch)) for ph in ("fw", "bw", "step"))
            scale = self.options.spread_scale
            s_fw, s_bwd, s_st = (float(profile.std_ms(ph, batch)) * scale for ph in ("fw", "bw", "step"))
            hit = _GroupCompute(fw, bwd, st, float(np.hypot(s_fw, s_bwd)), s_st)
            self._compute_cache[key] = hit
        return hit

    def _transfers(self, profile: Profile) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(start fraction of backward, gradient bytes) per transfer."""
        if self.options.transfers == "layer":
            order = list(profile.ready_order)
            fracs = np.array([profile.params[i].ready_frac for i in order])
            sizes = np.array([profile.params[i].size_bytes for i in order], dtype=float)
            return fracs, sizes
        buckets = (
            profile.buckets if self.options.bucket_cap_mb is None else profile.rebucket(self.options.bucket_cap_mb)
        )
        return np.array([b.start_frac for b in buckets]), np.array([b.size_bytes for b in buckets], dtype=float)

    def _curve_key(
        self, config: Config, slowest: InstanceType, profile: Profile, bwd_ms: float
    ) -> tuple[tuple[object, ...], tuple[tuple[str, str], ...]]:
        """What a cached curve of this configuration depends on, and its ``(type, region)`` set."""
        types = tuple(sorted({(g.instance.name, g.instance.region) for g in config.groups}))
        return (id(profile), slowest.name, bwd_ms, config.world_size, config.n_vms, types, self.options), types

    def _pe_curve(self, config: Config, slowest: InstanceType, profile: Profile, bwd_ms: float, cv: float) -> _PeCurve:
        """``(t_bwd grid s, t_pe grid s, b_cap, n_transfers, network spread)`` for this configuration."""
        key, types = self._curve_key(config, slowest, profile, bwd_ms)
        hit = self._pe_cache.get(key)
        if hit is not None:
            return hit
        fracs, sizes = self._transfers(profile)
        world = config.world_size
        instances = [g.instance for g in config.groups]
        grid = _bwd_grid(bwd_ms, cv)
        if world <= 1 or len(sizes) == 0:
            hit = (grid, np.zeros_like(grid), float("inf"), 0, None)
        else:
            busbw, cap, spread = self._network(profile, sizes, world, config.n_vms, instances, types)
            moved = bus_bytes(sizes, world)
            pe = np.array(
                [simulate_allreduce(fracs * t_bwd, moved, busbw, cap, self.options.overlap).end_s for t_bwd in grid]
            )
            hit = (grid, np.maximum.accumulate(pe), cap, len(sizes), spread)
        self._pe_cache[key] = hit
        return hit

    def _network(
        self,
        profile: Profile,
        sizes: NDArray[np.float64],
        world: int,
        n_vms: int,
        instances: list[InstanceType],
        types: tuple[tuple[str, str], ...],
    ) -> tuple[NDArray[np.float64], float, NDArray[np.float64] | None]:
        """``(b_bus per transfer, b_cap, spread)``, cached by everything they depend on (not the batch)."""
        key = (id(profile), world, n_vms, types)
        if key not in self._net_cache:
            self._fill_network(
                {key: NetRequest(np.concatenate([sizes, CAP_GRID_BYTES]), world, n_vms, tuple(instances))}
            )
        return self._net_cache[key]

    def _fill_network(self, requests: Mapping[tuple[object, ...], NetRequest]) -> None:
        """Answer many network questions with one bandwidth-model call; each asks for its transfers' sizes
        followed by the cap grid. The spread is asked about the transfers alone."""
        answers = config_busbw_many(self.net_model, list(requests.values()))
        transfers_only = [
            dataclasses.replace(r, sizes_bytes=r.sizes_bytes[: len(r.sizes_bytes) - len(CAP_GRID_BYTES)])
            for r in requests.values()
        ]
        spreads = (
            spread_many(self.net_model, transfers_only)
            if self.options.net_spread_scale > 0
            else [None] * len(transfers_only)
        )
        for key, request, both, spread in zip(requests, transfers_only, answers, spreads, strict=True):
            n = len(request.sizes_bytes)
            log_factors = None if spread is None else _log_time_factors(spread, self.options.net_spread_scale)
            self._net_cache[key] = (both[:n], float(np.max(both[n:])), log_factors)

    def prefetch(self, configs: Iterable[Config]) -> None:
        """Ask the bandwidth model about every configuration in ``configs`` at once (a planner's search
        space), so that :meth:`simulate` finds its network queries cached. Results are the same as without."""
        requests: dict[tuple[object, ...], NetRequest] = {}
        configs = list(configs)
        sharded = [c for c in configs if c.parallelism != "ddp"]
        if sharded:
            from srifty.sim.fsdp import prefetch_sharded

            prefetch_sharded(self, sharded)
        for config in configs:
            if config.world_size <= 1 or config.parallelism != "ddp":
                continue
            types = tuple(sorted({(g.instance.name, g.instance.region) for g in config.groups}))
            instances = tuple(g.instance for g in config.groups)
            for group in config.groups:  # any group's profile may turn out to be the slowest
                profile = self.profile_for(group.instance)
                key = (id(profile), config.world_size, config.n_vms, types)
                if key in self._net_cache or key in requests:
                    continue
                _, sizes = self._transfers(profile)
                if len(sizes):
                    sizes_and_grid = np.concatenate([sizes, CAP_GRID_BYTES])
                    requests[key] = NetRequest(sizes_and_grid, config.world_size, config.n_vms, instances)
        if requests:
            self._fill_network(requests)

    def simulate(self, config: Config, rng: np.random.Generator) -> SimResult:
        """Predict the iteration-time distribution of ``config`` (a sharded one: :mod:`srifty.sim.fsdp`)."""
        if config.parallelism != "ddp":
            from srifty.sim.fsdp import simulate_sharded

            return simulate_sharded(self, config, rng)
        iters = self.options.iters
        groups = config.groups
        computes = [self._group_compute(self.profile_for(g.instance), g.local_batch) for g in groups]
        ranks = np.array([g.n_gpus for g in groups], dtype=float)
        # Maximum of n iid standard normals: Φ^{-1}(U^{1/n}).
        u = rng.random((2, iters, len(groups)))
        z_compute = normal_quantile(u[0] ** (1.0 / ranks))
        z_step = normal_quantile(u[1] ** (1.0 / ranks))
        means = np.array([c.fw_ms + c.bwd_ms for c in computes])
        stds = np.array([c.compute_std_ms for c in computes])
        totals = means + stds * z_compute
        slow_idx = np.argmax(totals, axis=1)
        total = totals[np.arange(iters), slow_idx]
        fw_share = np.array([c.fw_ms / max(c.fw_ms + c.bwd_ms, 1e-12) for c in computes])[slow_idx]
        t_fw = total * fw_share * MS
        t_bwd = total * (1.0 - fw_share) * MS
        steps = np.array([c.step_ms for c in computes]) + np.array([c.step_std_ms for c in computes]) * z_step
        t_step = np.maximum(steps.max(axis=1), 0.0) * MS
        t_fw = np.maximum(t_fw, 0.0)
        t_bwd = np.maximum(t_bwd, 0.0)

        slowest_index = int(np.argmax(means))
        slowest = groups[slowest_index]
        slow_profile = self.profile_for(slowest.instance)
        slow_compute = computes[slowest_index]
        cv = slow_compute.compute_std_ms / max(means[slowest_index], 1e-12)
        grid, pe_grid, cap, n_transfers, spread = self._pe_curve(
            config, slowest.instance, slow_profile, slow_compute.bwd_ms, cv
        )
        factor = self._comm_factors(spread, rng)
        interference = slow_profile.interference if self.options.interference else None
        if interference is None or n_transfers == 0:
            t_pe = factor * _pe_at(t_bwd / factor, grid, pe_grid)
            t_end = np.maximum(t_bwd, t_pe)
            model = _why_perfect(slow_profile, self.options.interference, n_transfers)

            def end_at(f: NDArray[np.float64]) -> NDArray[np.float64]:
                return np.maximum(t_bwd, f * _pe_at(t_bwd / f, grid, pe_grid))
        else:
            curve = self._overlap_curve(
                config, slowest.instance, slow_profile, interference.factors(), slow_compute.bwd_ms, cv, spread
            )
            t_end, t_pe = curve.at(t_bwd, factor)
            model = f"measured interference ({slow_profile.device.label}): {interference.summary()}"
            others = self._other_groups_finish(config, computes, totals, slowest_index, factor, spread)
            if others is not None:
                finish, summaries = others
                t_end = np.maximum(t_fw + t_end, finish) - t_fw
                model += "; the exchange waits for every type, each slowed by its own: " + "; ".join(summaries)

            def end_at(f: NDArray[np.float64]) -> NDArray[np.float64]:
                return curve.at(t_bwd, f)[0]

        t_iter = t_fw + t_end + t_step
        ordered = np.sort(t_iter)
        mean = float(ordered.sum()) / iters
        p5, p50, p95 = (_percentile(ordered, q) for q in (5.0, 50.0, 95.0))
        exposed = np.maximum(t_end - t_bwd, 0.0)
        group_profiles = [self.profile_for(g.instance) for g in groups]
        estimated = any(p.is_estimate for p in group_profiles)
        compute_mean = float((t_fw + t_bwd + t_step).sum()) / iters
        compute_error_s = (
            max(p.expected_error for p in group_profiles) * min(compute_mean / max(mean, 1e-12), 1.0) * mean
        )
        comm_error_s = _comm_error_s(spread, factor, end_at, t_fw, t_step)
        error_s = float(np.hypot(compute_error_s, comm_error_s))
        p5, p95 = (_widened(q, mean, error_s, z) for q, z in ((p5, -Z_90), (p95, Z_90)))
        return SimResult(
            config=config.notation(),
            world_size=config.world_size,
            global_batch=config.global_batch,
            iters=iters,
            iter_mean_s=mean,
            iter_std_s=float(np.sqrt(((ordered - mean) ** 2).sum() / (iters - 1))) if iters > 1 else 0.0,
            iter_p5_s=p5,
            iter_p50_s=p50,
            iter_p95_s=p95,
            fw_mean_s=float(t_fw.sum()) / iters,
            bwd_mean_s=float(t_bwd.sum()) / iters,
            step_mean_s=float(t_step.sum()) / iters,
            pe_mean_s=float(t_pe.sum()) / iters,
            comm_exposed_mean_s=float(exposed.sum()) / iters,
            throughput_samples_per_s=config.global_batch / mean,
            b_cap_bytes_per_s=cap,
            n_transfers=n_transfers,
            slowest_group=slowest.notation(),
            estimated_profiles=estimated,
            iter_mean_error_s=error_s,
            iteration_model=model,
        )

    def _other_groups_finish(
        self,
        config: Config,
        computes: list[_GroupCompute],
        totals: NDArray[np.float64],
        slowest_index: int,
        factor: NDArray[np.float64],
        spread: NDArray[np.float64] | None,
    ) -> tuple[NDArray[np.float64], list[str]] | None:
        """When the groups other than the slowest finish backward and their share of the exchange (s from the
        start of the iteration, per iteration), for those whose profiles carry their own interference record;
        ``None`` where none does. An allreduce is collective: it moves at the pace of its slowest participant,
        and each rank's share of it is slowed by that rank's own backward (its measured factors). A type with
        less compute may therefore finish last: a slower CPU quota slows its exchange more (a 0.45-core host
        measured communication x2.6 under compute where a 0.9-core one measured x1.1). Each group's ``t_fw``
        and ``t_bwd`` are its own draws (``totals``, the max over its ranks) split by its profile's share."""
        finish: NDArray[np.float64] | None = None
        summaries: list[str] = []
        for index, group in enumerate(config.groups):
            profile = self.profile_for(group.instance)
            measured = profile.interference
            if index == slowest_index or measured is None:
                continue
            compute = computes[index]
            mean_ms = compute.fw_ms + compute.bwd_ms
            cv = compute.compute_std_ms / max(mean_ms, 1e-12)
            curve = self._overlap_curve(config, group.instance, profile, measured.factors(), compute.bwd_ms, cv, spread)
            total_s = np.maximum(totals[:, index], 0.0) * MS
            fw_s = total_s * (compute.fw_ms / max(mean_ms, 1e-12))
            end_s = fw_s + curve.at(total_s - fw_s, factor)[0]
            finish = end_s if finish is None else np.maximum(finish, end_s)
            summaries.append(f"{group.notation()}: {measured.summary()}")
        return None if finish is None else (finish, summaries)

    def _overlap_curve(
        self,
        config: Config,
        slowest: InstanceType,
        profile: Profile,
        factors: OverlapFactors,
        bwd_ms: float,
        cv: float,
        log_factors: NDArray[np.float64] | None,
    ) -> _OverlapCurve:
        """When backward and the exchange both end, on a grid of backward times and network factors."""
        key, types = self._curve_key(config, slowest, profile, bwd_ms)
        hit = self._overlap_cache.get(key)
        if hit is not None:
            return hit
        fracs, sizes = self._transfers(profile)
        busbw, cap, _ = self._network(
            profile, sizes, config.world_size, config.n_vms, [g.instance for g in config.groups], types
        )
        moved = bus_bytes(sizes, config.world_size)
        grid = _bwd_grid(bwd_ms, cv)
        log_f = np.zeros(1) if log_factors is None else np.linspace(log_factors.min(), log_factors.max(), 5)
        end = np.zeros((len(grid), len(log_f)))
        pe = np.zeros_like(end)
        for i, t_bwd in enumerate(grid):
            for j, lf in enumerate(log_f):
                trace = simulate_overlap(
                    fracs, moved, busbw / np.exp(lf), cap, float(t_bwd), factors, self.options.overlap
                )
                end[i, j], pe[i, j] = trace.end_s, trace.pe_end_s
        hit = _OverlapCurve(grid, log_f, np.maximum.accumulate(end, axis=0), np.maximum.accumulate(pe, axis=0))
        self._overlap_cache[key] = hit
        return hit

    def _comm_factors(self, log_factors: NDArray[np.float64] | None, rng: np.random.Generator) -> NDArray[np.float64]:
        """Per iteration, the factor on every communication time (1 without a spread), drawn from the
        quantiles of its log (:func:`_log_time_factors`)."""
        if log_factors is None:
            return np.ones(self.options.iters)
        return np.exp(np.interp(rng.random(self.options.iters), SPREAD_LEVELS, log_factors))


@dataclass(frozen=True)
class _OverlapCurve:
    """``end`` and ``t_pe`` (s) at backward times ``grid`` (rows) and log network factors ``log_f`` (columns)."""

    grid: NDArray[np.float64]
    log_f: NDArray[np.float64]
    end: NDArray[np.float64]
    pe: NDArray[np.float64]

    def at(self, t_bwd: NDArray[np.float64], factor: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
        """``(end, t_pe)`` per iteration: linear in the backward time (extended past the grid), linear in the
        log factor between grid columns (held at the ends)."""
        position = np.interp(np.log(factor), self.log_f, np.arange(len(self.log_f), dtype=float))
        low = np.floor(position).astype(int)
        high = np.minimum(low + 1, len(self.log_f) - 1)
        weight = position - low
        out = []
        for table in (self.end, self.pe):
            columns = np.stack([_pe_at(t_bwd, self.grid, table[:, j]) for j in range(len(self.log_f))], axis=1)
            rows = np.arange(len(t_bwd))
            out.append((1.0 - weight) * columns[rows, low] + weight * columns[rows, high])
        return tuple(out)


def _bwd_grid(bwd_ms: float, cv: float) -> NDArray[np.float64]:
    """Backward times (s) a curve is simulated at: the mean and three spreads either side."""
    return np.array([max(1.0 - 3.0 * cv, 0.05), 1.0, 1.0 + 3.0 * cv]) * bwd_ms * MS


def _why_perfect(profile: Profile, enabled: bool, n_transfers: int) -> str:
    """The iteration model used without interference, and why."""
    if n_transfers == 0:
        return "no communication (a single rank)"
    why = (
        "interference turned off"
        if not enabled
        else f"the profile of {profile.device.label} has no interference measurement"
    )
    return f"perfect overlap, max(t_bwd, t_pe) ({why})"


#: Interquartile range of a standard normal.
IQR_PER_SIGMA = 1.349
#: The largest systematic network error (1σ of log busbw): the bandwidth model's leave-one-fabric-out MAPE
#: (41.3 %, BENCHMARKS.md "Bus-bandwidth model accuracy", pooled rows above the MTU) times √(π/2).
NET_ERROR_CAP = 0.518

_PeCurve = tuple[NDArray[np.float64], NDArray[np.float64], float, int, NDArray[np.float64] | None]


def _comm_error_s(
    log_factors: NDArray[np.float64] | None,
    factor: NDArray[np.float64],
    end_at: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    t_fw: NDArray[np.float64],
    t_step: NDArray[np.float64],
) -> float:
    """The bandwidth model's systematic error on the mean iteration time (s, 1σ).

    The per-iteration factors average out over a job, but the model's error for a fabric is the same in
    every iteration: the mean iteration time is recomputed with every communication time ``e^{±s}`` times
    longer (``end_at``: when backward and the exchange both end, at per-iteration factors), and half the
    difference is its standard deviation. ``s`` is the held-out log error's standard
    deviation read robustly off the same quantiles (interquartile range / 1.349), at most
    :data:`NET_ERROR_CAP`: the tails of the residuals mix message sizes whose errors partly cancel over an
    iteration's buckets. 0 where the model gives no spread (alpha-beta, Paleo).
    """
    if log_factors is None:
        return 0.0
    q25, q75 = np.interp([0.25, 0.75], SPREAD_LEVELS, log_factors)
    s = min(abs(float(q75 - q25)) / IQR_PER_SIGMA, NET_ERROR_CAP)
    means = [float((t_fw + end_at(f) + t_step).mean()) for f in (factor * np.exp(s), factor * np.exp(-s))]
    return abs(means[0] - means[1]) / 2.0


def _widened(quantile: float, mean: float, error_s: float, z: float) -> float:
    """A sampled quantile widened by a systematic error of the mean (standard deviation ``error_s``): the two
    spreads add in quadrature, ``mean ± sqrt(dev² + (z·error_s)²)``."""
    deviation = quantile - mean
    return mean + float(np.sign(z)) * float(np.hypot(deviation, z * error_s))


def _percentile(ordered: NDArray[np.float64], q: float) -> float:
    """``np.percentile(x, q)`` (linear method) of an already sorted array, without its overhead."""
    position = (len(ordered) - 1) * q / 100.0
    lo = int(position)
    hi = min(lo + 1, len(ordered) - 1)
    return float(ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo))


def simulate(
    config: Config,
    profiles: Mapping[str, Profile],
    net_model: BusBandwidthModel,
    iters: int = 100,
    rng: np.random.Generator | int = 0,
    **options: object,
) -> SimResult:
    """Predict the iteration time of ``config`` (one-off; use :class:`Simulator` for many calls).

    Args:
        config: the configuration (see :func:`srifty.vocab.parse_config`).
        profiles: compute profile per instance type name or GPU name.
        net_model: bus-bandwidth model.
        iters: iterations to sample.
        rng: a ``numpy.random.Generator``, or a seed for one.
        **options: further :class:`SimOptions` fields.
    """
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    sim = Simulator(profiles, net_model, SimOptions(iters=iters, **options))  # type: ignore[arg-type]
    return sim.simulate(config, generator)
