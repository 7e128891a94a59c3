"""What a plan needs besides the spec and catalog: a compute profile per GPU type, and a bandwidth model.

Profiles come, in order of preference, from the files the spec lists (``model.profiles``), from the
profiles bundled with srifty for that model, or, for GPU types with neither, from a cross-GPU estimate
with the calibrated GPU model (:mod:`srifty.compute.gpu_estimate`) of the closest measured profile; every
source is recorded so the plan can say which numbers were measured and which were estimated, and each
estimate carries its expected error. The bandwidth model is the spec's ``network_model`` file or the
embedded default (emulated-testbed probes and public nccl-tests tables of real clusters); for every
candidate type the plan says whether the model was trained on it or answers from other machines'
measurements (:func:`describe_network`).
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from srifty.catalog import Catalog, InstanceType
from srifty.compute import (
    HF_MODELS,
    Profile,
    bundled_profiles_for,
    find_hf_config,
    load_profile,
    missing_hf_config,
    parse_model_name,
    profile_filename,
)
from srifty.errors import CatalogError, ProfileError, SpecError
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


def profile_command(spec: JobSpec, model: str, device: str = "cuda") -> str:
    """``srifty profile`` of the spec's model as the spec trains it (its precision, its tokens per sample)."""
    parts = ["srifty profile", f"--model {shlex.quote(model)}", f"--device {device}"]
    if spec.model.precision != "fp32":
        parts.append(f"--precision {spec.model.precision}")
    if spec.model.seq_len is not None and model.startswith("hf:"):
        parts.append(f"--seq-len {spec.model.seq_len}")
    return " ".join(parts)


def measure_command(spec: JobSpec, model: str, gpu: str, instance: str) -> str:
    """The one command that measures the spec's ``model`` on a VM of ``instance`` (which has ``gpu``)."""
    out = shlex.quote(f"profiles/{profile_filename(model, gpu)}")
    return f"on a {instance} VM: {profile_command(spec, model)} --out {out}"


def check_model_name(spec: JobSpec) -> None:
    """The spec's model name must be one srifty can profile (a typo gets "did you mean").

    Raises:
        SpecError: naming ``model.name``, the closest known names and the three kinds of name.
    """
    if spec.model.name is None:
        return
    try:
        parse_model_name(spec.model.name)
    except ProfileError as err:
        raise SpecError(f"model.name: {err}") from None


def _nothing_to_plan_with(
    spec: JobSpec, model: str, needed: dict[str, InstanceType], precisions: set[str], estimates: Sequence[str] = ()
) -> str:
    """Why there is no profile of ``model`` to plan with, and the commands that measure one (when they can run:
    an ``hf:`` model needs its configuration; a bf16 profile, a GPU with bf16). ``estimates``: the files the
    spec lists, each an estimate (which srifty does not estimate from again), with what each estimated."""
    bundled = (
        f"none bundled in {spec.model.precision} (bundled: {', '.join(sorted(precisions))}; `model.precision` chooses)"
        if precisions
        else "none bundled"
    )
    listed = (
        f"the spec lists only estimates ({'; '.join(estimates)}), and srifty estimates a GPU from a measured "
        "profile, not from another estimate"
        if estimates
        else "none listed in the spec (`model.profiles`)"
    )
    head = f"no profile of {model} to plan with on {', '.join(sorted(needed))}: {listed}, {bundled}."
    if model.startswith("hf:") and model[3:] not in HF_MODELS and find_hf_config(model[3:]) is None:
        return f"{head} Measuring it needs its configuration: {missing_hf_config(model[3:])}"
    able = [
        (gpu, i)
        for gpu, i in needed.items()
        if spec.model.precision != "bf16" or (i.gpu is not None and i.gpu.bf16_flops_per_s is not None)
    ]
    on_gpu = f", or {measure_command(spec, model, able[0][0], able[0][1].name)}" if able else ""
    return (
        f"{head} Measure one on a CPU: `{profile_command(spec, model, 'cpu')}` (srifty estimates every GPU "
        f"from it){on_gpu}."
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
    from srifty.compute import check_one_machine, mixing_warnings

    check_model_name(spec)
    noisy_listed: list[str] = []
    available: dict[str, Profile] = {}
    sources: dict[str, str] = {}
    listed_estimates: list[str] = []
    for path in spec.model.profiles:
        profile = load_profile(path)
        _check_model(profile, spec, str(path))
        label = profile.device.label
        if profile.is_estimate:
            listed_estimates.append(f"{path}: {label}, estimated from {profile.estimated_from}")
        available[label] = profile
        sources[label] = f"{'estimated' if profile.is_estimate else 'measured'}: {path}"
        noisy = profile.noisy_samples()
        if noisy is not None:
            noisy_listed.append(f"{path}: {noisy}")
    model_name = spec.model.name or next(iter(available.values())).model
    for profile in bundled_profiles_for(model_name):
        label = profile.device.label
        if label not in available and profile.precision == spec.model.precision:
            available[label] = profile
            sources[label] = f"bundled, measured on {profile.device.name} ({profile.device.kind})"
    named = {f"{label} ({sources[label]})": p for label, p in available.items()}
    check_one_machine(named)
    warnings = mixing_warnings(named) + noisy_listed
    hints: dict[str, str] = {}
    needed: dict[str, str] = {}
    first: dict[str, InstanceType] = {}
    targets = instances if instances is not None else [o.instance for o in expand_offers(spec, catalog)]
    for instance in targets:
        needed.setdefault(instance.gpu_name, instance.name)
        first.setdefault(instance.gpu_name, instance)
    profiles: dict[str, Profile] = {}
    for gpu, instance_name in needed.items():
        if gpu in available:
            profiles[gpu] = available[gpu]
            continue
        measured = [p for p in available.values() if not p.is_estimate]
        if not measured and available and unplannable is not None:
            listed = ", ".join(sorted(available))
            unplannable[gpu] = f"no profile of {model_name} on {gpu} (only {listed}) and none measured to estimate from"
            continue
        if not measured:
            precisions = {p.precision for p in bundled_profiles_for(model_name)}
            raise ProfileError(_nothing_to_plan_with(spec, model_name, first, precisions, listed_estimates))
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
        hints[gpu] = measure_command(spec, model_name, gpu, instance_name)
    return profiles, {gpu: sources[gpu] for gpu in profiles}, hints, warnings


def _estimate(measured: list[Profile], catalog: Catalog, gpu: str) -> tuple[Profile, str]:
    from srifty.compute import calibrated_profile, choose_source

    choice = choose_source(measured, gpu, catalog)
    estimate = calibrated_profile(choice.profile, gpu, catalog=catalog, reason=choice.reason)
    how = "GPU-to-GPU scaling" if choice.profile.device.kind == "cuda" else "op counts"
    return estimate, f"{choice.profile.device.label} profile ({how}, calibrated GPU model)"


def resolve_net_model(spec: JobSpec) -> tuple[Any, str]:
    """The spec's bandwidth model file, or the embedded default (see :mod:`srifty.network.default`), loaded
    once per process (a run re-plans with it; it is only read)."""
    from srifty.network import DEFAULT_MODEL_SOURCE, BandwidthModel

    if spec.network_model is not None:
        return BandwidthModel.load(spec.network_model), f"file: {spec.network_model}"
    return _default_net_model(), DEFAULT_MODEL_SOURCE


@functools.cache
def _default_net_model() -> Any:
    from srifty.network import load_default_model

    return load_default_model()


#: The transfer a network note describes: a 64 MiB gradient bucket (bandwidth-bound on every fabric).
NOTE_SIZE_BYTES = 64 * 2**20


def describe_network(net: Any, instances: Sequence[InstanceType]) -> dict[str, str]:
    """Per instance type, where the bandwidth model's answer for it comes from and how far off such answers
    were on held-out data, between 2 VMs and (for several GPUs per VM) within one; empty for a model that
    cannot say (``explain``)."""
    from srifty.sim import feature_frame

    explain = getattr(net, "explain", None)
    unique = list({i.name: i for i in instances}.values())
    if explain is None or not unique:
        return {}
    sizes = np.array([float(NOTE_SIZE_BYTES)])
    blocks = [(sizes, 2 * i.gpus_per_vm, 2, i, "allreduce", 1) for i in unique]
    blocks += [(sizes, i.gpus_per_vm, 1, i, "allreduce", 1) for i in unique if i.gpus_per_vm > 1]
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
