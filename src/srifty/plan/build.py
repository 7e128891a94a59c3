"""The one problem builder: a :class:`~srifty.plan.problem.PlanProblem` from a job spec, the catalog and what
is known of each type's batch limits, under a batch policy.

The planner knows the limits from compute profiles (:class:`ProfileLimits`: the memory model's largest
batch and the latency model's knee); an evaluation knows them from its ground truth. The policy says which
local batches a type may take (:data:`~srifty.plan.space.BatchPolicy`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from srifty.catalog import Catalog, InstanceType
from srifty.compute import Profile
from srifty.plan.problem import Candidate, PlanProblem
from srifty.plan.space import BatchPolicy, allowed_batches
from srifty.sim import profile_for
from srifty.spec import JobSpec


class BatchLimits(Protocol):
    """What a problem builder needs to know of each instance type's local batches."""

    def max_batch(self, instance: InstanceType) -> int:
        """Largest local batch one GPU of ``instance`` holds."""
        ...

    def knee_batch(self, instance: InstanceType) -> int:
        """The smallest batch worth running (the latency model's knee, a power of two), 1 without one."""
        ...


def knee_floor(profile: Profile) -> int:
    """The power of two at or below the iteration model's knee (1 when there is no knee)."""
    knee = profile.latency["iter"].knee_batch
    if knee is None or knee < 1:
        return 1
    return 1 << (int(knee).bit_length() - 1)


def max_batch_on(profile: Profile, instance: InstanceType) -> int:
    """Largest local batch that fits one GPU of ``instance``.

    A profile measured on that very GPU knows its limit (unless a cap stopped the search); otherwise the
    memory model predicts it for the GPU's memory.
    """
    measured_here = profile.device.gpu == instance.gpu_name and not profile.is_estimate
    if measured_here and profile.max_batch_limited_by == "gpu_memory":
        return profile.max_batch
    return profile.memory.max_batch(instance.gpu_memory_bytes)


@dataclass(frozen=True)
class ProfileLimits:
    """Batch limits from compute profiles (by instance type or GPU name): memory model and knee."""

    profiles: Mapping[str, Profile]

    def max_batch(self, instance: InstanceType) -> int:
        return max_batch_on(profile_for(self.profiles, instance), instance)

    def knee_batch(self, instance: InstanceType) -> int:
        return knee_floor(profile_for(self.profiles, instance))


def compute_latency_ms(profiles: Mapping[str, Profile], cand: Candidate, batch: int) -> float:
    """Mean forward + backward + step latency (ms) of one GPU of ``cand`` at ``batch``."""
    profile = profile_for(profiles, cand.instance)
    return float(sum(profile.predict_ms(ph, batch)[()] for ph in ("fw", "bw", "step")))


def build_problem(
    spec: JobSpec,
    catalog: Catalog,
    limits: BatchLimits,
    policy: BatchPolicy = "knee",
    overhead_s: float | None = None,
) -> PlanProblem:
    """Candidates with prices, quotas and the batches ``policy`` allows; the spec's goal and constraints.

    Args:
        overhead_s: one VM launch plus one checkpoint restore (s); default: the spec's overheads.
    """
    candidates = []
    for cand in spec.candidates:
        instance = catalog.get(cand.instance_type, region=spec.region, cloud=spec.cloud)
        knee = limits.knee_batch(instance) if policy == "knee" else 1
        limit = limits.max_batch(instance)
        batches, note = allowed_batches(knee, limit, spec.global_batch, instance.gpus_per_vm, policy)
        candidates.append(
            Candidate(
                instance=instance,
                market=cand.market,
                quota=cand.quota,
                price_usd_per_hour=instance.price_usd_per_hour(cand.market, cand.zone),
                batches=batches,
                knee_batch=knee,
                max_batch=limit,
                pruned_note=note,
            )
        )
    if overhead_s is None:
        overhead_s = spec.overheads.vm_launch_s + spec.overheads.checkpoint_restore_s
    return PlanProblem(
        candidates=tuple(candidates),
        global_batch=spec.global_batch,
        iterations=spec.iterations,
        goal=spec.goal,
        deadline_s=spec.deadline_s,
        budget_usd=spec.budget_usd,
        overhead_s=overhead_s,
    )
