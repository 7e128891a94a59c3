"""The harder suite: a seeded generator of realistic job specs whose constraints bind (EMULATED cloud).

The paper's seven cases do not separate methods (small spaces, loose constraints). Each generated spec:

* trains one of the bundled models (taken in turn, so every model appears);
* offers 3-6 candidate types across GPU generations (T4, A10G, V100, A100, H100: AWS's g4dn, g5, p3, p4d,
  p5), at least two generations, spot where the catalog prices spot in the region and the draw says so,
  on-demand otherwise; quotas up to 64 VMs (fewer for the 4- and 8-GPU types);
* has a global batch of 256 to 8192, a goal (alternating), and as many iterations as keep the fastest
  configuration of its front computing for 30 minutes to 4 hours (drawn log-uniformly): a real training job,
  long enough that the VM launch (which srifty takes from the spec, 150 s by default, and the cloud draws,
  about 2 minutes) does not decide which configurations are feasible. (Before, 500 to 5000 iterations made
  some jobs mostly launch time, and a deadline 5% above the front then sat below the planner's own launch
  estimate: every predictor found nothing feasible there, whatever its models.)
* puts its constraint **near the time/cost Pareto front** of the reference world: configurations of the
  judge's space (every single-type shape and uniform draws of shapes, each dividing the work as well as it
  can: :mod:`srifty.evaluate.truth`) are judged cheaply on the generator's own emulated cloud (its seed is
  the suite seed), and the deadline (for ``min_cost``) or budget (for ``min_time``) is set 5%
  above a point of that front drawn 15-50% of the way from its fastest (cheapest) end, so the unconstrained
  optimum is out of reach and the constraint binds while that point stays feasible; a third of the specs get
  the other constraint too, 50% above the same point.

srifty's spaces (power-of-two batches up to what each GPU really holds) hold 100 to 10^7 configurations (the
candidates are drawn again until they do): the larger ones are anchor + ILP territory for srifty's planner.
Specs are ordinary
:class:`~srifty.spec.JobSpec` values; :func:`write_suite` saves them as YAML for ``srifty plan`` and reruns.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from srifty.artifacts import atomic_write_text
from srifty.catalog import Catalog
from srifty.cloud import EmulatedCloud
from srifty.evaluate.limits import TruthLimits
from srifty.evaluate.truth import TrueOutcome, TruthJudge, time_cost_front
from srifty.evaluate.truth.search import sample_shapes
from srifty.plan import build_problems, count_configs
from srifty.spec import JobSpec, spec_from_mapping

#: Instance types by GPU generation (AWS, us-east-1).
GENERATIONS: dict[str, tuple[str, ...]] = {
    "T4": ("g4dn.xlarge", "g4dn.2xlarge", "g4dn.12xlarge", "g4dn.metal"),
    "A10G": ("g5.xlarge", "g5.2xlarge", "g5.12xlarge", "g5.48xlarge"),
    "V100": ("p3.2xlarge", "p3.8xlarge", "p3.16xlarge"),
    "A100": ("p4d.24xlarge",),
    "H100": ("p5.4xlarge", "p5.48xlarge"),
}
#: The bundled models, taken in turn.
SUITE_MODELS = (
    "resnet50",
    "hf:bert-base",
    "vgg16",
    "srifty.compute.zoo:dlrm",
    "inception_v3",
    "hf:gpt2-small",
    "alexnet",
    "resnet18",
    "hf:xlm",
    "shufflenet_v2_x1_0",
    "mobilenet_v2",
    "hf:bert-small",
)
DEFAULT_SUITE_SIZE = 20
REGION = "us-east-1"
#: Judging for the generator's front: one placement, a few iterations (cheap, and only to place constraints).
FRONT_ALLOCATIONS, FRONT_ITERS, FRONT_DRAWS = 2, 10, 150
#: Slack of the binding constraint over its front point, and of the second constraint.
BINDING_SLACK, LOOSE_SLACK = 1.05, 1.5
#: Bounds on a generated spec's true space.
MIN_SPACE, MAX_SPACE = 100, 10_000_000
#: Range (s) of the fastest front configuration's compute time (iterations × its iteration time).
JOB_COMPUTE_S = (1800.0, 14_400.0)
#: Iterations the first front is judged with (only its iteration times are used).
PROVISIONAL_ITERATIONS = 1000


def _candidates(rng: np.random.Generator, catalog: Catalog) -> list[dict[str, Any]]:
    """3-6 candidates from at least two generations."""
    n_types = int(rng.integers(3, 7))
    generations = list(GENERATIONS)
    chosen_gens = list(rng.choice(generations, size=int(rng.integers(2, min(5, n_types) + 1)), replace=False))
    pool = [t for g in chosen_gens for t in GENERATIONS[g]]
    first = [str(rng.choice(GENERATIONS[g])) for g in chosen_gens]
    rest = [t for t in rng.permutation(pool) if t not in first]
    names = list(dict.fromkeys([*first, *rest]))[:n_types]
    out = []
    for name in names:
        instance = catalog.get(name, region=REGION, cloud="aws")
        has_spot = bool(instance.spot_usd_per_hour_by_zone)
        market = "spot" if has_spot and rng.random() < 0.6 else "on_demand"
        gpus = instance.gpus_per_vm
        quotas = (8, 16, 32, 64) if gpus == 1 else ((2, 4, 8, 16) if gpus == 4 else (1, 2, 4, 8))
        out.append({"instance_type": name, "market": market, "quota": int(rng.choice(quotas))})
    return out


def _front(spec: JobSpec, cloud: EmulatedCloud, seed: int, draws: int) -> list[TrueOutcome]:
    """The (time, cost) Pareto front of a cheap judging of the judge's space (``draws`` uniform shapes beside
    the single-type ones), fastest first."""
    judge = TruthJudge(cloud, spec, FRONT_ALLOCATIONS, FRONT_ITERS)
    configs = sample_shapes(judge, np.random.default_rng([seed, 3]), draws)
    return time_cost_front(judge.judge_all(configs))


def srifty_space_size(spec: JobSpec, cloud: EmulatedCloud) -> int:
    """Configurations of srifty's space for ``spec``: power-of-two batches up to what each GPU really holds."""
    limits = TruthLimits(cloud, spec.model.name or "")
    return sum(count_configs(p) for p in build_problems(spec, cloud.catalog, limits, "all"))


def generate_suite(
    n: int = DEFAULT_SUITE_SIZE, seed: int = 0, catalog: Catalog | None = None, front_draws: int = FRONT_DRAWS
) -> list[JobSpec]:
    """``n`` specs (see the module docstring); the same ``seed`` gives the same suite, and its first ``k`` specs
    are those of ``generate_suite(k, seed)``. ``front_draws``: shapes drawn for each front (fewer: a coarser
    front, for tests)."""
    from srifty.catalog import load_catalog

    catalog = catalog or load_catalog()
    cloud = EmulatedCloud(list(dict.fromkeys(SUITE_MODELS)), seed=seed, catalog=catalog, region=REGION)
    specs = []
    for i in range(n):
        rng = np.random.default_rng([seed, i])
        model = SUITE_MODELS[i % len(SUITE_MODELS)]
        goal = "min_cost" if i % 2 == 0 else "min_time"
        doc: dict[str, Any] = {
            "name": f"suite-{i:02d}-{model.replace(':', '-').replace('.', '-')}",
            "description": f"harder suite (seed {seed}), spec {i}: generated, constraints near the Pareto front",
            "model": model,
            "global_batch": int(2 ** rng.integers(8, 14)),
            "iterations": PROVISIONAL_ITERATIONS,
            "goal": goal,
            "region": REGION,
        }
        for _ in range(50):
            doc["candidates"] = _candidates(rng, catalog)
            base = spec_from_mapping(doc, f"suite spec {i}")
            if MIN_SPACE <= srifty_space_size(base, cloud) <= MAX_SPACE:
                break
        compute_s = float(np.exp(rng.uniform(*np.log(JOB_COMPUTE_S))))
        front = _front(base, cloud, seed + i, front_draws)
        if front:
            doc["iterations"] = max(PROVISIONAL_ITERATIONS // 10, round(compute_s / front[0].iter_s))
            base = spec_from_mapping(doc, f"suite spec {i}")
            front = _front(base, cloud, seed + i, front_draws)
        if front:
            u = float(rng.uniform(0.15, 0.5))
            # fastest first: min_cost binds on time near the fast end; min_time binds on cost near the cheap end
            point = (
                front[round(u * (len(front) - 1))] if goal == "min_cost" else front[::-1][round(u * (len(front) - 1))]
            )
            second = rng.random() < 1 / 3
            if goal == "min_cost":
                doc["deadline_s"] = round(BINDING_SLACK * point.time_s, 1)
                if second:
                    doc["budget_usd"] = round(LOOSE_SLACK * point.cost_usd, 3)
            else:
                doc["budget_usd"] = round(BINDING_SLACK * point.cost_usd, 3)
                if second:
                    doc["deadline_s"] = round(LOOSE_SLACK * point.time_s, 1)
        specs.append(spec_from_mapping(doc, f"suite spec {i}"))
    return specs


def write_suite(specs: Sequence[JobSpec], folder: Path) -> list[Path]:
    """Each spec as ``<name>.yaml`` in ``folder`` (written atomically); returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for spec in specs:
        doc = spec.model_dump(mode="json", exclude_defaults=True)
        doc["model"] = spec.model.name
        path = folder / f"{spec.name}.yaml"
        atomic_write_text(path, yaml.safe_dump(doc, sort_keys=False))
        paths.append(path)
    return paths
