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
from dataclasses import dataclass

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


def config_memory(
    config: Config, profiles: Mapping[str, Profile], inputs: dict[int, MemoryInputs] | None = None
) -> MemoryFit:
    """Memory of ``config`` under its own parallelism and checkpointing: every group's local batch must fit
    its GPUs; the reported peak is the group closest to (or furthest over) its GPUs' memory. ``inputs``
    caches each profile's memory inputs (by ``id``) across calls."""
    sharding = Sharding(config.parallelism, config.shard_size, config.checkpointing)
    cache = {} if inputs is None else inputs
    fits = True
    worst: tuple[float, float, float] | None = None
    for group in config.groups:
        profile = profile_for(profiles, group.instance)
        known = cache.get(id(profile))
        if known is None:
            known = cache[id(profile)] = memory_inputs(profile)
        limit = type_max_batch(profile, group.instance, sharding, known)
        fits = fits and group.local_batch <= limit
        options = gpu_options(sharding.strategy, sharding.shard_size, sharding.checkpointing)
        peak = peak_memory(known, options, group.local_batch).total_bytes
        room = usable_bytes(group.instance.gpu_memory_bytes)
        if worst is None or peak / room > worst[0]:
            worst = (peak / room, peak, room)
    assert worst is not None
    return MemoryFit(fits, worst[1], worst[2])


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
        self._inputs: dict[int, MemoryInputs] = {}

    def prefetch(self, configs: Sequence[Config]) -> None:
        """Pass a search space to the inner predictor's prefetch (if it has one): as DDP, and, where DDP does
        not fit, as each sharded strategy that does (one bandwidth-model call for all of them)."""
        prefetch = getattr(self.inner, "prefetch", None)
        if prefetch is None:
            return
        asked = list(configs)
        for config in configs:
            if config_memory(config, self.profiles, self._inputs).fits:
                continue
            options = sharding_options(config, self.spec, self.profiles, self.sharded)
            asked += [
                c for c in options if c.parallelism != "ddp" and config_memory(c, self.profiles, self._inputs).fits
            ]
        prefetch(asked)

    def predict(self, config: Config) -> Estimate:
        options = sharding_options(config, self.spec, self.profiles, self.sharded)
        fitted = [(c, config_memory(c, self.profiles, self._inputs)) for c in options]
        fitting = [(c, m) for c, m in fitted if m.fits]
        if not fitting:
            first, memory = fitted[0] if fitted else (config, config_memory(config, self.profiles, self._inputs))
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
