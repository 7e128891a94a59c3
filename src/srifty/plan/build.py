"""Build a :class:`~srifty.plan.problem.PlanProblem` from a job spec, the catalog and compute profiles."""

from __future__ import annotations

from collections.abc import Mapping

from srifty.catalog import Catalog, InstanceType
from srifty.compute import Profile
from srifty.errors import ProfileError
from srifty.plan.problem import Candidate, PlanProblem
from srifty.plan.space import allowed_batches
from srifty.spec import JobSpec


def profile_for(profiles: Mapping[str, Profile], instance: InstanceType) -> Profile:
    """The profile for ``instance`` (by type name, then GPU name)."""
    found = profiles.get(instance.name) or profiles.get(instance.gpu_name)
    if found is None:
        raise ProfileError(f"no compute profile for {instance.name} ({instance.gpu_name})")
    return found


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


def compute_latency_ms(profiles: Mapping[str, Profile], cand: Candidate, batch: int) -> float:
    """Mean forward + backward + step latency (ms) of one GPU of ``cand`` at ``batch``."""
    profile = profile_for(profiles, cand.instance)
    return float(sum(profile.predict_ms(ph, batch)[()] for ph in ("fw", "bw", "step")))


def build_problem(spec: JobSpec, catalog: Catalog, profiles: Mapping[str, Profile]) -> PlanProblem:
    """Candidates with prices, quotas and pruned batches; the spec's goal and constraints."""
    candidates = []
    for cand in spec.candidates:
        instance = catalog.get(cand.instance_type, region=spec.region, cloud=spec.cloud)
        profile = profile_for(profiles, instance)
        knee = knee_floor(profile)
        limit = max_batch_on(profile, instance)
        batches, note = allowed_batches(knee, limit, spec.global_batch, instance.gpus_per_vm)
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
    return PlanProblem(
        candidates=tuple(candidates),
        global_batch=spec.global_batch,
        iterations=spec.iterations,
        goal=spec.goal,
        deadline_s=spec.deadline_s,
        budget_usd=spec.budget_usd,
        overhead_s=spec.overheads.vm_launch_s + spec.overheads.checkpoint_restore_s,
    )
