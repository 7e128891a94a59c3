"""``srifty eval accuracy``: one-shot iteration-time prediction error over a large grid (paper, Table 5 and
Figure 7), on the emulated cloud.

The grid: every model × instance type × world size (1 to 64 GPUs, whole VMs) × local batch (powers of
two that fit, up to ``max_batch``), homogeneous configurations as in the paper's 2K-setup study. Each
configuration is one *experiment*: a fresh allocation (its own placement draw) and ``iters`` iterations,
whose mean is the measured truth. Every method that predicts does so one-shot from what it learned on the
cloud (:data:`PREDICTING`): srifty (4-probe profiles, the bandwidth model fitted on the grid probe), APM
(linear compute, alpha-beta, no overlap) and Paleo (analytical from op counts and datasheets). The other
methods predict with srifty's simulator (CGF, FGF, random, homogeneous) or measure (Oracle BO). Errors are
``(predicted − measured) / measured``; MAPE is the mean of their absolute values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from srifty.catalog import load_catalog
from srifty.cloud import EmulatedCloud, named_rng
from srifty.evaluate.learn import DEFAULT_FIT_TRIALS, learn_network
from srifty.evaluate.profiling import profile_gpus
from srifty.evaluate.world import make_world
from srifty.plan import Knowledge, get_method, powers_of_two
from srifty.vocab import make_config

#: The case studies' models.
DEFAULT_MODELS = (
    "resnet50",
    "vgg16",
    "alexnet",
    "inception_v3",
    "shufflenet_v2_x1_0",
    "srifty.compute.zoo:dlrm",
    "hf:bert-base",
    "hf:xlm",
)
#: T4, V100 and A10G types with one and four GPUs per VM (the paper used g3, g4dn and p3), and the newer
#: generations the harder suite rents: A100 (8 per VM) and H100 (1 per VM).
DEFAULT_TYPES = (
    "g4dn.2xlarge",
    "g4dn.8xlarge",
    "g4dn.12xlarge",
    "p3.2xlarge",
    "p3.8xlarge",
    "g5.12xlarge",
    "p4d.24xlarge",
    "p5.4xlarge",
)
DEFAULT_WORLD_SIZES = (1, 2, 4, 8, 16, 32, 64)

Progress = Callable[[str], None]
#: Methods with a predictor of their own.
PREDICTING = ("srifty", "apm", "paleo")


@dataclass(frozen=True)
class AccuracySettings:
    """The grid and how each point is measured.

    Attributes:
        seed: seeds the cloud, the learners and every experiment.
        models: model names (each needs a source profile).
        instance_types: catalog types (in ``region``).
        world_sizes: GPUs per experiment (only multiples of a type's GPUs per VM are used).
        max_batch: largest local batch tried (also limited by what fits).
        iters: iterations per experiment.
        fit_trials: Optuna trials per side of the MTU for srifty's bandwidth model.
        probe_allocations: allocations the network is probed on, per type.
        profile_dirs: folders of profiles (with op counts) of models the cloud does not bundle.
        region: where the types are rented.
    """

    seed: int = 0
    models: tuple[str, ...] = DEFAULT_MODELS
    instance_types: tuple[str, ...] = DEFAULT_TYPES
    world_sizes: tuple[int, ...] = DEFAULT_WORLD_SIZES
    max_batch: int = 256
    iters: int = 20
    fit_trials: int = DEFAULT_FIT_TRIALS
    probe_allocations: int = 3
    profile_dirs: tuple[Path, ...] = ()
    region: str = "us-east-1"


@dataclass(frozen=True)
class AccuracyRun:
    """Every experiment of the grid and the summaries."""

    rows: tuple[dict[str, Any], ...]
    summary: dict[str, Any]
    settings: AccuracySettings
    cloud: dict[str, Any]
    elapsed_s: float
    skipped: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without ``kind``/``schema_version``)."""
        settings = asdict(self.settings)
        settings["profile_dirs"] = [str(p) for p in self.settings.profile_dirs]
        return {
            "emulated": True,
            "note": "EMULATED cloud: 'measured' iteration times come from srifty's emulated cloud, not real VMs",
            "settings": settings,
            "cloud": self.cloud,
            "elapsed_s": self.elapsed_s,
            "summary": self.summary,
            "skipped": list(self.skipped),
            "rows": list(self.rows),
        }


def grid_configs(cloud: EmulatedCloud, model: str, instance_type: str, settings: AccuracySettings) -> list[Any]:
    """Homogeneous configurations of the grid for one model and type."""
    instance = cloud.instance(instance_type)
    fits = cloud.max_batch(instance.gpu_name, model)
    out = []
    for world in settings.world_sizes:
        if world % instance.gpus_per_vm:
            continue
        for batch in powers_of_two(1, min(fits, settings.max_batch)):
            out.append(make_config([(instance, world // instance.gpus_per_vm, batch)]))
    return out


def error_stats(errors: Sequence[float]) -> dict[str, Any]:
    """MAPE, underestimation rate, MAPE when underestimating and its 90th percentile (fractions)."""
    e = np.asarray(errors, dtype=float)
    if e.size == 0:
        return {"n": 0, "mape": None, "under_rate": None, "under_mape": None, "under_p90": None}
    under = -e[e < 0]
    return {
        "n": int(e.size),
        "mape": float(np.mean(np.abs(e))),
        "under_rate": float(np.mean(e < 0)),
        "under_mape": float(np.mean(under)) if under.size else 0.0,
        "under_p90": float(np.percentile(under, 90)) if under.size else 0.0,
    }


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Error statistics of each predicting method overall and by model, world size and instance type."""
    out: dict[str, Any] = {}
    for method in (m for m in PREDICTING if rows and f"{m}_error" in rows[0]):
        errs = [r[f"{method}_error"] for r in rows]
        by: dict[str, dict[str, Any]] = {}
        for key in ("model", "world_size", "instance_type"):
            groups: dict[str, list[float]] = {}
            for r in rows:
                groups.setdefault(str(r[key]), []).append(r[f"{method}_error"])
            by[key] = {k: error_stats(v) for k, v in groups.items()}
        out[method] = {"overall": error_stats(errs), "by": by}
    return out


def run_accuracy(settings: AccuracySettings, progress: Progress | None = None) -> AccuracyRun:
    """Measure and predict every configuration of the grid (see the module docstring).

    Raises:
        CloudError: a model has no source profile.
        CatalogError: an unknown instance type.
    """
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    catalog = load_catalog()
    world = make_world(settings.models, settings.seed, catalog, settings.region, profile_dirs=settings.profile_dirs)
    cloud = world.cloud
    types = list(settings.instance_types)
    for name in types:
        cloud.instance(name)
    say(f"probing the network of {', '.join(types)} and fitting the models")
    network = learn_network(cloud, types, settings.seed, settings.fit_trials, settings.probe_allocations)
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for model in settings.models:
        say(f"{model}: profiling and predicting the grid")
        profiles = profile_gpus(cloud, model, types, settings.seed, world.templates[model], catalog)
        knowledge = Knowledge(profiles, network.bandwidth_model, network.alpha_beta, seed=settings.seed)
        predictors = {m: get_method(m).make_predictor(knowledge) for m in PREDICTING}
        for name in types:
            configs = grid_configs(cloud, model, name, settings)
            if not configs:
                skipped.append(f"{model} on {name}: no batch fits")
            for config in configs:
                tag = config.notation()
                allocation = cloud.allocate(config, named_rng(settings.seed, "accuracy", model, tag))
                measured = float(
                    cloud.iteration_times_s(
                        config,
                        allocation,
                        settings.iters,
                        named_rng(settings.seed, "accuracy-iters", model, tag),
                        model=model,
                    ).mean()
                )
                group = config.groups[0]
                row: dict[str, Any] = {
                    "model": model,
                    "instance_type": name,
                    "gpu": group.instance.gpu_name,
                    "world_size": config.world_size,
                    "n_vms": config.n_vms,
                    "local_batch": group.local_batch,
                    "measured_iter_s": measured,
                    "truth_certainty": cloud.truth(group.instance.gpu_name, model).certainty,
                    "allocation_id": allocation.allocation_id,
                }
                for method, predictor in predictors.items():
                    predicted = predictor.predict(config).iter_mean_s
                    row[f"{method}_iter_s"] = predicted
                    row[f"{method}_error"] = predicted / measured - 1.0
                rows.append(row)
    return AccuracyRun(
        rows=tuple(rows),
        summary=summarise(rows),
        settings=settings,
        cloud=cloud.describe(),
        elapsed_s=time.perf_counter() - started,
        skipped=tuple(skipped),
    )
