"""Will the model fit? Per-GPU memory of configurations under each data-parallel strategy, and the spec-wide
check that some GPU on offer can hold the job at all.

The memory model itself is :mod:`srifty.compute.sharding`; this module applies it to instance types and
configurations: which strategies and activation-checkpointing settings a spec allows, the largest local batch a
type holds under the most favourable of them (the planner's batch range), and, when nothing on offer holds
even one sample per GPU, an :class:`~srifty.errors.InfeasiblePlanError` that names the memory needed and what
would fit (sharding over enough GPUs, activation checkpointing, or a GPU with more memory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from srifty.catalog import Catalog, InstanceType
from srifty.compute import (
    MemoryInputs,
    Profile,
    Strategy,
    gpu_options,
    max_batch_for,
    memory_inputs,
    min_shard_size,
    peak_memory,
    usable_bytes,
)
from srifty.errors import InfeasiblePlanError, ProfileError
from srifty.plan.build import knee_floor, max_batch_on
from srifty.sim import profile_for
from srifty.spec import JobSpec

GIB = 2.0**30


@dataclass(frozen=True)
class Sharding:
    """How one configuration spreads the model: a strategy, the GPUs one copy of the model state is sharded
    over, and whether every block is activation-checkpointed."""

    strategy: Strategy = "ddp"
    shard_size: int = 1
    checkpointing: bool = False

    def describe(self) -> str:
        """``"ddp"``, ``"fsdp over 8 GPUs"``, ``"hsdp (4 GPUs per shard group), checkpointed"``."""
        text = {
            "ddp": "ddp",
            "fsdp": f"fsdp over {self.shard_size} GPUs",
            "hsdp": f"hsdp ({self.shard_size} GPUs per shard group)",
        }[self.strategy]
        return text + (", activation checkpointing" if self.checkpointing else "")


def allowed_strategies(spec: JobSpec) -> tuple[Strategy, ...]:
    """The strategies ``spec`` lets the planner use (``auto``: every one, DDP first)."""
    if spec.parallelism == "auto":
        return ("ddp", "hsdp", "fsdp")
    return (spec.parallelism,)


def checkpointing_choices(spec: JobSpec, profile: Profile) -> tuple[bool, ...]:
    """Activation-checkpointing settings ``spec`` allows with ``profile`` (``auto``: on only where the profile
    measured it).

    Raises:
        ProfileError: ``activation_checkpointing: on`` with a profile that did not measure it.
    """
    measured = bool(profile.extra) and "checkpointed_per_sample_bytes" in profile.extra
    if spec.activation_checkpointing == "off":
        return (False,)
    if spec.activation_checkpointing == "on":
        if not measured:
            raise ProfileError(
                f"activation_checkpointing is on, but the profile of {profile.model} on {profile.device.label} did "
                "not measure it; profile with `srifty profile --checkpointing`, or set it to auto or off"
            )
        return (True,)
    return (False, True) if measured else (False,)


def type_max_batch(
    profile: Profile, instance: InstanceType, sharding: Sharding, inputs: MemoryInputs | None = None
) -> int:
    """Largest local batch one GPU of ``instance`` holds under ``sharding`` (0: not even the model state);
    ``inputs`` are ``profile``'s memory inputs where the caller has them.

    A DDP profile measured on that very GPU, whose search stopped at its memory, caps the model's answer.
    """
    if sharding == Sharding():
        return max_batch_on(profile, instance, inputs)
    options = gpu_options(sharding.strategy, sharding.shard_size, sharding.checkpointing)
    return max_batch_for(inputs or memory_inputs(profile), options, instance.gpu_memory_bytes)


def widest_shardings(spec: JobSpec, profile: Profile, instance: InstanceType, max_gpus: int) -> list[Sharding]:
    """Each allowed strategy at its most favourable shard size for ``instance`` (FSDP over ``max_gpus``, HSDP
    over one VM's GPUs where it has several), with each allowed checkpointing setting."""
    out = []
    for strategy in allowed_strategies(spec):
        if strategy == "hsdp" and instance.gpus_per_vm < 2:
            continue
        size = {"ddp": 1, "fsdp": max(max_gpus, 1), "hsdp": instance.gpus_per_vm}[strategy]
        out += [Sharding(strategy, size, ckpt) for ckpt in checkpointing_choices(spec, profile)]
    return out


@dataclass(frozen=True)
class StrategyLimits:
    """Batch limits (:class:`~srifty.plan.build.BatchLimits`) under the strategies a spec allows: each type's
    largest batch under the most favourable of them. Whether a configuration fits with the strategy it runs
    is checked per configuration (:func:`config_memory`).

    Attributes:
        max_gpus: the most GPUs a configuration could shard over (all the offers' quotas together).
    """

    spec: JobSpec
    profiles: Mapping[str, Profile]
    max_gpus: int
    _inputs: dict[int, MemoryInputs] = field(default_factory=dict, compare=False, repr=False)

    def max_batch(self, instance: InstanceType) -> int:
        profile = profile_for(self.profiles, instance)
        # each profile's memory inputs once (by id: the profiles are held by ``profiles``), not once per type
        inputs = self._inputs.get(id(profile))
        if inputs is None:
            inputs = self._inputs[id(profile)] = memory_inputs(profile)
        return max(
            (
                type_max_batch(profile, instance, s, inputs)
                for s in widest_shardings(self.spec, profile, instance, self.max_gpus)
            ),
            default=0,
        )

    def knee_batch(self, instance: InstanceType) -> int:
        return knee_floor(profile_for(self.profiles, instance))


def require_some_fit(
    spec: JobSpec, instances: Sequence[InstanceType], profiles: Mapping[str, Profile], catalog: Catalog, max_gpus: int
) -> None:
    """Refuse a job no offered GPU can hold even one sample of, under any strategy the spec allows.

    Raises:
        InfeasiblePlanError: binding constraint ``memory``; the message names the memory one GPU needs, the
            largest GPU on offer and what would fit.
    """
    for instance in instances:
        profile = profile_for(profiles, instance)
        if any(type_max_batch(profile, instance, s) >= 1 for s in widest_shardings(spec, profile, instance, max_gpus)):
            return
    biggest = max(instances, key=lambda i: (i.gpu_memory_bytes, i.gpus_per_vm))
    profile = profile_for(profiles, biggest)
    raise InfeasiblePlanError(memory_message(spec, profile, biggest, catalog, max_gpus), "memory")


def memory_message(spec: JobSpec, profile: Profile, instance: InstanceType, catalog: Catalog, max_gpus: int) -> str:
    """Why nothing fits (the memory one sample needs per GPU on ``instance``, the largest GPU on offer, under the
    spec's strategies) and what would fit."""
    inputs = memory_inputs(profile)
    strategies = allowed_strategies(spec)
    first = strategies[0] if len(strategies) == 1 else "ddp"
    shard = 1 if first == "ddp" else (instance.gpus_per_vm if first == "hsdp" else max(max_gpus, 1))
    need = peak_memory(inputs, gpu_options(first, shard), 1.0)
    room = usable_bytes(instance.gpu_memory_bytes)
    how = {"ddp": "with DDP", "fsdp": f"sharded over {shard} GPUs", "hsdp": f"sharded over one VM's {shard} GPUs"}
    text = (
        f"no configuration fits in GPU memory (memory binds): {profile.model} does not fit one GPU {how[first]}: "
        f"one sample per GPU needs {need.describe()}, and the largest GPU on offer, {instance.gpu_name} "
        f"({instance.name}), has {instance.gpu_memory_bytes / GIB:.0f} GiB of which {room / GIB:.1f} GiB is usable."
    )
    return text + " What would fit: " + "; or ".join(_what_would_fit(spec, profile, inputs, instance, catalog)) + "."


def _what_would_fit(
    spec: JobSpec, profile: Profile, inputs: MemoryInputs, instance: InstanceType, catalog: Catalog
) -> list[str]:
    ideas = []
    for checkpointing in (False, True) if "checkpointed_per_sample_bytes" in (profile.extra or {}) else (False,):
        needed = min_shard_size(inputs, instance.gpu_memory_bytes, checkpointing)
        if needed:
            vms = -(-needed // instance.gpus_per_vm)
            extra = " and activation_checkpointing: on" if checkpointing else ""
            ideas.append(
                f"`parallelism: fsdp`{extra} over at least {needed} {instance.gpu_name} GPUs "
                f"({vms} × {instance.name}{', quota permitting' if spec.parallelism != 'fsdp' else ''})"
            )
            break
    ddp_need = peak_memory(inputs, gpu_options("ddp"), 1.0).total_bytes
    bigger = sorted(
        (s for s in catalog.gpu_specs.values() if usable_bytes(s.memory_bytes) >= ddp_need),
        key=lambda s: s.memory_bytes,
    )
    if bigger:
        names = ", ".join(f"{s.name} ({s.memory_bytes / GIB:.0f} GiB)" for s in bigger[:3])
        ideas.append(f"DDP on a GPU with at least {ddp_need / GIB:.1f} GiB usable, such as {names}")
    if not ideas:
        ideas.append("a smaller model, or a profile measured with `srifty profile --checkpointing`")
    return ideas
