"""One emulated cloud for an evaluation, and what srifty knows of each model before measuring anything.

The cloud trains the bundled workloads, plus any model a given profile (with op counts) describes
(:mod:`srifty.evaluate.workloads`). srifty's side keeps a *template* profile per model (the bundled CPU
profile, or the given one): its names, input, precision and op counts describe the model; its times are never
used on the cloud (:mod:`srifty.evaluate.profiling` measures them there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from srifty.catalog import Catalog
from srifty.cloud import NO_STRAGGLERS, EmulatedCloud
from srifty.compute import Profile
from srifty.evaluate.profiling import templates_for
from srifty.evaluate.workloads import extra_workloads, profiles_in


@dataclass(frozen=True)
class World:
    """An emulated cloud, the same cloud without stragglers (a counterfactual for explanations, never for
    judging), and srifty's template profile of each model it trains."""

    cloud: EmulatedCloud
    templates: dict[str, Profile]
    steady: EmulatedCloud


def make_world(
    models: Sequence[str],
    seed: int,
    catalog: Catalog,
    region: str = "us-east-1",
    cloud: str = "aws",
    profile_dirs: Sequence[Path] = (),
    precision: str = "fp32",
) -> World:
    """The cloud of seed ``seed`` training ``models``.

    Raises:
        CloudError: a model neither bundled nor described by a profile in ``profile_dirs``.
    """
    names = list(dict.fromkeys(models))
    given = profiles_in(profile_dirs, precision)
    extra = extra_workloads(names, given)
    emulated = EmulatedCloud(names, seed=seed, catalog=catalog, region=region, cloud=cloud, extra_workloads=extra)
    steady = EmulatedCloud(
        names,
        seed=seed,
        catalog=catalog,
        region=region,
        cloud=cloud,
        extra_workloads=extra,
        calibration=replace(emulated.calibration, stragglers=NO_STRAGGLERS),
    )
    return World(emulated, templates_for(names, given), steady)
