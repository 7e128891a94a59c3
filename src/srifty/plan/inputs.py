"""What a plan needs besides the spec and catalog: a compute profile per GPU type, and a bandwidth model.

Profiles come, in order of preference, from the files the spec lists (``model.profiles``), from the
profiles bundled with srifty for that model, or, for GPU types with neither, from a cross-GPU estimate
with the calibrated GPU model (:mod:`srifty.compute.calibrated`) of the closest measured profile; every
source is recorded so the plan can say which numbers were measured and which were estimated, and each
estimate carries its expected error. The bandwidth model is the spec's ``network_model`` file or the
embedded default (emulated-testbed probes and public nccl-tests tables of real clusters); for every
candidate type the plan says whether the model was trained on it or answers from other machines'
measurements (:func:`describe_network`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from srifty.catalog import Catalog, InstanceType
from srifty.compute import Profile, load_profile
from srifty.compute.bundled import bundled_profiles_for, profile_filename
from srifty.errors import CatalogError, ProfileError
from srifty.plan.offers import expand_offers
from srifty.sim import BusBandwidthModel
from srifty.spec import JobSpec


@dataclass(frozen=True)
class PlanInputs:
    """Profiles by GPU name (or instance type name), where each came from, and the bandwidth model.

    Attributes:
        unplannable: GPUs with no profile that none could be estimated for, and why (their types are pruned).
    """

    profiles: dict[str, Profile]
    sources: dict[str, str]
    net_model: BusBandwidthModel
    net_source: str
    measure_hints: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    unplannable: dict[str, str] = field(default_factory=dict)
    net_notes: dict[str, str] = field(default_factory=dict)


def _check_model(profile: Profile, spec: JobSpec, origin: str) -> None:
    if spec.model.name is not None and profile.model != spec.model.name:
        raise ProfileError(
            f"{origin} profiles model '{profile.model}', but the spec trains '{spec.model.name}'; "
            "list profiles of the spec's model."
        )


def measure_command(model: str, gpu: str, instance: str) -> str:
    """The one command that measures ``model`` on a VM of ``instance`` (which has ``gpu``)."""
    return (
        f"on a {instance} VM: srifty profile --model {model} --device cuda "
        f"--out profiles/{profile_filename(model, gpu)}"
    )


def resolve_profiles(
    spec: JobSpec,
    catalog: Catalog,
    instances: Sequence[InstanceType] | None = None,
    unplannable: dict[str, str] | None = None,
) -> tuple[dict[str, Profile], dict[str, str], dict[str, str], list[str]]:
    """Profiles by catalog GPU name for every candidate type (or for ``instances``), their sources, how to
    measure the estimated ones, and warnings about measurements mixed from different software or settings
    (:func:`srifty.compute.provenance.mixing_warnings`).

    Args:
        unplannable: if given, a GPU whose profile cannot be estimated is recorded here with the reason instead
            of raising (``candidates: auto`` prunes its types).

    Raises:
        ProfileError: a listed file profiles another model, the job's CPU profiles come from different
            machines, or a GPU has no profile and none can be estimated.
    """
    from srifty.compute.provenance import check_one_machine, mixing_warnings

    available: dict[str, Profile] = {}
    sources: dict[str, str] = {}
    for path in spec.model.profiles:
        profile = load_profile(path)
        _check_model(profile, spec, str(path))
        label = profile.device.label
        available[label] = profile
        sources[label] = f"{'estimated' if profile.is_estimate else 'measured'}: {path}"
    model_name = spec.model.name or next(iter(available.values())).model
    for profile in bundled_profiles_for(model_name):
        label = profile.device.label
        if label not in available and profile.precision == spec.model.precision:
            available[label] = profile
            sources[label] = f"bundled, measured on {profile.device.name} ({profile.device.kind})"
    named = {f"{label} ({sources[label]})": p for label, p in available.items()}
    check_one_machine(named)
    warnings = mixing_warnings(named)
    hints: dict[str, str] = {}
    needed: dict[str, str] = {}
    targets = instances if instances is not None else [o.instance for o in expand_offers(spec, catalog)]
    for instance in targets:
        needed.setdefault(instance.gpu_name, instance.name)
    profiles: dict[str, Profile] = {}
    for gpu, instance_name in needed.items():
        if gpu in available:
            profiles[gpu] = available[gpu]
            continue
        measured = [p for p in available.values() if not p.is_estimate]
        if not measured:
            raise ProfileError(
                f"no profile of {model_name} to plan with: none listed in the spec, none bundled. Measure one: "
                f"{measure_command(model_name, gpu, instance_name)}, or `srifty profile --model {model_name}` on a CPU."
            )
        try:
            estimate, reason = _estimate(measured, catalog, gpu)
        except (ProfileError, CatalogError) as err:  # name the files it could not estimate from
            origins = "; ".join(sources[p.device.label] for p in measured)
            if unplannable is None:
                raise ProfileError(f"cannot estimate {gpu} from the measured profiles ({origins}): {err}") from None
            unplannable[gpu] = f"no profile of {model_name} on {gpu} and none can be estimated from {origins}: {err}"
            continue
        profiles[gpu] = estimate
        sources[gpu] = f"estimated from {reason}"
        hints[gpu] = measure_command(model_name, gpu, instance_name)
    return profiles, {gpu: sources[gpu] for gpu in profiles}, hints, warnings


def _estimate(measured: list[Profile], catalog: Catalog, gpu: str) -> tuple[Profile, str]:
    from srifty.compute.calibrated import calibrated_profile
    from srifty.compute.estimate import choose_source

    choice = choose_source(measured, gpu, catalog)
    estimate = calibrated_profile(choice.profile, gpu, catalog=catalog, reason=choice.reason)
    how = "GPU-to-GPU scaling" if choice.profile.device.kind == "cuda" else "op counts"
    return estimate, f"{choice.profile.device.label} profile ({how}, calibrated GPU model)"


def resolve_net_model(spec: JobSpec) -> tuple[Any, str]:
    """The spec's bandwidth model file, or the embedded default (see :mod:`srifty.network.default`)."""
    from srifty.network import BandwidthModel, load_default_model
    from srifty.network.default import DEFAULT_MODEL_SOURCE

    if spec.network_model is not None:
        return BandwidthModel.load(spec.network_model), f"file: {spec.network_model}"
    return load_default_model(), DEFAULT_MODEL_SOURCE


#: The transfer a network note describes: a 64 MiB gradient bucket (bandwidth-bound on every fabric).
NOTE_SIZE_BYTES = 64 * 2**20


def describe_network(net: Any, instances: Sequence[InstanceType]) -> dict[str, str]:
    """Per instance type, where the bandwidth model's answer for it comes from and how far off such answers
    were on held-out data, between 2 VMs and (for several GPUs per VM) within one; empty for a model that
    cannot say (``explain``)."""
    from srifty.sim.netquery import feature_frame

    explain = getattr(net, "explain", None)
    unique = list({i.name: i for i in instances}.values())
    if explain is None or not unique:
        return {}
    sizes = np.array([float(NOTE_SIZE_BYTES)])
    blocks = [(sizes, 2 * i.gpus_per_vm, 2, i) for i in unique]
    blocks += [(sizes, i.gpus_per_vm, 1, i) for i in unique if i.gpus_per_vm > 1]
    lines = iter(explain(feature_frame(blocks)))
    notes = {i.name: f"between VMs: {next(lines)}" for i in unique}
    for i in unique:
        if i.gpus_per_vm > 1:
            notes[i.name] += f"; inside one VM: {next(lines)}"
    return notes


def resolve(
    spec: JobSpec, catalog: Catalog, instances: Sequence[InstanceType] | None = None, tolerant: bool | None = None
) -> PlanInputs:
    """Profiles (for the spec's offers, or for ``instances``) and the bandwidth model for ``spec``.

    Args:
        tolerant: record GPUs that cannot be estimated in ``unplannable`` instead of raising; default: for
            ``candidates: auto`` (a listed candidate that cannot be planned is an error).
    """
    unplannable: dict[str, str] | None = {} if (spec.auto_candidates if tolerant is None else tolerant) else None
    profiles, sources, hints, warnings = resolve_profiles(spec, catalog, instances, unplannable)
    net, net_source = resolve_net_model(spec)
    targets = instances if instances is not None else [o.instance for o in expand_offers(spec, catalog)]
    plannable = [t for t in targets if not unplannable or t.name not in unplannable]
    return PlanInputs(
        profiles, sources, net, net_source, hints, tuple(warnings), unplannable or {}, describe_network(net, plannable)
    )
