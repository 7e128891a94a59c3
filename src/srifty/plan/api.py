"""The Python API behind ``srifty plan``: spec file in, :class:`~srifty.plan.result.Plan` out."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path

from srifty.catalog import Catalog, load_catalog
from srifty.compute import Profile
from srifty.errors import SpecError
from srifty.plan.build import ProfileLimits, build_problem, compute_latency_ms, max_batch_on
from srifty.plan.inputs import PlanInputs, resolve
from srifty.plan.methods import Knowledge, get_method
from srifty.plan.planner import make_plan
from srifty.plan.problem import Candidate
from srifty.plan.result import Plan
from srifty.plan.solvers import DEFAULT_MAX_SIM_CALLS, Mode
from srifty.sim import profile_for
from srifty.spec import JobSpec, load_spec
from srifty.vocab import Config, parse_config


def spec_config(text: str, spec: JobSpec, catalog: Catalog) -> Config:
    """Parse a configuration (``"4xg4dn.12xlarge@64,..."``) in ``spec``'s region, each type on the market its
    candidate names.

    Raises:
        SpecError: bad notation or an unknown type.
    """
    markets = {c.instance_type: c.market for c in spec.candidates}
    return parse_config(text, spec.region, spec.cloud, catalog, markets)


def require_global_batch(config: Config, spec: JobSpec, what: str) -> None:
    """Refuse a configuration (``what``: how the user gave it) that does not place the spec's global batch.

    Raises:
        SpecError: naming both numbers.
    """
    if config.global_batch != spec.global_batch:
        raise SpecError(
            f"{what} {config} places {config.global_batch} samples; the spec's global_batch is {spec.global_batch}"
        )


def require_fits(config: Config, profiles: Mapping[str, Profile], what: str) -> None:
    """Refuse a configuration (``what``: how the user gave it) whose local batch does not fit a GPU's
    memory, or that has an empty group.

    Raises:
        SpecError: naming the group, its GPU and the largest batch that fits.
    """
    for group in config.groups:
        if group.count < 1 or group.local_batch < 1:
            raise SpecError(f"{what} {config}: group {group.notation()} needs at least one VM and a batch of 1")
        limit = max_batch_on(profile_for(profiles, group.instance), group.instance)
        if group.local_batch > limit:
            raise SpecError(
                f"{what} {config}: local batch {group.local_batch} of {group.notation()} does not fit one "
                f"{group.instance.gpu_name} (at most {limit} by the profile's memory model); lower it"
            )


def plan_job(
    spec: JobSpec,
    catalog: Catalog | None = None,
    inputs: PlanInputs | None = None,
    method: str = "srifty",
    mode: Mode = "auto",
    top_k: int = 5,
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
    iters: int = 100,
) -> tuple[Plan, PlanInputs]:
    """Plan ``spec`` with ``method`` (see :data:`~srifty.plan.methods.METHODS`); resolves profiles and the
    bandwidth model unless given. APM's alpha-beta model is fitted on the embedded default probes.

    Raises:
        SpecError: an unknown method, or one that only an evaluation can run.
    """
    entry = get_method(method)
    entry.require_planning()
    cat = catalog or load_catalog()
    resolved = inputs or resolve(spec, cat)
    problem = build_problem(spec, cat, ProfileLimits(resolved.profiles), entry.batch_policy)
    knowledge = Knowledge(resolved.profiles, resolved.net_model, seed=spec.seed, sim_iters=iters)
    predictor = entry.make_predictor(knowledge)

    def latency(cand: Candidate, batch: int) -> float:
        return compute_latency_ms(resolved.profiles, cand, batch)

    plan = make_plan(problem, predictor, latency, entry, mode, max_sim_calls, top_k)
    errors = {gpu: profile.expected_error for gpu, profile in resolved.profiles.items()}
    plan = dataclasses.replace(
        plan,
        profile_sources=dict(resolved.sources),
        profile_errors=errors,
        spec_name=spec.name,
        notes=plan.notes + resolved.warnings,
    )
    return plan, resolved


def plan_spec(spec_path: str | Path, **kwargs: object) -> tuple[Plan, PlanInputs]:
    """Load and plan a spec file; the plan records the spec's name and SHA-256 digest."""
    path = Path(spec_path)
    spec = load_spec(path)
    plan, inputs = plan_job(spec, **kwargs)  # type: ignore[arg-type]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return dataclasses.replace(plan, spec_digest=digest), inputs
