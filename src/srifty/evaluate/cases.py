"""``srifty eval cases``: every method's plan for each job, judged on the emulated cloud's ground truth.

For each job spec (the paper's case studies in ``examples/``, or the harder suite's):

1. srifty profiles each GPU type on the cloud (4 probes, :mod:`srifty.evaluate.profiling`) and uses the
   network knowledge learned once for all jobs (:mod:`srifty.evaluate.learn`);
2. srifty and each baseline plan as the methods' registry says (:mod:`srifty.plan.methods`): with its
   own predictor over what it learned, by measuring on the truth itself (Oracle BO), or by drawing at
   random (the median of its draws' true outcomes stands for it);
3. the judge (:mod:`srifty.evaluate.truth`, which shares nothing with srifty's planner) searches its own,
   wider space (any local batch, uneven shares): whole where it is small enough, which gives the true
   optimum, else by branch and bound on its own bounds; that is the reference. It also searches srifty's
   space (power-of-two batches) the same way, to measure what srifty's rule costs. Each method's choice is
   judged the same way.

Everything is seeded: the same seed, profiles and settings give the same results.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from srifty.catalog import Catalog, load_catalog
from srifty.errors import SpecError
from srifty.evaluate.learn import DEFAULT_FIT_TRIALS, NetworkKnowledge, learn_network
from srifty.evaluate.limits import TruthLimits
from srifty.evaluate.profiling import profile_gpus
from srifty.evaluate.truth import (
    POWERS_OF_TWO,
    WIDE,
    SearchSettings,
    TrueOutcome,
    TruthJudge,
    best_outcome,
    objective,
    preference,
    search,
)
from srifty.evaluate.truth.search import best_single_offer
from srifty.evaluate.why import explain
from srifty.evaluate.world import World, make_world
from srifty.plan import (
    METHODS,
    BatchPolicy,
    Candidate,
    Knowledge,
    PlanProblem,
    ProfileLimits,
    area_type_names,
    build_problems,
    compute_latency_ms,
    count_configs,
    get_method,
    make_plan,
    sample_placed,
    spec_area,
    unplaced,
)
from srifty.spec import JobSpec, load_spec

#: Every method the evaluation runs by default: all of the registry's.
ALL_METHODS = tuple(METHODS)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class CaseSettings:
    """How to run the evaluation.

    Attributes:
        seed: seeds the cloud (hidden factors, placements, noise) and every learner.
        n_allocations: placement draws each configuration's truth is averaged over.
        iters: iterations per placement draw.
        fit_trials: Optuna trials per side of the MTU when fitting srifty's bandwidth model.
        probe_allocations: allocations the network is probed on, per instance type.
        max_probe_world: largest world size probed (the paper's 64).
        methods: which methods to run (names in :data:`~srifty.plan.methods.METHODS`).
        profile_dirs: folders of profiles (with op counts) of models the cloud does not bundle.
        bo_fraction: share of the space Oracle BO may measure.
        exhaustive_limit: the judge's spaces of up to this many shapes (VM counts per type) are judged whole;
            larger ones are searched by branch and bound.
        top_k: configurations of a branch-and-bound search judged in full (the best by the steady outcome).
    """

    seed: int = 0
    n_allocations: int = 4
    iters: int = 25
    fit_trials: int = DEFAULT_FIT_TRIALS
    probe_allocations: int = 3
    max_probe_world: int = 64
    methods: tuple[str, ...] = ALL_METHODS
    profile_dirs: tuple[Path, ...] = ()
    bo_fraction: float = 1.0 / 3.0
    exhaustive_limit: int = SearchSettings.exhaustive_limit
    top_k: int = SearchSettings.top_k


@dataclass(frozen=True)
class MethodOutcome:
    """One method's choice for one job, predicted and true.

    Attributes:
        config: the configuration chosen, or ``None`` (no plan: predicted infeasible).
        predicted_iter_s, predicted_time_s, predicted_cost_usd: what the method predicted (``None`` for
            Oracle BO, which measured).
        true_iter_s, true_time_s, true_cost_usd, true_throughput_samples_per_s: on the truth.
        ratio_to_optimum: the goal's quantity (time or cost) over the true optimum's; ``None`` without
            a choice or an optimum.
        throughput_ratio: true throughput over the optimum's.
        violations: constraints the choice breaks for real (``deadline``, ``budget``, ``oom``).
        solve_s: the method's search time (Oracle BO: including its measurements on the truth).
        n_evaluated: configurations it predicted (or, for Oracle BO, measured).
        note: anything worth a sentence.
        draw_ratios: for a random baseline, every draw's ratio to the optimum (``None``: it broke a
            constraint); the row itself is the median draw.
        zone: the zone the configuration's spot VMs run in (``None``: on-demand only, or no choice).
    """

    method: str
    config: str | None
    predicted_iter_s: float | None
    predicted_time_s: float | None
    predicted_cost_usd: float | None
    true_iter_s: float | None
    true_time_s: float | None
    true_cost_usd: float | None
    true_throughput_samples_per_s: float | None
    ratio_to_optimum: float | None
    throughput_ratio: float | None
    violations: tuple[str, ...]
    solve_s: float
    n_evaluated: int
    note: str = ""
    draw_ratios: tuple[float | None, ...] = ()
    zone: str | None = None


@dataclass(frozen=True)
class CaseResult:
    """Everything measured for one job.

    ``reference`` is how the judge found ``optimum`` in its own space: ``"exhaustive"`` (every shape judged:
    the true optimum) or ``"branch and bound"`` (:mod:`srifty.evaluate.truth.search`); ``space_size`` counts
    the shapes (VM counts per type and market) of the judge's space, ``srifty_space_size`` the configurations
    of srifty's pruned space, ``n_judged`` what was judged in full. ``srifty_rule_optimum`` is the best the
    judge finds within srifty's rule (power-of-two batches, one per type), ``homogeneous_optimum`` the best of
    a single type and market; ``search_s`` the judge's search times.
    """

    name: str
    spec_path: str
    model: str
    goal: str
    global_batch: int
    iterations: int
    deadline_s: float | None
    budget_usd: float | None
    space_size: int
    srifty_space_size: int
    n_feasible: int
    optimum: dict[str, Any] | None
    methods: tuple[MethodOutcome, ...]
    points: tuple[dict[str, Any], ...]
    profiles: dict[str, dict[str, Any]]
    truth_s: float
    profile_sources: dict[str, str] = field(default_factory=dict)
    instance_gpus: dict[str, str] = field(default_factory=dict)
    reference: str = "exhaustive"
    n_judged: int = 0
    homogeneous_optimum: dict[str, Any] | None = None
    seed: int = 0
    why: dict[str, Any] = field(default_factory=dict)
    srifty_rule_optimum: dict[str, Any] | None = None
    search_s: dict[str, float] = field(default_factory=dict)


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def outcome_dict(o: TrueOutcome) -> dict[str, Any]:
    """JSON-ready form of a true outcome."""
    return {
        "config": o.config.notation(),
        "zone": o.config.zone,
        "world_size": o.config.world_size,
        "n_vms": o.config.n_vms,
        "iter_s": _finite(o.iter_s),
        "time_s": _finite(o.time_s),
        "cost_usd": _finite(o.cost_usd),
        "throughput_samples_per_s": _finite(o.throughput_samples_per_s),
        "violations": list(o.violations),
    }


def judged(
    method: str,
    goal: str,
    outcome: TrueOutcome | None,
    optimum: TrueOutcome | None,
    solve_s: float,
    n_evaluated: int,
    predicted: tuple[float, float, float] | None,
    note: str = "",
) -> MethodOutcome:
    """A method's outcome row from its true outcome and the optimum."""
    if outcome is None:
        if optimum is None:
            note = note or "no plan; correct: nothing is feasible on the truth"
        else:
            note = note or "no plan, although a feasible configuration exists"
        return MethodOutcome(
            method, None, None, None, None, None, None, None, None, None, None, (), solve_s, n_evaluated, note
        )
    ratio = throughput = None
    if optimum is not None and math.isfinite(outcome.time_s):
        mine, best = objective(goal, outcome)[0], objective(goal, optimum)[0]
        ratio = mine / best if best > 0 else None
        throughput = outcome.throughput_samples_per_s / optimum.throughput_samples_per_s
    return MethodOutcome(
        method=method,
        config=outcome.config.notation(),
        predicted_iter_s=None if predicted is None else predicted[0],
        predicted_time_s=None if predicted is None else predicted[1],
        predicted_cost_usd=None if predicted is None else predicted[2],
        true_iter_s=_finite(outcome.iter_s),
        true_time_s=_finite(outcome.time_s),
        true_cost_usd=_finite(outcome.cost_usd),
        true_throughput_samples_per_s=_finite(outcome.throughput_samples_per_s),
        ratio_to_optimum=ratio,
        throughput_ratio=throughput,
        violations=outcome.violations,
        solve_s=solve_s,
        n_evaluated=n_evaluated,
        note=note,
        zone=outcome.config.zone,
    )


def _median_draw(goal: str, outcomes: list[TrueOutcome]) -> TrueOutcome | None:
    """The median of a random baseline's draws by the goal (constraint breakers rank after every feasible one)."""
    if not outcomes:
        return None
    ordered = sorted(outcomes, key=lambda o: (len(o.violations) > 0, *preference(goal, o)))
    return ordered[(len(ordered) - 1) // 2]


def _ratio(goal: str, outcome: TrueOutcome, optimum: TrueOutcome | None) -> float | None:
    if optimum is None or outcome.violations or not math.isfinite(outcome.time_s):
        return None
    best = objective(goal, optimum)[0]
    return objective(goal, outcome)[0] / best if best > 0 else None


def run_case(
    spec: JobSpec,
    spec_path: str,
    world: World,
    network: NetworkKnowledge,
    settings: CaseSettings,
    catalog: Catalog,
) -> CaseResult:
    """Plan ``spec`` with every method and judge all of it on the truth (see the module docstring)."""
    cloud = world.cloud
    model = spec.model.name or ""
    types = area_type_names(spec, catalog)
    profiles = profile_gpus(cloud, model, types, settings.seed, world.templates[model], catalog)
    judge = TruthJudge(cloud, spec, settings.n_allocations, settings.iters)
    wide = SearchSettings(WIDE, settings.exhaustive_limit, settings.top_k)
    reference = search(judge, wide)
    srifty_rule = search(judge, replace(wide, space=POWERS_OF_TWO))
    homogeneous = best_single_offer(judge, wide)
    # The reference: the better of the judge's two searches (its own space and, within it, srifty's rule).
    optimum = best_outcome(spec.goal, [o for o in (reference.best, srifty_rule.best) if o is not None])
    knowledge = Knowledge(profiles, network.bandwidth_model, network.alpha_beta, seed=spec.seed)
    problems: dict[BatchPolicy, tuple[PlanProblem, ...]] = {}

    def latency(cand: Candidate, batch: int) -> float:
        return compute_latency_ms(profiles, cand, batch)

    def problems_for(policy: BatchPolicy) -> tuple[PlanProblem, ...]:
        if policy not in problems:
            problems[policy] = build_problems(spec, catalog, ProfileLimits(profiles), policy)
        return problems[policy]

    # Plan first (no method sees the truth's judgements), then judge every choice.
    plans: dict[str, Any] = {}
    for name in settings.methods:
        method = get_method(name)
        if method.truth_search is not None:
            continue
        placed = problems_for(method.batch_policy)
        plan = make_plan(placed, method.make_predictor(knowledge), latency, method, "auto")
        if method.draws:
            draws = sample_placed(placed, np.random.default_rng([settings.seed, 11]), method.draws)
            plans[name] = (plan, draws)
        else:
            plans[name] = (plan, None)
    rows: list[MethodOutcome] = []
    for name in settings.methods:
        method = get_method(name)
        if method.truth_search is not None:
            # Oracle BO searches its method's space (power-of-two batches up to what the truth holds) by measuring
            # on a judge of its own (same draws, empty cache), so its solve time includes its measurements.
            truth_space = build_problems(spec, catalog, TruthLimits(cloud, model), "all", judge.terms.overhead_s)
            space = unplaced(truth_space)
            n_space = count_configs(space)
            fresh = TruthJudge(cloud, spec, settings.n_allocations, settings.iters)
            bo = method.truth_search(space, fresh.judge, n_space, settings.seed, settings.bo_fraction)
            note = f"measured {bo.n_measured} of {n_space:,} configurations on the truth (quota {bo.budget})"
            rows.append(judged(name, spec.goal, bo.best, optimum, bo.solve_s, bo.n_measured, None, note))
            continue
        plan, draws = plans[name]
        if draws is not None:
            drawn = [judge.judge(c) for c in draws]
            median = _median_draw(spec.goal, drawn)
            size = sum(count_configs(p) for p in problems_for(method.batch_policy))
            note = f"median of {len(drawn)} uniform draws from {size:,}"
            row = judged(name, spec.goal, median, optimum, plan.solve_time_s, len(drawn), None, note)
            rows.append(replace(row, draw_ratios=tuple(_ratio(spec.goal, o, optimum) for o in drawn)))
            continue
        best = plan.best
        predicted = None if best is None else (best.estimate.iter_mean_s, best.time_s, best.cost_usd)
        outcome = None if best is None else judge.judge(best.config)
        note = (
            ""
            if best is None or best.feasible
            else "chose a configuration it predicts to violate: " + ", ".join(best.violations)
        )
        rows.append(judged(name, spec.goal, outcome, optimum, plan.solve_time_s, plan.n_evaluated, predicted, note))
    outcomes = [*reference.judged, *srifty_rule.judged, *homogeneous.judged]
    points = _points(outcomes, knowledge)
    srifty_space = problems.get("knee") or build_problems(spec, catalog, ProfileLimits(profiles))
    why = _why(rows, plans, srifty_space, knowledge, world, spec, optimum, judge.tag)
    return CaseResult(
        name=spec.name or Path(spec_path).stem,
        spec_path=spec_path,
        model=model,
        goal=spec.goal,
        global_batch=spec.global_batch,
        iterations=spec.iterations,
        deadline_s=spec.deadline_s,
        budget_usd=spec.budget_usd,
        space_size=reference.n_shapes,
        srifty_space_size=sum(count_configs(p) for p in srifty_space),
        n_feasible=sum(o.feasible for o in reference.judged),
        optimum=None if optimum is None else outcome_dict(optimum),
        methods=tuple(rows),
        points=tuple(points),
        profiles={
            gpu: {
                "device": p.device.name,
                "probed_batches": [s.batch for s in p.samples],
                "max_batch": p.max_batch,
                "knee_batch": p.latency["iter"].knee_batch,
            }
            for gpu, p in profiles.items()
        },
        truth_s=reference.search_s,
        profile_sources={gpu: cloud.truth(gpu, model).origin for gpu in profiles},
        instance_gpus={name: cloud.instance(name).gpu_name for name in types},
        reference=reference.method,
        n_judged=judge.n_judged,
        homogeneous_optimum=None if homogeneous.best is None else outcome_dict(homogeneous.best),
        seed=settings.seed,
        why=why,
        srifty_rule_optimum=None if srifty_rule.best is None else outcome_dict(srifty_rule.best),
        search_s={
            "wide": reference.search_s,
            "powers_of_two": srifty_rule.search_s,
            "single_offer": homogeneous.search_s,
        },
    )


def _why(
    rows: Sequence[MethodOutcome],
    plans: dict[str, Any],
    problems: Sequence[PlanProblem],
    knowledge: Knowledge,
    world: World,
    spec: JobSpec,
    optimum: TrueOutcome | None,
    tag: str,
) -> dict[str, Any]:
    """Why srifty lost to the optimum (missed 2%, broke a constraint, no plan) and to APM (a better ratio)."""
    mine = next((r for r in rows if r.method == "srifty"), None)
    if mine is None or "srifty" not in plans or optimum is None:
        return {}
    plan = plans["srifty"][0]
    chosen = plan.best.config if plan.best is not None else None
    common = {
        "problems": problems,
        "evaluated": [s.config.notation() for s in plan.evaluated],
        "searched_exhaustively": plan.mode == "exhaustive",
        "predictor": get_method("srifty").make_predictor(knowledge),
        "cloud": world.cloud,
        "steady": world.steady,
        "model": spec.model.name or "",
        "goal": spec.goal,
        "chosen": chosen,
        "chosen_violates": bool(mine.violations),
        "tag": tag,
    }
    out: dict[str, Any] = {}
    ratio = mine.ratio_to_optimum if not mine.violations else None
    missed = chosen is None or ratio is None or ratio > 1.02
    if missed and (chosen is None or chosen.notation() != optimum.config.notation()):
        out["vs_optimum"] = explain(better=optimum.config, **common)
    apm = next((r for r in rows if r.method == "apm"), None)
    apm_ratio = None if apm is None or apm.config is None or apm.violations else apm.ratio_to_optimum
    if apm_ratio is not None and (ratio is None or apm_ratio < ratio - 0.005):
        out["vs_apm"] = explain(better=plans["apm"][0].best.config, **common)
    return out


def _points(outcomes: Sequence[TrueOutcome], knowledge: Knowledge) -> list[dict[str, Any]]:
    """Every configuration of the true space, in its cheapest zone (its time does not depend on the zone),
    with its true outcome and srifty's and APM's predictions."""
    srifty = get_method("srifty").make_predictor(knowledge)
    apm = get_method("apm").make_predictor(knowledge)
    cheapest: dict[str, TrueOutcome] = {}
    for o in outcomes:
        key = o.config.tagged()
        if key not in cheapest or (o.cost_usd, o.config.zone or "") < (
            cheapest[key].cost_usd,
            cheapest[key].config.zone or "",
        ):
            cheapest[key] = o
    out = []
    for o in cheapest.values():
        row = outcome_dict(o)
        row["instance_types"] = sorted({g.instance.name for g in o.config.groups})
        row["srifty_iter_s"] = None if "oom" in o.violations else srifty.predict(o.config).iter_mean_s
        row["apm_iter_s"] = None if "oom" in o.violations else apm.predict(o.config).iter_mean_s
        out.append(row)
    return out


@dataclass(frozen=True)
class CasesRun:
    """An evaluation of several jobs on one emulated cloud."""

    cases: tuple[CaseResult, ...]
    settings: CaseSettings
    cloud: dict[str, Any]
    network: dict[str, Any]
    elapsed_s: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without ``kind``/``schema_version``)."""
        settings = asdict(self.settings)
        settings["profile_dirs"] = [str(p) for p in self.settings.profile_dirs]
        return {
            "emulated": True,
            "note": "EMULATED cloud: every 'true' figure here comes from srifty's emulated cloud, not from real VMs",
            "settings": settings,
            "cloud": self.cloud,
            "network": self.network,
            "elapsed_s": self.elapsed_s,
            "cases": [asdict(c) for c in self.cases],
        }


SpecInput = Path | tuple[JobSpec, str]


def run_cases(
    spec_inputs: Sequence[SpecInput],
    settings: CaseSettings,
    progress: Progress | None = None,
    network: NetworkKnowledge | None = None,
) -> CasesRun:
    """Evaluate every spec (a file, or a ``(spec, label)`` pair) on one emulated cloud seeded ``settings.seed``.

    Args:
        network: what srifty learned of this seed's network, when a caller already has it (``run_seeds`` of
            several spec sets on one seed); learned here otherwise.

    Raises:
        SpecError: a spec is invalid, or an unknown method.
        CloudError: a model the cloud cannot train.
    """
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    catalog = load_catalog()
    specs = [(load_spec(s), str(s)) if isinstance(s, Path) else s for s in spec_inputs]
    unknown = sorted(set(settings.methods) - set(METHODS))
    if unknown:
        raise SpecError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}.")
    models = [spec.model.name or "" for spec, _ in specs]
    precision = specs[0][0].model.precision
    regions = {spec_area(spec, catalog) for spec, _ in specs}
    if len(regions) > 1:
        listed = ", ".join(f"{c} {r}" for c, r in sorted(regions))
        raise SpecError(f"the specs plan in different regions ({listed}); the emulated cloud rents in one region.")
    cloud_name, region = regions.pop()
    world = make_world(models, settings.seed, catalog, region, cloud_name, settings.profile_dirs, precision)
    types = sorted({name for spec, _ in specs for name in area_type_names(spec, catalog)})
    if network is None:
        say(
            f"seed {settings.seed}: probing the network of {', '.join(types)} on the emulated cloud and fitting "
            "the models"
        )
        network = learn_network(
            world.cloud, types, settings.seed, settings.fit_trials, settings.probe_allocations, settings.max_probe_world
        )
    results = []
    for spec, path in specs:
        say(
            f"seed {settings.seed}, {spec.name}: planning with {len(settings.methods)} methods and judging on the truth"
        )
        results.append(run_case(spec, path, world, network, settings, catalog))
    model = network.bandwidth_model
    return CasesRun(
        cases=tuple(results),
        settings=settings,
        cloud=world.cloud.describe(),
        network={
            "probe_rows": len(network.probes),
            "instance_types": types,
            "fit_trials": network.n_trials,
            "probe_s": network.probe_s,
            "fit_s": network.fit_s,
            "cv_mape": {side: m.get("cv_mape") for side, m in getattr(model, "metrics_", {}).items()},
        },
        elapsed_s=time.perf_counter() - started,
    )


__all__ = [
    "ALL_METHODS",
    "CaseResult",
    "CaseSettings",
    "CasesRun",
    "MethodOutcome",
    "SpecInput",
    "run_case",
    "run_cases",
]
