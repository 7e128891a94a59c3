"""srifty as SkyPilot's time estimator: ``task.set_time_estimator(time_estimator(spec, task.num_nodes))``.

SkyPilot's optimizer asks a task's estimator for the run time of each candidate resource it was given (a
partial ``Resources``: accelerators and count per node, maybe a cloud, region, instance type or spot), treats
every launchable version of it alike, and multiplies by the hourly price and the task's node count for cost;
without an estimator it assumes one hour for every candidate. The estimator here answers with srifty's
prediction of the whole job on ``num_nodes`` nodes of that resource (the task's own node count: SkyPilot
does not pass it, so it is bound when the estimator is made), scored exactly as ``srifty plan`` scores a
configuration (the same profiles, bandwidth model, simulator and job-time formula: iterations times the mean
iteration time, plus one VM launch and one checkpoint restore). On spot it adds the expected cost of losing
VMs, from srifty's spot model (:mod:`srifty.spot`, fitted on real traces; see :func:`expected_spot_loss_s`).

SkyPilot's instance types and GPU names are its catalog's, which srifty's bundled catalog was taken from: a
resource naming an instance type is that type; one naming only ``GPU:count`` is the cheapest on-demand type of
srifty's catalog with that many of that GPU per VM (in the resource's cloud and region when it names them;
the prediction depends on the GPU, its count and the network of the type, not on its price). A resource
srifty cannot map, or whose share of the global batch does not fit a GPU, gets ``math.inf``: SkyPilot then
never prefers it.

The function is called inside SkyPilot's process (its optimizer runs in-process: ``sky.optimizer.Optimizer.
optimize(dag)``; SkyPilot 0.14's client API sends a task to its API server as YAML, which carries no
estimator), so srifty must be importable there: ``pip install srifty`` into SkyPilot's environment (with
skypilot 0.14.1 pip resolves it without changing any of SkyPilot's pins; tested in ``make test``). Nothing
here imports SkyPilot; the resource is read by attribute.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srifty.catalog import Catalog, InstanceType, load_catalog
from srifty.errors import CatalogError, SpecError
from srifty.spec import JobSpec

#: Seconds SkyPilot's optimizer assumes for a task without an estimator.
SKYPILOT_DEFAULT_S = 3600.0


@dataclass(frozen=True)
class NodeEstimate:
    """srifty's answer for ``num_nodes`` VMs of one instance type on one market.

    ``job_time_s`` is what SkyPilot gets: the job's predicted wall time, overheads and (spot) expected losses
    included; ``cost_usd`` is srifty's own price for it (in the zone srifty would place it).
    """

    instance_type: str
    market: str
    num_nodes: int
    local_batch: int
    iter_mean_s: float
    job_time_s: float
    cost_usd: float
    spot_loss_s: float = 0.0
    zone: str | None = None
    note: str = ""

    @property
    def config(self) -> str:
        """The paper's notation of the configuration, ``2xp5.48xlarge@64``."""
        return f"{self.num_nodes}x{self.instance_type}@{self.local_batch}"


def expected_spot_loss_s(
    work_s: float, events_per_hour: float, relaunch_s: float, checkpoint_s: float
) -> tuple[float, float]:
    """Expected extra seconds from spot losses over ``work_s`` of training, and the checkpoint interval (s).

    Losses arrive as a Poisson process at ``events_per_hour`` (for the configuration's VMs held together,
    correlated losses counted once: :meth:`srifty.spot.SpotFigures.events_per_hour`). Each costs a relaunch and
    restore (``relaunch_s``) plus the work since the last checkpoint, half an interval on average; checkpoints
    every ``τ = sqrt(2·C·MTBF)`` (Young's rule, ``C = checkpoint_s``; at most the work itself) cost ``C``
    each. First order in the loss rate: ``extra = work·C/τ + E[losses]·(relaunch + τ/2)`` with
    ``E[losses] = rate·(work + extra)``, solved for ``extra``; ``math.inf`` when losses come faster than work is
    kept.
    """
    rate_per_s = events_per_hour / 3600.0
    if rate_per_s <= 0 or work_s <= 0:
        return 0.0, math.inf
    # an interval longer than the job means no checkpoint within it: a loss then costs up to the work so far
    tau = min(math.sqrt(2.0 * max(checkpoint_s, 1e-3) / rate_per_s), work_s)
    per_loss = relaunch_s + tau / 2.0
    keep = 1.0 - rate_per_s * per_loss
    if keep <= 0:
        return math.inf, tau
    checkpoints = work_s * checkpoint_s / tau
    return (checkpoints + rate_per_s * work_s * per_loss) / keep, tau


def job_spec(spec_or_profile: JobSpec | str | Path, global_batch: int | None, iterations: int | None) -> JobSpec:
    """A job spec from a spec, a spec file, or a profile file (``srifty profile --out``) with the job's global
    batch and iterations (minimum cost, the bundled catalog's AWS types).

    Raises:
        SpecError: a profile without the job, or a bad spec or profile file.
    """
    from srifty.spec import load_spec, spec_from_mapping

    if isinstance(spec_or_profile, JobSpec):
        return spec_or_profile
    path = Path(spec_or_profile)
    if path.suffix in (".yaml", ".yml"):
        return load_spec(path)
    if global_batch is None or iterations is None:
        raise SpecError(f"time_estimator({path}): a profile needs the job too; give global_batch= and iterations=")
    job = {"model": {"profiles": [str(path)]}, "global_batch": global_batch, "iterations": iterations}
    return spec_from_mapping(job, f"the job of profile {path}")


@dataclass
class SkyEstimator:
    """Called by SkyPilot with a ``Resources``; returns srifty's predicted job time in seconds.

    Attributes:
        answers: every estimate made, keyed by (instance type, market, region): what SkyPilot was told.
    """

    spec: JobSpec
    num_nodes: int
    catalog: Catalog
    iters: int = 100
    answers: dict[tuple[str, str, str], NodeEstimate] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.num_nodes < 1:
            raise SpecError(f"num_nodes must be at least 1, got {self.num_nodes}")
        self._scorers: dict[str, Any] = {}

    def __call__(self, resources: Any) -> float:
        estimate = self.estimate(resources)
        return math.inf if estimate is None else estimate.job_time_s

    def estimate(self, resources: Any) -> NodeEstimate | None:
        """srifty's estimate for SkyPilot's ``resources`` on this task's node count (``None``: cannot map)."""
        instance = self.instance_for(resources)
        if instance is None:
            return None
        market = "spot" if getattr(resources, "use_spot", False) else "on_demand"
        return self.estimate_type(instance, market)

    def instance_for(self, resources: Any) -> InstanceType | None:
        """srifty's catalog record for a SkyPilot resource (see the module docstring), or ``None``."""
        cloud = _cloud_name(getattr(resources, "cloud", None))
        region = getattr(resources, "region", None)
        name = getattr(resources, "instance_type", None)
        if name:
            try:
                return self.catalog.get(name, region, cloud) if region else _first(self.catalog, name, cloud)
            except CatalogError:
                return None
        accelerators: Mapping[str, float] = getattr(resources, "accelerators", None) or {}
        if len(accelerators) != 1:
            return None
        ((gpu, count),) = accelerators.items()
        try:
            rows = self.catalog.find(gpu=gpu, cloud=cloud, region=region, market="on_demand")
        except CatalogError:
            return None
        rows = [t for t in rows if t.gpus_per_vm == int(count) and t.price_covers_host_vm] or [
            t for t in rows if t.gpus_per_vm == int(count)
        ]
        return min(
            rows, key=lambda t: (t.cloud != "aws", t.on_demand_usd_per_hour or math.inf, t.region, t.name), default=None
        )

    def estimate_type(self, instance: InstanceType, market: str) -> NodeEstimate | None:
        """``num_nodes`` VMs of ``instance`` on ``market``, scored as ``srifty plan`` scores them."""
        key = (instance.name, market, instance.region)
        if key not in self.answers:
            answer = _score_nodes(self.spec, self.catalog, instance, market, self.num_nodes, self.iters, self._scorers)
            if answer is None:
                return None
            self.answers[key] = answer
        return self.answers[key]


def _cheapest_first(t: InstanceType) -> tuple[bool, float, str, str]:
    return (t.cloud != "aws", t.on_demand_usd_per_hour or math.inf, t.region, t.name)


def _cloud_name(cloud: Any) -> str | None:
    if cloud is None:
        return None
    text = str(cloud).lower()
    return {"aws": "aws", "azure": "azure", "gcp": "gcp"}.get(text)


def _first(catalog: Catalog, name: str, cloud: str | None) -> InstanceType:
    rows = [t for t in catalog.instance_types if t.name == name and (cloud is None or t.cloud == cloud)]
    if not rows:
        raise CatalogError(f"unknown instance type '{name}'")
    return min(rows, key=lambda t: (t.on_demand_usd_per_hour or math.inf, t.region))


def _score_nodes(
    spec: JobSpec, catalog: Catalog, instance: InstanceType, market: str, nodes: int, iters: int, cache: dict[str, Any]
) -> NodeEstimate | None:
    """srifty's prediction of ``nodes × instance`` on ``market`` with the planner's own predictor and scoring."""
    from srifty.plan import Knowledge, MemoPredictor, Offer, ProfileLimits, build_problems, get_method, resolve, score
    from srifty.vocab import Config, ConfigGroup

    if market == "spot" and not instance.has_spot:
        return None
    world = nodes * instance.gpus_per_vm
    if spec.global_batch % world:
        return None  # srifty keeps the global batch exact; this many GPUs cannot share it evenly
    local_batch = spec.global_batch // world
    entry = get_method("srifty")
    if instance.gpu_name not in cache:
        inputs = resolve(spec, catalog, [instance])
        if instance.gpu_name in inputs.unplannable and instance.name not in inputs.profiles:
            cache[instance.gpu_name] = None
        else:
            knowledge = Knowledge(inputs.profiles, inputs.net_model, seed=spec.seed, sim_iters=iters)
            cache[instance.gpu_name] = (inputs, MemoPredictor(entry.make_predictor(knowledge)))
    if cache[instance.gpu_name] is None:
        return None
    inputs, predictor = cache[instance.gpu_name]
    limits = ProfileLimits(inputs.profiles)
    if local_batch > limits.max_batch(instance):
        return None  # does not fit a GPU's memory
    problems = build_problems(spec, catalog, limits, entry.batch_policy, offers=[Offer(instance, market, nodes)])  # type: ignore[arg-type]
    if market == "spot":  # srifty places a spot configuration in the cheapest zone offering the type
        placed = [p for p in problems if p.placement is not None and p.placement.zone is not None]
        problem = min(placed, key=lambda p: instance.price_usd_per_hour("spot", p.placement.zone))  # type: ignore[union-attr]
    else:
        problem = next(p for p in problems if p.placement is None or p.placement.zone is None)
    zone = problem.placement.zone if problem.placement is not None else None
    config = Config((ConfigGroup(instance, nodes, local_batch, market),), zone)  # type: ignore[arg-type]
    scored = score(problem, config, predictor.predict(problem.place(config)))
    loss_s = 0.0
    if market == "spot":
        loss_s = _spot_loss_s(spec, instance, zone, nodes, spec.iterations * scored.estimate.iter_mean_s)
    time_s = scored.time_s + loss_s
    cost = problem.cost_usd(scored.price_usd_per_hour, time_s)
    return NodeEstimate(
        instance.name, market, nodes, local_batch, scored.estimate.iter_mean_s, time_s, cost, loss_s, zone
    )


def _spot_loss_s(spec: JobSpec, instance: InstanceType, zone: str | None, nodes: int, work_s: float) -> float:
    from srifty.spot import default_spot_model

    figures = default_spot_model().figures_for(instance.name, zone, instance.region)
    relaunch_s = spec.overheads.vm_launch_s + spec.overheads.checkpoint_restore_s
    extra, _ = expected_spot_loss_s(
        work_s, figures.events_per_hour(nodes), relaunch_s, spec.overheads.checkpoint_restore_s
    )
    return extra


def time_estimator(
    spec_or_profile: JobSpec | str | Path,
    num_nodes: int = 1,
    *,
    global_batch: int | None = None,
    iterations: int | None = None,
    catalog: Catalog | None = None,
    iters: int = 100,
) -> SkyEstimator:
    """A function for ``sky.Task.set_time_estimator``: srifty's predicted job time (s) on ``num_nodes`` nodes.

    Args:
        spec_or_profile: a :class:`~srifty.spec.JobSpec`, a spec file, or a profile file (then give
            ``global_batch`` and ``iterations``).
        num_nodes: the task's node count (``task.num_nodes``): SkyPilot does not pass it to the estimator.
        iters: iterations the simulator samples per configuration.

    Raises:
        SpecError: a bad spec or profile, or a node count below 1.
    """
    return SkyEstimator(
        job_spec(spec_or_profile, global_batch, iterations), num_nodes, catalog or load_catalog(), iters
    )
