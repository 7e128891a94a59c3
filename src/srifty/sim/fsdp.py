"""Iteration time of a sharded configuration (FSDP, HSDP): the per-unit timeline of :mod:`srifty.sim.timeline`,
sampled per iteration as the DDP simulator samples its own.

**Units and their compute.** The units are the model's numbered blocks and its root
(:func:`~srifty.compute.sharding.sharding_units`). A block's share of the backward is measured: the profile
records when each parameter's gradient is ready (a fraction of backward), and a block's backward runs from
the previous block's last gradient to its own (the first block in backward also holds the head's backward,
the root what follows the last block: the embedding). Its share of the forward is taken to be the same
(forward and backward of a layer scale together). The slowest group's forward, backward and step at its
local batch are split that way; under activation checkpointing its backward is longer by the slowdown the
profile measured (``checkpointing_bwd_slowdown``), or by a second forward where not measured.

**Collectives.** A unit gathers ``numel × c`` bytes (``c`` = 2 under bf16/fp16 mixed precision, else the
parameter's bytes) and reduce-scatters ``numel × 4`` (fp32 reduction). ``fsdp`` runs both over every GPU,
between the VMs; ``hsdp`` inside each VM (its GPUs), then allreduces each shard (``numel × 4 / d``) between
the VMs, ``d`` such allreduces sharing each VM's link. The bandwidth model is asked about each collective
at its size, world and VM count (:class:`~srifty.sim.netquery.NetRequest`), as for DDP: the slowest type's
answer for a mixed configuration.

**Interference.** Where the slowest group's profile measured how backward and communication slow each other
(``srifty profile``'s interference record, issue 27; measured with DDP's allreduce) and the simulator's
``interference`` option is on, the timeline slows compute and collectives by those factors while both run.
Every other group whose profile has its own record is run through its own timeline the same way (its compute,
its factors), and the iteration takes the latest: a type with less compute but a smaller CPU share can hold
the collectives back.

**Per iteration.** Every rank waits for every other at each collective, so the slowest group paces all; its
compute is drawn per iteration (the maximum of its ranks' normals, as :mod:`srifty.sim.simulator` does) and
every unit's compute is scaled by the draw over the mean, ``k``; every transfer's duration by the network
draw ``f``. The timeline is run at three values of ``k`` and interpolated, and ``T(k; f) = f·T(k/f; 1)``.
The optimizer step runs on the shard: the profile's step time over ``d``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from srifty.catalog import InstanceType
from srifty.compute import HALF_BYTES, HALF_PRECISIONS, OverlapFactors, Profile, Unit, sharding_units
from srifty.sim.netquery import CAP_GRID_BYTES, BusBandwidthModel, NetRequest, config_busbw_many, spread_many
from srifty.sim.result import SimResult
from srifty.sim.sampling import curve_at, log_time_factors, normal_quantile
from srifty.sim.timeline import TimelineResult, Transfer, UnitSteps, run_timeline
from srifty.vocab import Config, bus_bytes


class Simulator(Protocol):
    """What :func:`simulate_sharded` uses of :class:`srifty.sim.Simulator` (which calls it)."""

    options: Any
    net_model: BusBandwidthModel
    _sharded_cache: dict[tuple[object, ...], Any]

    def profile_for(self, instance: InstanceType) -> Profile: ...

    def _group_compute(self, profile: Profile, batch: int) -> Any: ...

    def _comm_factors(
        self, log_factors: NDArray[np.float64] | None, rng: np.random.Generator
    ) -> NDArray[np.float64]: ...


#: Bytes of a reduced gradient element (fp32 reduction, FSDP's default ``reduce_dtype``).
REDUCE_BYTES = 4.0
MS = 1e-3


@dataclass(frozen=True)
class UnitShares:
    """Each unit's share of the forward and of the backward compute (each sums to 1), in forward order."""

    units: tuple[Unit, ...]
    fw: tuple[float, ...]
    bwd: tuple[float, ...]


def unit_shares(profile: Profile) -> UnitShares:
    """The units of ``profile``'s model in forward order (root first) and their compute shares, from the
    measured gradient-ready timeline (see the module docstring)."""
    units = sharding_units(profile.params)
    blocks = sorted((u for u in units if not u.is_root), key=lambda u: u.bwd_end_frac)  # backward order
    root = [u for u in units if u.is_root]
    bwd: dict[str, float] = {}
    previous = 0.0
    for block in blocks:
        bwd[block.key] = max(block.bwd_end_frac - previous, 0.0)
        previous = max(previous, block.bwd_end_frac)
    if root:
        bwd[""] = max(1.0 - previous, 0.0)
    total = sum(bwd.values())
    ordered = root + blocks[::-1]  # forward order: the root (embedding) first, then the blocks
    even = total <= 0  # no timeline: equal shares
    shares = tuple(1.0 / len(ordered) if even else bwd[u.key] / total for u in ordered)
    return UnitShares(tuple(ordered), shares, shares)


@dataclass(frozen=True)
class ShardedComm:
    """The transfers of every unit (forward order) and each link's cap (0: between VMs, 1: inside one VM)."""

    gather: tuple[Transfer | None, ...]
    reduce: tuple[tuple[Transfer, ...], ...]
    caps_bytes_per_s: tuple[float, float]
    n_transfers: int


def gather_bytes_each(profile: Profile) -> float:
    """Bytes one parameter element takes in the all-gather: 2 under mixed precision, else its own size."""
    if profile.precision in HALF_PRECISIONS:
        return HALF_BYTES
    return profile.param_bytes / max(profile.n_params, 1)


def sharded_requests(config: Config, units: Sequence[Unit], profile: Profile) -> list[NetRequest]:
    """The bandwidth questions a sharded configuration asks, in the order :func:`sharded_comm` reads the
    answers: gathers, reduce-scatters and (HSDP) allreduces, each followed by the cap grid."""
    instances = tuple(g.instance for g in config.groups)
    each = gather_bytes_each(profile)
    gathers = np.array([u.numel * each for u in units], dtype=float)
    reduces = np.array([u.numel * REDUCE_BYTES for u in units], dtype=float)
    with_grid = lambda sizes: np.concatenate([sizes, CAP_GRID_BYTES])  # noqa: E731
    if config.parallelism == "fsdp":
        world, nodes = config.world_size, config.n_vms
        return [
            NetRequest(with_grid(gathers), world, nodes, instances, "all_gather"),
            NetRequest(with_grid(reduces), world, nodes, instances, "reduce_scatter"),
        ]
    d = config.shard_size
    return [
        NetRequest(with_grid(gathers), d, 1, instances, "all_gather"),
        NetRequest(with_grid(reduces), d, 1, instances, "reduce_scatter"),
        NetRequest(with_grid(reduces / d), config.n_vms, config.n_vms, instances, "allreduce", d),
    ]


def sharded_comm(config: Config, units: Sequence[Unit], profile: Profile, net: BusBandwidthModel) -> ShardedComm:
    """Every unit's transfers for ``config`` (``fsdp`` or ``hsdp``) from one bandwidth-model call."""
    return comm_from_answers(config, units, profile, config_busbw_many(net, sharded_requests(config, units, profile)))


def comm_from_answers(
    config: Config, units: Sequence[Unit], profile: Profile, answers: Sequence[NDArray[np.float64]]
) -> ShardedComm:
    """The transfers of :func:`sharded_comm` from the answers to :func:`sharded_requests`."""
    n = len(units)
    each = gather_bytes_each(profile)
    grid = len(CAP_GRID_BYTES)
    reduce: tuple[tuple[Transfer, ...], ...]
    if config.parallelism == "fsdp":
        world = config.world_size
        ag_bw, rs_bw = answers[0][:n], answers[1][:n]
        cap = float(max(np.max(answers[0][n:]), np.max(answers[1][n:])))
        gather = tuple(
            Transfer(float(bus_bytes(u.numel * each, world, "all_gather")), float(bw), 0)
            for u, bw in zip(units, ag_bw, strict=True)
        )
        reduce = tuple(
            (Transfer(float(bus_bytes(u.numel * REDUCE_BYTES, world, "reduce_scatter")), float(bw), 0),)
            for u, bw in zip(units, rs_bw, strict=True)
        )
        return ShardedComm(gather, reduce, (cap, cap), 2 * n if world > 1 else 0)
    d, vms = config.shard_size, config.n_vms
    ag_bw, rs_bw, ar_bw = answers[0][:n], answers[1][:n], answers[2][:n]
    intra_cap = float(max(np.max(answers[0][n:]), np.max(answers[1][n:])))
    net_cap = float(np.max(answers[2][n : n + grid])) if vms > 1 else float("inf")
    gather = tuple(
        Transfer(float(bus_bytes(u.numel * each, d, "all_gather")), float(bw), 1)
        for u, bw in zip(units, ag_bw, strict=True)
    )
    reduce = tuple(
        (
            Transfer(float(bus_bytes(u.numel * REDUCE_BYTES, d, "reduce_scatter")), float(rs), 1),
            Transfer(float(bus_bytes(u.numel * REDUCE_BYTES / d, vms, "allreduce")), float(ar), 0),
        )
        for u, rs, ar in zip(units, rs_bw, ar_bw, strict=True)
    )
    return ShardedComm(gather, reduce, (net_cap, intra_cap), 3 * n)


@dataclass(frozen=True)
class ShardedCompute:
    """The slowest group's mean compute at its batch (ms) under the configuration's sharding."""

    fw_ms: float
    bwd_ms: float
    step_ms: float


def checkpointed_bwd_ms(profile: Profile, fw_ms: float, bwd_ms: float) -> float:
    """Backward time with every block checkpointed: the measured slowdown, or one more forward."""
    slowdown = profile.extra.get("checkpointing_bwd_slowdown") if profile.extra else None
    return bwd_ms * float(slowdown) if slowdown else bwd_ms + fw_ms


def unit_steps(shares: UnitShares, comm: ShardedComm, fw_s: float, bwd_s: float, one_gpu: bool) -> list[UnitSteps]:
    """Each unit's compute (s) and transfers; blocks are gathered again for backward, the root is not."""
    steps = []
    for i, unit in enumerate(shares.units):
        gather = None if one_gpu else comm.gather[i]
        steps.append(
            UnitSteps(
                fw_s * shares.fw[i],
                bwd_s * shares.bwd[i],
                gather,
                None if unit.is_root else gather,
                () if one_gpu else comm.reduce[i],
            )
        )
    return steps


def timeline_curve(
    shares: UnitShares,
    comm: ShardedComm,
    compute: ShardedCompute,
    shard_size: int,
    one_gpu: bool,
    grid: NDArray[np.float64],
    factors: OverlapFactors | None = None,
) -> tuple[NDArray[np.float64], TimelineResult]:
    """Iteration time (s) at each compute scale of ``grid`` (made non-decreasing), and the timeline at scale 1
    (``grid`` holds it)."""
    step_s = compute.step_ms * MS / shard_size
    times = []
    middle: TimelineResult | None = None
    for k in grid:
        steps = unit_steps(shares, comm, compute.fw_ms * MS * k, compute.bwd_ms * MS * k, one_gpu)
        result = run_timeline(steps, step_s, comm.caps_bytes_per_s, factors)
        times.append(result.end_s)
        if k == 1.0:
            middle = result
    if middle is None:
        raise ValueError("the compute-scale grid must hold 1.0")
    return np.maximum.accumulate(np.asarray(times)), middle


def slowest_instance(config: Config, means_ms: Sequence[float]) -> InstanceType:
    """The instance type of the group with the largest mean compute."""
    return config.groups[int(np.argmax(means_ms))].instance


def simulate_sharded(sim: Simulator, config: Config, rng: np.random.Generator) -> SimResult:
    """Predict the iteration-time distribution of a ``fsdp`` or ``hsdp`` configuration with ``sim``'s profiles,
    bandwidth model and options (see the module docstring)."""
    iters = sim.options.iters
    groups = config.groups
    profiles = [sim.profile_for(g.instance) for g in groups]
    computes = [sim._group_compute(p, g.local_batch) for p, g in zip(profiles, groups, strict=True)]
    ranks = np.array([g.n_gpus for g in groups], dtype=float)
    u = rng.random((iters, len(groups)))
    z = normal_quantile(u ** (1.0 / ranks))
    means = np.array([c.fw_ms + c.bwd_ms for c in computes])
    stds = np.array([c.compute_std_ms for c in computes])
    totals = means + stds * z
    slowest_index = int(np.argmax(means))
    slowest = groups[slowest_index]
    profile = profiles[slowest_index]
    mean = computes[slowest_index]
    scale = np.maximum(totals.max(axis=1), 1e-12) / max(means[slowest_index], 1e-12)
    cv = mean.compute_std_ms / max(means[slowest_index], 1e-12)
    curve = _curve(sim, config, slowest.instance, profile, slowest.local_batch, mean, cv)
    factor = sim._comm_factors(curve.spread, rng)
    t_iter = factor * curve_at(scale / factor, curve.grid, curve.times)
    model = curve.model
    if sim.options.interference and profile.interference is not None and config.world_size > 1:
        t_iter, others = _other_groups_finish(sim, config, profiles, computes, totals, slowest_index, factor, t_iter)
        if others:
            model += "; the collectives wait for every type, each slowed by its own: " + "; ".join(others)
    ordered = np.sort(t_iter)
    iter_mean = float(ordered.sum()) / iters
    p5, p50, p95 = (float(np.percentile(ordered, q)) for q in (5.0, 50.0, 95.0))
    bwd_ms = checkpointed_bwd_ms(profile, mean.fw_ms, mean.bwd_ms) if config.checkpointing else mean.bwd_ms
    estimated = any(p.is_estimate for p in profiles)
    error_rel = max(p.expected_error for p in profiles) * min(curve.compute_s / max(iter_mean, 1e-12), 1.0)
    return SimResult(
        config=config.notation(),
        world_size=config.world_size,
        global_batch=config.global_batch,
        iters=iters,
        iter_mean_s=iter_mean,
        iter_std_s=float(np.std(ordered, ddof=1)) if iters > 1 else 0.0,
        iter_p5_s=p5,
        iter_p50_s=p50,
        iter_p95_s=p95,
        fw_mean_s=mean.fw_ms * MS,
        bwd_mean_s=bwd_ms * MS,
        step_mean_s=mean.step_ms * MS / config.shard_size,
        pe_mean_s=curve.comm_end_s,
        comm_exposed_mean_s=max(iter_mean - curve.compute_s, 0.0),
        throughput_samples_per_s=config.global_batch / iter_mean,
        b_cap_bytes_per_s=curve.cap_bytes_per_s,
        n_transfers=curve.n_transfers,
        slowest_group=slowest.notation(),
        estimated_profiles=estimated,
        iter_mean_error_s=error_rel * iter_mean,
        parallelism=config.parallelism,
        iteration_model=model,
    )


def _other_groups_finish(
    sim: Simulator,
    config: Config,
    profiles: list[Profile],
    computes: list[Any],
    totals: NDArray[np.float64],
    slowest_index: int,
    factor: NDArray[np.float64],
    t_iter: NDArray[np.float64],
) -> tuple[NDArray[np.float64], list[str]]:
    """The iteration times (s) with every other group whose profile measured its own interference run through
    its own timeline (its compute, its draws ``totals``, its factors), the latest finish kept; and those groups'
    records in words. Collectives move at the pace of their slowest participant, and a type with less compute
    but a smaller CPU share may be slowed most by its own (:mod:`srifty.sim.simulator` does the same for DDP)."""
    others: list[str] = []
    means = np.array([c.fw_ms + c.bwd_ms for c in computes])
    for index, (group, profile) in enumerate(zip(config.groups, profiles, strict=True)):
        measured = profile.interference
        if index == slowest_index or measured is None:
            continue
        compute = computes[index]
        mean_ms = max(float(means[index]), 1e-12)
        curve = _curve(
            sim, config, group.instance, profile, group.local_batch, compute, compute.compute_std_ms / mean_ms
        )
        scale = np.maximum(totals[:, index], 1e-12) / mean_ms
        t_iter = np.maximum(t_iter, factor * curve_at(scale / factor, curve.grid, curve.times))
        others.append(f"{group.notation()}: {measured.summary()}")
    return t_iter, others


def _shares(sim: Simulator, profile: Profile) -> UnitShares:
    """:func:`unit_shares` of ``profile``, cached."""
    key = ("shares", id(profile))
    if key not in sim._sharded_cache:
        sim._sharded_cache[key] = unit_shares(profile)
    return sim._sharded_cache[key]


def _comm_key(config: Config, profile: Profile) -> tuple[object, ...]:
    types = tuple(sorted({(g.instance.name, g.instance.region) for g in config.groups}))
    return ("comm", id(profile), config.parallelism, config.world_size, config.n_vms, types)


def prefetch_sharded(sim: Simulator, configs: Sequence[Config]) -> None:
    """Ask the bandwidth model about every sharded configuration of ``configs`` at once (one call for the
    bus bandwidths, one for the spreads), for each group's profile, so :func:`simulate_sharded` finds them."""
    pending: dict[tuple[object, ...], tuple[Config, Profile, UnitShares]] = {}
    for config in configs:
        if config.world_size <= 1:
            continue
        for group in config.groups:
            profile = sim.profile_for(group.instance)
            key = _comm_key(config, profile)
            if key not in sim._sharded_cache and key not in pending:
                pending[key] = (config, profile, _shares(sim, profile))
    if pending:
        _fill_comm(sim, pending)


def _fill_comm(sim: Simulator, pending: dict[tuple[object, ...], tuple[Config, Profile, UnitShares]]) -> None:
    asked = {key: sharded_requests(c, s.units, p) for key, (c, p, s) in pending.items()}
    flat = [r for requests in asked.values() for r in requests]
    answers = iter(config_busbw_many(sim.net_model, flat))
    firsts = [replace(rs[0], sizes_bytes=rs[0].sizes_bytes[: len(pending[k][2].units)]) for k, rs in asked.items()]
    spreads = spread_many(sim.net_model, firsts) if sim.options.net_spread_scale > 0 else [None] * len(firsts)
    for (key, (config, profile, shares)), requests, spread in zip(
        pending.items(), asked.values(), spreads, strict=True
    ):
        comm = comm_from_answers(config, shares.units, profile, [next(answers) for _ in requests])
        sim._sharded_cache[key] = (comm, spread)


def _comm(sim: Simulator, config: Config, profile: Profile, shares: UnitShares) -> tuple[ShardedComm, Any]:
    """``config``'s transfers and network spread (quantiles of the log busbw residual, or ``None``), cached."""
    key = _comm_key(config, profile)
    if key not in sim._sharded_cache:
        _fill_comm(sim, {key: (config, profile, shares)})
    comm, spread = sim._sharded_cache[key]
    return comm, spread


@dataclass(frozen=True)
class _Curve:
    grid: NDArray[np.float64]
    times: NDArray[np.float64]
    compute_s: float
    comm_end_s: float
    cap_bytes_per_s: float
    n_transfers: int
    spread: NDArray[np.float64] | None
    model: str


def _curve(
    sim: Simulator,
    config: Config,
    slowest: InstanceType,
    profile: Profile,
    batch: int,
    mean: Any,
    cv: float,
) -> _Curve:
    """The timeline at three compute scales around the mean, cached by everything it depends on."""
    types = tuple(sorted({(g.instance.name, g.instance.region) for g in config.groups}))
    key = (
        id(profile),
        slowest.name,
        batch,
        config.world_size,
        config.n_vms,
        types,
        config.parallelism,
        config.checkpointing,
        sim.options,
    )
    hit = sim._sharded_cache.get(key)
    if hit is not None:
        return hit
    shares = _shares(sim, profile)
    comm, found = _comm(sim, config, profile, shares)
    bwd_ms = checkpointed_bwd_ms(profile, mean.fw_ms, mean.bwd_ms) if config.checkpointing else mean.bwd_ms
    compute = ShardedCompute(mean.fw_ms, bwd_ms, mean.step_ms)
    grid = np.array([max(1.0 - 3.0 * cv, 0.05), 1.0, 1.0 + 3.0 * cv])
    one_gpu = config.world_size <= 1
    measured = profile.interference if sim.options.interference and not one_gpu else None
    factors = None if measured is None else measured.factors()
    times, middle = timeline_curve(shares, comm, compute, config.shard_size, one_gpu, grid, factors)
    compute_s = middle.compute_s
    spread = None
    if sim.options.net_spread_scale > 0 and not one_gpu and found is not None:
        spread = log_time_factors(found, sim.options.net_spread_scale)
    hit = _Curve(
        grid,
        times,
        compute_s,
        max(middle.comm_end_s - middle.forward_end_s, 0.0),
        float(min(comm.caps_bytes_per_s)),
        comm.n_transfers,
        spread,
        f"{config.parallelism} timeline, "
        + (
            f"measured interference ({profile.device.label}): {measured.summary()}"
            if measured is not None
            else "compute and communication not slowing each other"
            + (" (one GPU)" if one_gpu else f" (no interference measured on {profile.device.label})")
        ),
    )
    sim._sharded_cache[key] = hit
    return hit
