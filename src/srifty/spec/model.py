"""The job spec: what the user asks for. Validated at the edge; unknown keys are rejected.

A spec says which model to train, with what global batch and for how many iterations, what to optimise
(``min_time`` or ``min_cost``) under which deadline and budget (each to be met with probability
``confidence``), and which instance types (with market and
quota) may be rented: a list of candidates, or ``candidates: auto`` (the default) for every GPU type of the
bundled catalog in the chosen clouds and regions, narrowed by ``filter`` and capped by ``default_quota`` and
``quota``. Units are in the field names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

SPEC_SCHEMA_VERSION = 1

Goal = Literal["min_time", "min_cost"]
Precision = Literal["fp32", "bf16", "fp16"]
Cloud = Literal["aws", "gcp", "azure"]
#: How the job spreads the model over its GPUs: ``ddp`` replicates it on every GPU; ``fsdp`` shards
#: parameters, gradients and optimizer state over all of them (FSDP2 ``fully_shard``, ZeRO-3); ``hsdp``
#: shards inside each VM and replicates across VMs; ``auto`` lets the planner pick per configuration.
Parallelism = Literal["auto", "ddp", "fsdp", "hsdp"]
#: Activation checkpointing of each sharding unit (a transformer block): ``auto`` lets the planner turn it
#: on where a configuration would not fit without it (it costs a second forward in backward).
Checkpointing = Literal["auto", "on", "off"]


def _on_off(value: Any) -> Any:
    """YAML's ``true``/``false`` (and ``yes``/``no``) mean ``on``/``off``."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return value


#: VMs of each (instance type, market) that ``candidates: auto`` may rent unless ``quota`` says otherwise.
DEFAULT_QUOTA = 8


def _market_alias(value: Any) -> Any:
    """``on-demand``, ``On Demand`` and ``ondemand`` mean ``on_demand``; ``Spot`` means ``spot``."""
    if not isinstance(value, str):
        return value
    key = value.strip().lower().replace("-", "_").replace(" ", "_")
    return "on_demand" if key == "ondemand" else key


#: A market, with the common spellings accepted (see :func:`_market_alias`).
Market = Annotated[Literal["spot", "on_demand"], BeforeValidator(_market_alias)]

#: Ceilings far above any real job, so that an absurd number gets a clear message, not hours of search:
#: 2**24 samples per iteration (the largest published global batches are ~10**5–10**6 samples) and
#: 100,000 VMs of one type.
MAX_GLOBAL_BATCH = 2**24
MAX_QUOTA = 100_000

#: ``goal: min_time`` without ``time_tolerance``: the cheapest configuration within 3 % of the fastest job time.
#: Near the fastest, time is flat and cost is steep (a job of 175 s could spend 9x the money to finish 0.5 %
#: sooner), so the last few percent are rarely worth it.
DEFAULT_TIME_TOLERANCE = 0.03

# Paper (section "Continual Optimization", evaluation): EC2 launch expected 150 s, EBS detach 5 s.
DEFAULT_VM_LAUNCH_S = 150.0
DEFAULT_CHECKPOINT_RESTORE_S = 5.0
#: The probability with which a plan must meet its deadline and its budget, unless the spec says otherwise.
DEFAULT_CONFIDENCE = 0.9


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class ModelSpec(_Strict):
    """Which network to train, and where its compute profiles come from.

    ``name`` is a model the profiler knows: a torchvision name (``resnet50``), a Hugging Face config
    (``hf:bert-base``) or the user's ``package.module:factory``. ``profiles`` are measured or estimated
    profile files (one per GPU type), relative to the spec file; without them the bundled profiles for
    ``name`` are used.
    """

    name: str | None = Field(default=None, min_length=1)
    precision: Precision = "fp32"
    seq_len: PositiveInt | None = None
    profiles: tuple[Path, ...] = ()

    @model_validator(mode="after")
    def _needs_name_or_profiles(self) -> ModelSpec:
        if self.name is None and not self.profiles:
            raise ValueError("model needs a `name` (for example resnet50) or a list of `profiles` files")
        return self


class CandidateSpec(_Strict):
    """One instance type the planner may rent, on one market, at most ``quota`` VMs of it.

    ``region`` and ``cloud`` pin it to one region or cloud (default: every region of the spec's clouds and
    regions where the catalog offers it, with ``quota`` VMs in each); ``zone`` pins it to one zone.
    """

    instance_type: str = Field(min_length=1)
    market: Market = "on_demand"
    quota: PositiveInt = Field(le=MAX_QUOTA)
    zone: str | None = None
    region: str | None = Field(default=None, min_length=1)
    cloud: Cloud | None = None


class CandidateFilter(_Strict):
    """Which catalog types ``candidates: auto`` considers (every GPU type when empty).

    Attributes:
        gpus: GPU names (as in ``srifty catalog list``, case-insensitive); empty keeps every GPU.
        max_gpus_per_vm: drop types with more GPUs per VM.
        market: ``spot`` (spot only) or ``on_demand`` (on-demand only); absent keeps both.
    """

    gpus: tuple[str, ...] = ()
    max_gpus_per_vm: PositiveInt | None = None
    market: Market | None = None


class OverheadSpec(_Strict):
    """Fixed costs of (re)starting a configuration, in seconds."""

    vm_launch_s: float = Field(default=DEFAULT_VM_LAUNCH_S, ge=0)
    checkpoint_restore_s: float = Field(default=DEFAULT_CHECKPOINT_RESTORE_S, ge=0)


class PreemptionSpec(_Strict):
    """An injected spot reclaim for an emulated run: ``count`` VMs of a type, when training reaches an iteration."""

    at_iteration: PositiveInt
    instance_type: str = Field(min_length=1)
    market: Market = "spot"
    count: PositiveInt = 1


class ScenarioSpec(_Strict):
    """The spec's ``emulation:`` section: a scenario replayed on the emulated cloud by ``srifty run --emulated``
    (:mod:`srifty.evaluate.scenario`); ignored by planning.

    ``start_config`` fixes the configuration the scenario starts on (paper notation); without it the
    scenario starts on srifty's plan. ``preemptions`` are injected reclaims; ``spot_process`` adds the
    emulated cloud's own seeded preemption process.
    """

    seed: int = 0
    start_config: str | None = None
    preemptions: tuple[PreemptionSpec, ...] = ()
    spot_process: bool = False
    checkpoint_every: PositiveInt | None = None


class JobSpec(_Strict):
    """A distributed training job and the constraints it must be planned under."""

    schema_version: Literal[1] = 1
    name: str | None = None
    description: str | None = None
    model: ModelSpec
    global_batch: PositiveInt = Field(le=MAX_GLOBAL_BATCH)
    iterations: PositiveInt
    goal: Goal
    time_tolerance: float | None = Field(default=None, ge=0.0, le=1.0)
    deadline_s: PositiveFloat | None = None
    budget_usd: PositiveFloat | None = None
    confidence: float = Field(default=DEFAULT_CONFIDENCE, ge=0.5, lt=1.0)
    cloud: Cloud = "aws"
    clouds: tuple[Cloud, ...] = ()
    region: str | None = Field(default=None, min_length=1)
    regions: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()
    candidates: tuple[CandidateSpec, ...] = ()
    default_quota: PositiveInt = Field(default=DEFAULT_QUOTA, le=MAX_QUOTA)
    quota: dict[str, Annotated[PositiveInt, Field(le=MAX_QUOTA)]] = Field(default_factory=dict)
    filter: CandidateFilter = CandidateFilter()
    overheads: OverheadSpec = OverheadSpec()
    network_model: Path | None = None
    spot_model: Path | None = None
    seed: int = 0
    emulation: ScenarioSpec | None = None
    parallelism: Parallelism = "auto"
    activation_checkpointing: Annotated[Checkpointing, BeforeValidator(_on_off)] = "auto"

    @field_validator("model", mode="before")
    @classmethod
    def _model_shorthand(cls, value: Any) -> Any:
        # `model: resnet50` is shorthand for `model: {name: resnet50}`.
        return {"name": value} if isinstance(value, str) else value

    @field_validator("candidates", mode="before")
    @classmethod
    def _auto(cls, value: Any) -> Any:
        # `candidates: auto` (or no candidates at all) lets the planner choose from the catalog: stored as ().
        if isinstance(value, str) and value.strip() == "auto":
            return ()
        if isinstance(value, list | tuple) and not value:
            raise ValueError("candidates is an empty list; list at least one, or write `candidates: auto`")
        return value

    @model_validator(mode="after")
    def _candidates_distinct(self) -> JobSpec:
        if not self.candidates:
            return self
        seen: set[tuple[str, str, str | None, str | None]] = set()
        for cand in self.candidates:
            key = (cand.instance_type, cand.market, cand.region, cand.cloud)
            if key in seen:
                raise ValueError(
                    f"candidate {cand.instance_type} ({cand.market}) is listed twice; "
                    "merge the entries into one with the total quota"
                )
            seen.add(key)
        auto_only = sorted({"default_quota", "quota", "filter"} & self.model_fields_set)
        if auto_only:
            raise ValueError(
                f"{', '.join(auto_only)} only apply to `candidates: auto`; with a list of candidates, give each "
                "candidate its own quota"
            )
        return self

    @model_validator(mode="after")
    def _one_way_to_name_places(self) -> JobSpec:
        if self.region is not None and self.regions:
            raise ValueError("give either `region` or `regions`, not both")
        if self.clouds and "cloud" in self.model_fields_set:
            raise ValueError("give either `cloud` or `clouds`, not both")
        return self

    @model_validator(mode="after")
    def _tolerance_needs_min_time(self) -> JobSpec:
        if self.time_tolerance is not None and self.goal != "min_time":
            raise ValueError(
                "time_tolerance applies to `goal: min_time` only (the cheapest configuration within that share of "
                "the fastest job time); remove it, or set `goal: min_time`"
            )
        return self

    @property
    def min_time_tolerance(self) -> float:
        """For ``min_time``: how much slower than the fastest job time the chosen configuration may be (a
        fraction; ``time_tolerance`` or :data:`DEFAULT_TIME_TOLERANCE`); 0 for ``min_cost``."""
        if self.goal != "min_time":
            return 0.0
        return DEFAULT_TIME_TOLERANCE if self.time_tolerance is None else self.time_tolerance

    @property
    def auto_candidates(self) -> bool:
        """Whether the planner chooses the candidates from the catalog (``candidates: auto``, stored as ``()``)."""
        return not self.candidates

    @property
    def search_clouds(self) -> tuple[Cloud, ...]:
        """The clouds to plan in: ``clouds``, or the one ``cloud``."""
        return self.clouds or (self.cloud,)

    @property
    def search_regions(self) -> tuple[str, ...]:
        """The regions to plan in (``regions`` or ``region``); empty means every region of the clouds."""
        return self.regions or ((self.region,) if self.region else ())

    def resolve_paths(self, base: Path) -> JobSpec:
        """A copy whose relative file paths are resolved against ``base`` (the spec's folder)."""
        profiles = tuple(p if p.is_absolute() else base / p for p in self.model.profiles)
        net = self.network_model
        if net is not None and not net.is_absolute():
            net = base / net
        spot = self.spot_model
        if spot is not None and not spot.is_absolute():
            spot = base / spot
        return self.model_copy(
            update={
                "model": self.model.model_copy(update={"profiles": profiles}),
                "network_model": net,
                "spot_model": spot,
            }
        )


# What each field must be, for error messages ("global_batch must be a positive integer, got -3").
FIELD_EXPECTATIONS: dict[str, str] = {
    "schema_version": "1",
    "name": "a string",
    "description": "a string",
    "model": "a model name (for example resnet50) or a mapping with `name` and/or `profiles`",
    "model.name": "a non-empty model name: a torchvision name, hf:<config> or package.module:factory",
    "model.precision": (
        "one of 'fp32', 'bf16', 'fp16' (the precision the profiles were measured in; bf16/fp16: mixed precision, "
        "fp32 reduction)"
    ),
    "model.seq_len": "a positive integer (tokens per sample)",
    "model.profiles": "a list of profile file paths",
    "global_batch": f"a positive integer up to {MAX_GLOBAL_BATCH:,} (samples per iteration across all GPUs)",
    "iterations": "a positive integer",
    "goal": "one of 'min_time', 'min_cost'",
    "time_tolerance": "a fraction from 0 to 1 (0.03: the cheapest configuration within 3 % of the fastest job time)",
    "deadline_s": "a positive number of seconds, or absent",
    "budget_usd": "a positive number of US dollars, or absent",
    "confidence": "a probability from 0.5 up to (not including) 1, e.g. 0.9: how sure the plan must be to meet the "
    "deadline and the budget",
    "cloud": "one of 'aws', 'gcp', 'azure'",
    "clouds": "a list of clouds among 'aws', 'gcp', 'azure'",
    "region": "a region name such as us-east-1",
    "regions": "a list of region names such as [us-east-1, us-west-2]",
    "zones": "a list of availability zone names such as [use1-az4]",
    "candidates": "`auto`, or a non-empty list of {instance_type, market, quota}",
    "candidates.instance_type": "an instance type name from the catalog, such as g4dn.8xlarge",
    "candidates.market": "one of 'spot', 'on_demand' (also written on-demand)",
    "candidates.quota": f"a positive integer up to {MAX_QUOTA:,} (the most VMs of this type you may rent)",
    "candidates.zone": "an availability zone name",
    "candidates.region": "a region name such as us-east-1",
    "candidates.cloud": "one of 'aws', 'gcp', 'azure'",
    "default_quota": f"a positive integer up to {MAX_QUOTA:,} (VMs per type and market for `candidates: auto`)",
    "quota": f"a mapping of instance type to a positive number of VMs up to {MAX_QUOTA:,}, e.g. {{p3.8xlarge: 4}}",
    "filter": "a mapping with gpus, max_gpus_per_vm and market",
    "filter.gpus": "a list of GPU names such as [T4, A10G]",
    "filter.max_gpus_per_vm": "a positive integer",
    "filter.market": "one of 'spot', 'on_demand' (also written on-demand)",
    "overheads": "a mapping with vm_launch_s and checkpoint_restore_s",
    "overheads.vm_launch_s": "a number of seconds >= 0",
    "overheads.checkpoint_restore_s": "a number of seconds >= 0",
    "network_model": "a path to a bandwidth model file",
    "spot_model": "a path to a spot model file (`srifty fit-spot`)",
    "seed": "an integer",
    "emulation": "a mapping with seed, start_config, preemptions, spot_process, checkpoint_every",
    "emulation.seed": "an integer",
    "emulation.start_config": "a configuration such as 2xp3.8xlarge@128",
    "emulation.preemptions": "a list of {at_iteration, instance_type, market, count}",
    "emulation.preemptions.at_iteration": "a positive integer",
    "emulation.preemptions.count": "a positive integer",
    "emulation.checkpoint_every": "a positive integer (iterations)",
    "parallelism": "one of 'auto', 'ddp', 'fsdp', 'hsdp' (auto: the planner picks per configuration)",
    "activation_checkpointing": "one of 'auto', 'on', 'off' (or true/false)",
}

REQUIRED_EXAMPLES: dict[str, str] = {
    "model": "model: resnet50",
    "global_batch": "global_batch: 1024",
    "iterations": "iterations: 1000",
    "goal": "goal: min_time",
    "candidates.instance_type": "instance_type: g4dn.8xlarge",
    "candidates.quota": "quota: 16",
}
