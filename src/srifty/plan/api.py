"""The Python API behind ``srifty plan``: spec file in, :class:`~srifty.plan.result.Plan` out."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from srifty.catalog import Catalog, load_catalog
from srifty.errors import SpecError
from srifty.plan.build import build_problem, compute_latency_ms
from srifty.plan.evaluate import Evaluator, SimEvaluator, apm_evaluator, paleo_evaluator
from srifty.plan.inputs import PlanInputs, resolve
from srifty.plan.planner import DEFAULT_MAX_SIM_CALLS, Method, Mode, make_plan
from srifty.plan.problem import Candidate
from srifty.plan.result import Plan
from srifty.sim import SimOptions, Simulator
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


def evaluator_for(method: Method, spec: JobSpec, inputs: PlanInputs, iters: int) -> Evaluator:
    """The predictor behind ``method``: the simulator for srifty (and the greedy baselines' scoring), APM's
    linear/alpha-beta model for apm, Paleo's analytical model for paleo."""
    if method == "apm":
        from srifty.network import AlphaBetaModel, load_default_probes

        return apm_evaluator(inputs.profiles, AlphaBetaModel().fit(load_default_probes()))
    if method == "paleo":
        return paleo_evaluator(inputs.profiles)
    return SimEvaluator(Simulator(inputs.profiles, inputs.net_model, SimOptions(iters=iters)), seed=spec.seed)


def plan_job(
    spec: JobSpec,
    catalog: Catalog | None = None,
    inputs: PlanInputs | None = None,
    method: Method = "srifty",
    mode: Mode = "auto",
    top_k: int = 5,
    max_sim_calls: int = DEFAULT_MAX_SIM_CALLS,
    iters: int = 100,
) -> tuple[Plan, PlanInputs]:
    """Plan ``spec`` with ``method``; resolves profiles and the bandwidth model unless given."""
    cat = catalog or load_catalog()
    resolved = inputs or resolve(spec, cat)
    problem = build_problem(spec, cat, resolved.profiles)
    evaluator = evaluator_for(method, spec, resolved, iters)

    def latency(cand: Candidate, batch: int) -> float:
        return compute_latency_ms(resolved.profiles, cand, batch)

    plan = make_plan(problem, evaluator, latency, method, mode, max_sim_calls, top_k)
    plan = dataclasses.replace(plan, profile_sources=dict(resolved.sources), spec_name=spec.name)
    return plan, resolved


def plan_spec(spec_path: str | Path, **kwargs: object) -> tuple[Plan, PlanInputs]:
    """Load and plan a spec file; the plan records the spec's name and SHA-256 digest."""
    path = Path(spec_path)
    spec = load_spec(path)
    plan, inputs = plan_job(spec, **kwargs)  # type: ignore[arg-type]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return dataclasses.replace(plan, spec_digest=digest), inputs
