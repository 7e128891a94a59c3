"""Every planning method, srifty's own and the baselines, in one registry.

Each :class:`Method` says how it predicts (its compute, network and iteration models), how it searches,
and whether it honours the deadline and budget; the CLI (``srifty plan --method``), the planner
(:func:`srifty.plan.make_plan`) and the evaluation (``srifty eval cases``) all read it here.

A method either plans from what it learned (``plan_search``: it is given a :class:`~srifty.plan.Predictor`
built by its ``predictor`` factory from :class:`Knowledge`) or measures configurations on a ground truth
(``truth_search``: only an evaluation has one, so only ``srifty eval`` runs it).

To add a baseline: write its search (a :data:`PlanSearch`, see :func:`greedy_search` for one that builds a
single configuration, or a :data:`TruthSearch` like :func:`~srifty.plan.methods.oracle_bo.oracle_bo`), its
predictor factory if it predicts differently, and one :class:`Method` entry in :data:`METHODS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from srifty.compute import Profile
from srifty.errors import SpecError, did_you_mean
from srifty.plan import solvers
from srifty.plan.methods import greedy
from srifty.plan.methods.additive import apm_predictor, paleo_predictor
from srifty.plan.methods.draws import DEFAULT_DRAWS, homogeneous_search, random_search
from srifty.plan.methods.oracle_bo import oracle_bo
from srifty.plan.predict import Predictor, SimPredictor
from srifty.plan.problem import PlanProblem
from srifty.plan.space import BatchPolicy, count_configs
from srifty.sim import BusBandwidthModel, SimOptions, Simulator
from srifty.vocab import Config

Role = Literal["srifty", "baseline", "ablation"]


@dataclass(frozen=True)
class Knowledge:
    """What a method may predict from: profiles and the network models learned from probes.

    Attributes:
        profiles: profile per instance type or catalog GPU name (measured or estimated).
        net_model: srifty's learned bus-bandwidth model.
        alpha_beta: APM's alpha-beta model; ``None`` fits one on the embedded default probes when APM needs it.
        seed: seeds srifty's simulator (common random numbers per configuration).
        sim_iters: iterations the simulator samples per configuration.
    """

    profiles: Mapping[str, Profile]
    net_model: BusBandwidthModel
    alpha_beta: BusBandwidthModel | None = None
    seed: int = 0
    sim_iters: int = 100


PredictorFactory = Callable[[Knowledge], Predictor]
PlanSearch = Callable[[PlanProblem, Predictor, solvers.LatencyFn, solvers.Mode, int], solvers.SearchOutcome]


class TruthSearchResult(Protocol):
    """What a search on a ground truth found: its best outcome (or ``None``) and what finding it cost."""

    @property
    def best(self) -> Any: ...

    @property
    def n_measured(self) -> int: ...

    @property
    def budget(self) -> int: ...

    @property
    def solve_s(self) -> float: ...


class TruthSearch(Protocol):
    """A search that measures configurations on a ground truth (``judge``) instead of predicting them."""

    def __call__(
        self, problem: PlanProblem, judge: Callable[[Config], Any], space_size: int, seed: int, fraction: float
    ) -> TruthSearchResult:
        """Search ``problem``'s space, measuring at most ``fraction`` of its ``space_size`` configurations."""
        ...


@dataclass(frozen=True)
class Method:
    """One planning method.

    Attributes:
        name: the name the CLI and result files use (``srifty``, ``apm``, ...).
        label: how tables print it.
        role: srifty itself, a baseline, or an ablation of srifty.
        compute_model, network_model, iteration_model: how it predicts, in words.
        search: how it searches, in words.
        honours_constraints: whether it looks at the deadline and budget at all (the greedy heuristics do
            not: their configuration is reported even when it violates them).
        batch_policy: which local batches its problem allows (``knee``: srifty's pruning).
        predictor: builds its predictor from what it learned (for a heuristic: what scores its choice).
        plan_search: its search over a problem with that predictor, or ``None``.
        truth_search: its search on a ground truth, or ``None``.
        draws: for a random baseline, how many configurations it draws; an evaluation judges each and
            reports the median (``srifty plan`` shows the first). 0 for every other method.
    """

    name: str
    label: str
    role: Role
    compute_model: str
    network_model: str
    iteration_model: str
    search: str
    honours_constraints: bool
    batch_policy: BatchPolicy = "knee"
    predictor: PredictorFactory | None = None
    plan_search: PlanSearch | None = None
    truth_search: TruthSearch | None = None
    draws: int = 0

    @property
    def needs_truth(self) -> bool:
        """Whether it measures on a ground truth (only an evaluation can run it)."""
        return self.truth_search is not None

    def require_planning(self) -> PlanSearch:
        """Its search over a predicted problem.

        Raises:
            SpecError: it measures on a ground truth instead (only ``srifty eval cases`` can run it).
        """
        if self.plan_search is None:
            raise SpecError(
                f"{self.name} measures configurations on a ground truth instead of planning from a model; only "
                "`srifty eval cases` can run it."
            )
        return self.plan_search

    def make_predictor(self, knowledge: Knowledge) -> Predictor:
        """Its predictor over ``knowledge``.

        Raises:
            SpecError: it does not predict (it measures on a ground truth).
        """
        if self.predictor is None:
            raise SpecError(f"{self.name} does not predict: it measures configurations on a ground truth.")
        return self.predictor(knowledge)


def srifty_predictor(knowledge: Knowledge) -> Predictor:
    """srifty's: the simulator over the profiles and the learned bandwidth model."""
    simulator = Simulator(knowledge.profiles, knowledge.net_model, SimOptions(iters=knowledge.sim_iters))
    return SimPredictor(simulator, seed=knowledge.seed)


def default_alpha_beta() -> BusBandwidthModel:
    """APM's alpha-beta model fitted on the rows srifty's embedded default is fitted on (the network
    testbed's probes and the public nccl-tests tables), so that both know the same machines."""
    from srifty.network import load_default_training_set
    from srifty.plan.methods.alpha_beta import AlphaBetaModel

    return AlphaBetaModel().fit(load_default_training_set())


def apm_from(knowledge: Knowledge) -> Predictor:
    """APM's predictor: linear compute through the profiled batches, alpha-beta allreduce, no overlap."""
    alpha_beta = default_alpha_beta() if knowledge.alpha_beta is None else knowledge.alpha_beta
    return apm_predictor(knowledge.profiles, alpha_beta)


def paleo_from(knowledge: Knowledge) -> Predictor:
    """Paleo's predictor: analytical compute and allreduce from op counts and datasheets, no overlap."""
    return paleo_predictor(knowledge.profiles)


def greedy_search(build: Callable[[PlanProblem, solvers.LatencyFn], Config | None]) -> PlanSearch:
    """A search that builds one configuration by a heuristic and scores it with the predictor."""

    def run(problem: PlanProblem, predictor: Predictor, latency_ms: solvers.LatencyFn) -> solvers.SearchOutcome:
        scored = solvers.single(problem, predictor, build(problem, latency_ms))
        return solvers.SearchOutcome(scored, "heuristic", count_configs(problem))

    return solvers.full_signature(run)


_OPTIMIZER = "srifty's optimizer: exhaustive over the pruned space, or anchor + ILP when it is larger"
_SRIFTY_COMPUTE = "piecewise-linear latency per phase from <= 4 probes, with the measured spread"
_SRIFTY_NETWORK = "learned bus bandwidth (XGBoost, two models split at the MTU), capped fair sharing"
_SRIFTY_ITERATION = "t_fw + max(t_bwd, t_pe) + t_step; slowest rank per iteration; event-driven allreduce"
_ADDITIVE = "compute + communication, no overlap, no variance (Cynthia)"
_SCORED_BY_SRIFTY = "its one configuration is scored by srifty's simulator"

METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method(
            name="srifty",
            label="srifty",
            role="srifty",
            compute_model=_SRIFTY_COMPUTE,
            network_model=_SRIFTY_NETWORK,
            iteration_model=_SRIFTY_ITERATION,
            search=_OPTIMIZER,
            honours_constraints=True,
            predictor=srifty_predictor,
            plan_search=solvers.optimize,
        ),
        Method(
            name="apm",
            label="APM",
            role="baseline",
            compute_model="one least-squares line through the profiled batches (Nexus)",
            network_model="alpha-beta allreduce (Daydream), fitted on the same probe rows",
            iteration_model=_ADDITIVE,
            search=_OPTIMIZER,
            honours_constraints=True,
            predictor=apm_from,
            plan_search=solvers.optimize,
        ),
        Method(
            name="paleo",
            label="Paleo",
            role="baseline",
            compute_model="analytical: per-op FLOPs/peak + bytes/bandwidth on the datasheet, from op counts",
            network_model="Paleo's allreduce estimate (mean of tree and ring), from link ratings",
            iteration_model=_ADDITIVE,
            search=_OPTIMIZER,
            honours_constraints=True,
            predictor=paleo_from,
            plan_search=solvers.optimize,
        ),
        Method(
            name="cgf",
            label="CGF",
            role="baseline",
            compute_model="none: every GPU takes its largest batch",
            network_model="none",
            iteration_model=_SCORED_BY_SRIFTY,
            search="greedy: cheapest GPU per GPU-hour first, each type up to its quota",
            honours_constraints=False,
            predictor=srifty_predictor,
            plan_search=greedy_search(lambda problem, _latency: greedy.cgf(problem)),
        ),
        Method(
            name="fgf",
            label="FGF",
            role="baseline",
            compute_model="srifty's latency models, only to rank GPUs by samples/s at batch 64",
            network_model="none",
            iteration_model=_SCORED_BY_SRIFTY,
            search="greedy: fastest GPU first at batch 64 (largest batch when GPUs run short)",
            honours_constraints=False,
            predictor=srifty_predictor,
            plan_search=greedy_search(greedy.fgf),
        ),
        Method(
            name="random",
            label=f"random feasible (median of {DEFAULT_DRAWS})",
            role="baseline",
            compute_model="none",
            network_model="none",
            iteration_model="none: its draws are judged on the truth (srifty's simulator only reports predictions)",
            search=f"{DEFAULT_DRAWS} uniform draws from every configuration that places the global batch within "
            "the quotas (every power-of-two batch that fits); an evaluation reports the median draw",
            honours_constraints=False,
            batch_policy="all",
            predictor=srifty_predictor,
            plan_search=random_search(DEFAULT_DRAWS),
            draws=DEFAULT_DRAWS,
        ),
        Method(
            name="homogeneous",
            label="best homogeneous",
            role="baseline",
            compute_model=_SRIFTY_COMPUTE,
            network_model=_SRIFTY_NETWORK,
            iteration_model=_SRIFTY_ITERATION,
            search="every single-type configuration (one instance type and market, every power-of-two batch that "
            "fits), the best predicted: what srifty would choose if it could rent only one type",
            honours_constraints=True,
            batch_policy="all",
            predictor=srifty_predictor,
            plan_search=homogeneous_search,
        ),
        Method(
            name="srifty_all_batches",
            label="srifty, no knee pruning (ablation)",
            role="ablation",
            compute_model=_SRIFTY_COMPUTE,
            network_model=_SRIFTY_NETWORK,
            iteration_model=_SRIFTY_ITERATION,
            search=_OPTIMIZER + "; every power-of-two batch that fits (no knee floor)",
            honours_constraints=True,
            batch_policy="all",
            predictor=srifty_predictor,
            plan_search=solvers.optimize,
        ),
        Method(
            name="oracle_bo",
            label="Oracle BO",
            role="baseline",
            compute_model="none: measures each configuration it tries on the ground truth",
            network_model="none (measured)",
            iteration_model="none (measured)",
            search="GP Bayesian optimisation (Optuna) over homogeneous configurations, a third of the space",
            honours_constraints=True,
            batch_policy="all",
            truth_search=oracle_bo,
        ),
    )
}


def get_method(name: str) -> Method:
    """The registry entry named ``name``.

    Raises:
        SpecError: no such method, with the known names.
    """
    found = METHODS.get(name)
    if found is None:
        raise SpecError(f"unknown method '{name}'.{did_you_mean(name, METHODS)} Choose from {', '.join(METHODS)}.")
    return found


def planning_methods() -> tuple[str, ...]:
    """Methods that plan from what they learned (``srifty plan --method`` accepts these)."""
    return tuple(name for name, m in METHODS.items() if m.plan_search is not None)
