"""The data-parallel strategy of each configuration: DDP, FSDP or HSDP, with or without activation
checkpointing, chosen per configuration among those that fit in memory.

:class:`ShardingChooser` wraps a predictor. For a configuration it lists the strategies the spec allows whose
predicted peak memory fits every group's GPUs at its local batch (:mod:`srifty.plan.memory`), then:

* DDP without checkpointing, where it fits, is taken as it is: it moves ``2·(n−1)/n`` of the parameters per
  rank against sharding's ``3·(n−1)/n`` (a second all-gather in backward) and has no gather, copy or
  reshard work; the simulator's FSDP timeline leaves those per-collective overheads out, so ranking the two
  on a few per cent of predicted difference would favour sharding on what it does not model;
* otherwise every fitting option (HSDP and FSDP, DDP with checkpointing; a strategy with checkpointing only
  where it does not fit without, since recomputing only adds compute) is predicted and the fastest is taken;
* where nothing fits, the DDP prediction is returned marked ``fits_memory=False`` (scoring reports a
  ``memory`` violation).

Predictors that only know DDP (the baselines) are offered DDP alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from srifty.compute import MemoryInputs, Profile, gpu_options, memory_inputs, peak_memory, usable_bytes
from srifty.plan.memory import Sharding, allowed_strategies, checkpointing_choices, type_max_batch
from srifty.plan.predict import Estimate, Predictor
from srifty.sim import profile_for
from srifty.spec import JobSpec
from srifty.vocab import Config


@dataclass(frozen=True)
class MemoryFit:
    """Whether ``config`` fits under a sharding, and the fullest GPU's predicted peak against its usable memory."""

    fits: bool
    peak_bytes: float
    usable_bytes: float


@dataclass
class MemoryMemo:
    """What :func:`config_memory` computed before, for one planner's search (every key names the profile by
    ``id``, so a memo must not outlive the profiles it was filled from)."""

    inputs: dict[int, MemoryInputs] = field(default_factory=dict)
    limits: dict[tuple[int, str, Sharding], int] = field(default_factory=dict)
    peaks: dict[tuple[int, Sharding, int], float] = field(default_factory=dict)
    configs: dict[Config, MemoryFit] = field(default_factory=dict)


def config_memory(
    config: Config,
    profiles: Mapping[str, Profile],
    memo: MemoryMemo | None = None,
) -> MemoryFit:
    """Memory of ``config`` under its own parallelism and checkpointing: every group's local batch must fit
    its GPUs; the reported peak is the group closest to (or furthest over) its GPUs' memory. ``memo`` caches
    each profile's memory inputs and every answer across calls (the same answers: the limits and peaks are
    pure functions of profile, GPU, strategy and batch)."""
    if memo is not None and config in memo.configs:
        return memo.configs[config]
    sharding = Sharding(config.parallelism, config.shard_size, config.checkpointing)
    cache = memo.inputs if memo is not None else {}
    fits = True
    worst: tuple[float, float, float] | None = None
    for group in config.groups:
        profile = profile_for(profiles, group.instance)
        known = cache.get(id(profile))
        if known is None:
            known = cache[id(profile)] = memory_inputs(profile)
        limit_key = (id(profile), group.instance.name, sharding)
        limit = memo.limits.get(limit_key) if memo is not None else None
        if limit is None:
            limit = type_max_batch(profile, group.instance, sharding, known)
            if memo is not None:
                memo.limits[limit_key] = limit
        fits = fits and group.local_batch <= limit
        peak_key = (id(profile), sharding, group.local_batch)
        peak = memo.peaks.get(peak_key) if memo is not None else None
        if peak is None:
            options = gpu_options(sharding.strategy, sharding.shard_size, sharding.checkpointing)
            peak = peak_memory(known, options, group.local_batch).total_bytes
            if memo is not None:
                memo.peaks[peak_key] = peak
        room = usable_bytes(group.instance.gpu_memory_bytes)
        if worst is None or peak / room > worst[0]:
            worst = (peak / room, peak, room)
    assert worst is not None
    answer = MemoryFit(fits, worst[1], worst[2])
    if memo is not None:
        memo.configs[config] = answer
    return answer


def sharding_options(config: Config, spec: JobSpec, profiles: Mapping[str, Profile], sharded: bool) -> list[Config]:
    """``config`` under each strategy and checkpointing setting the spec allows (DDP only unless ``sharded``),
    in order of preference: DDP, HSDP, FSDP, each without checkpointing first."""
    profile = profile_for(profiles, config.groups[0].instance)
    out = []
    for checkpointing in checkpointing_choices(spec, profile):
        for strategy in allowed_strategies(spec):
            if strategy != "ddp" and not sharded:
                continue
            if strategy == "hsdp" and (config.n_vms < 2 or len({g.instance.gpus_per_vm for g in config.groups}) > 1):
                continue
            if strategy == "hsdp" and config.groups[0].instance.gpus_per_vm < 2:
                continue
            out.append(config.sharded(strategy, checkpointing))
    return out


class ShardingChooser:
    """A predictor that chooses each configuration's strategy (see the module docstring).

    Args:
        inner: the predictor of iteration time.
        spec: what the job allows (``parallelism``, ``activation_checkpointing``).
        profiles: compute profiles by instance type or GPU name (their memory models).
        sharded: whether ``inner`` predicts FSDP and HSDP (srifty's simulator does; the baselines do not).
    """

    def __init__(self, inner: Predictor, spec: JobSpec, profiles: Mapping[str, Profile], sharded: bool) -> None:
        self.inner = inner
        self.name = inner.name
        self.spec = spec
        self.profiles = profiles
        self.sharded = sharded
        self._memo = MemoryMemo()

    def prefetch(self, configs: Sequence[Config]) -> None:
        """Pass a search space to the inner predictor's prefetch (if it has one): as DDP, and, where DDP does
        not fit, as each sharded strategy that does (one bandwidth-model call for all of them)."""
        prefetch = getattr(self.inner, "prefetch", None)
        if prefetch is None:
            return
        asked = list(configs)
        for config in configs:
            if self._memory(config).fits:
                continue
            options = sharding_options(config, self.spec, self.profiles, self.sharded)
            asked += [c for c in options if c.parallelism != "ddp" and self._memory(c).fits]
        prefetch(asked)

    def _memory(self, config: Config) -> MemoryFit:
        return config_memory(config, self.profiles, memo=self._memo)

    def predict(self, config: Config) -> Estimate:
        options = sharding_options(config, self.spec, self.profiles, self.sharded)
        if options and options[0].parallelism == "ddp" and not options[0].checkpointing:
            memory = self._memory(options[0])
            if memory.fits:  # taken as it is (see the module docstring): the others need not be weighed
                return self._estimate(options[0], memory, fits=True)
        fitted = [(c, self._memory(c)) for c in options]
        fitting = [(c, m) for c, m in fitted if m.fits]
        if not fitting:
            first, memory = fitted[0] if fitted else (config, self._memory(config))
            return self._estimate(first, memory, fits=False)
        best: Estimate | None = None
        plain = {c.parallelism for c, _ in fitting if not c.checkpointing}
        for candidate, memory in fitting:
            if candidate.checkpointing and candidate.parallelism in plain:
                continue  # the same strategy fits without recomputing: checkpointing only adds compute
            estimate = self._estimate(candidate, memory, fits=True)
            if candidate.parallelism == "ddp" and not candidate.checkpointing:
                return estimate
            if best is None or estimate.iter_mean_s < best.iter_mean_s:
                best = estimate
        assert best is not None
        return best

    def _estimate(self, config: Config, memory: MemoryFit, fits: bool) -> Estimate:
        estimate = self.inner.predict(config)
        return dataclasses.replace(
            estimate,
            parallelism=config.parallelism,
            checkpointing=config.checkpointing,
            fits_memory=fits,
            memory_peak_bytes=memory.peak_bytes,
            memory_usable_bytes=memory.usable_bytes,
        )
