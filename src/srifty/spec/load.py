"""Load a job spec from YAML and check it against the catalog, with messages that name the fix."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from srifty.catalog import Catalog, load_catalog
from srifty.errors import CatalogError, SpecError, did_you_mean
from srifty.spec.model import (
    FIELD_EXPECTATIONS,
    REQUIRED_EXAMPLES,
    CandidateFilter,
    CandidateSpec,
    JobSpec,
    ModelSpec,
    OverheadSpec,
    PreemptionSpec,
    ScenarioSpec,
)

_MODELS_BY_PATH: dict[str, type[BaseModel]] = {
    "": JobSpec,
    "model": ModelSpec,
    "overheads": OverheadSpec,
    "candidates": CandidateSpec,
    "filter": CandidateFilter,
    "emulation": ScenarioSpec,
    "emulation.preemptions": PreemptionSpec,
}


def _dotted(loc: Sequence[str | int]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _generic(loc: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in loc if not isinstance(p, int))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe_error(err: dict[str, Any]) -> str:
    loc = [p for p in err["loc"] if p not in ("function-after", "function-before")]
    kind = err["type"]
    where = _dotted(loc)
    generic = _generic(loc)
    if kind == "extra_forbidden":
        parent_path = _generic(loc[:-1])
        model = _MODELS_BY_PATH.get(parent_path, JobSpec)
        valid = sorted(model.model_fields)
        parent = _dotted(loc[:-1]) or "the spec"
        return (
            f"unknown key '{loc[-1]}' in {parent}.{did_you_mean(str(loc[-1]), valid)} Valid keys: {', '.join(valid)}."
        )
    if kind == "missing":
        example = REQUIRED_EXAMPLES.get(generic)
        hint = f" Add it, for example `{example}`." if example else ""
        expectation = FIELD_EXPECTATIONS.get(generic)
        what = f" It must be {expectation}." if expectation else ""
        return f"{where} is required but missing.{what}{hint}"
    if kind == "value_error":
        prefix = f"{where}: " if where else ""
        return prefix + str(err.get("ctx", {}).get("error", err["msg"]))
    expectation = FIELD_EXPECTATIONS.get(generic)
    if expectation is None:
        return f"{where}: {err['msg']} (got {_shown(err.get('input'))})."
    return f"{where} must be {expectation}, got {_shown(err.get('input'))}."


def _drop_redundant(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors, minus a list's "too short" when its items failed (the item errors say more)."""
    errors: list[dict[str, Any]] = [dict(e) for e in exc.errors()]
    item_locs = [tuple(e["loc"]) for e in errors]

    def has_failed_items(loc: tuple[Any, ...]) -> bool:
        return any(len(other) > len(loc) and other[: len(loc)] == loc for other in item_locs)

    return [e for e in errors if not (e["type"] == "too_short" and has_failed_items(tuple(e["loc"])))]


def spec_from_mapping(data: Any, source: str = "spec") -> JobSpec:
    """Validate a parsed YAML/JSON mapping into a :class:`JobSpec`.

    Raises:
        SpecError: one message per problem, each naming the field and what it must be.
    """
    if data is None:
        raise SpecError(
            f"{source} is empty. A job spec needs at least model, global_batch, iterations and goal; see the "
            "files in examples/."
        )
    if not isinstance(data, dict):
        raise SpecError(f"{source} must be a YAML mapping of fields, got a {type(data).__name__}.")
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        errors = _drop_redundant(exc)
        problems = [_describe_error(e) for e in errors]
        if len(problems) == 1:
            raise SpecError(f"{source}: {problems[0]}") from None
        listed = "\n".join(f"  - {p}" for p in problems)
        raise SpecError(f"{source} has {len(problems)} problems:\n{listed}") from None


def check_against_catalog(spec: JobSpec, catalog: Catalog, source: str = "spec") -> None:
    """Check that the spec's regions, zones, GPU filter and quota keys exist in its clouds, and that every
    listed candidate exists there on its market and zone.

    Raises:
        SpecError: naming the field and the closest valid names.
    """
    _check_places(spec, catalog, source)
    if spec.auto_candidates:
        _check_auto(spec, catalog, source)
        return
    for index, cand in enumerate(spec.candidates):
        where = f"{source}: candidates[{index}]"
        region = cand.region or spec.region
        clouds = (cand.cloud,) if cand.cloud else spec.search_clouds
        if region is None:
            offered = [t for t in catalog.instance_types if t.name == cand.instance_type and t.cloud in clouds]
            if not offered:
                try:
                    catalog.get(cand.instance_type, cloud=clouds[0] if len(clouds) == 1 else None)
                except CatalogError as err:
                    raise SpecError(f"{where}.instance_type: {err}") from None
                raise SpecError(f"{where}.instance_type: {cand.instance_type} is not offered in {', '.join(clouds)}.")
            if cand.zone is not None and not any(cand.zone in t.zones for t in offered):
                raise SpecError(f"{where}.zone: no region offers {cand.instance_type} in zone '{cand.zone}'.")
            continue
        try:
            instance = catalog.get(cand.instance_type, region=region, cloud=clouds[0] if len(clouds) == 1 else None)
        except CatalogError as err:
            raise SpecError(f"{where}.instance_type: {err}") from None
        if cand.market == "spot" and not instance.has_spot:
            raise SpecError(f"{where}: {cand.instance_type} has no spot market in {region}; use on_demand.")
        if cand.market == "on_demand" and not instance.has_on_demand:
            raise SpecError(f"{where}: {cand.instance_type} has no on-demand price in {region}; use spot.")
        if cand.zone is not None:
            try:
                instance.price_usd_per_hour(cand.market, cand.zone)
            except CatalogError as err:
                raise SpecError(f"{where}.zone: {err}") from None
            if cand.market == "on_demand" and instance.zones and cand.zone not in instance.zones:
                hint = did_you_mean(cand.zone, instance.zones)
                raise SpecError(f"{where}.zone: '{cand.zone}' is not a zone of {region}.{hint}")


def _check_places(spec: JobSpec, catalog: Catalog, source: str) -> None:
    """Regions must be regions of the spec's clouds, zones zones of those regions."""
    clouds = set(spec.search_clouds) | {c.cloud for c in spec.candidates if c.cloud}
    known_regions = sorted({t.region for t in catalog.instance_types if t.cloud in clouds})
    field = "regions" if spec.regions else "region"
    for region in spec.search_regions:
        if region not in known_regions and spec.auto_candidates:
            raise SpecError(
                f"{source}: {field}: '{region}' is not a region of {', '.join(sorted(clouds))} in the bundled "
                f"catalog.{did_you_mean(region, known_regions)} Known regions: {', '.join(known_regions)}."
            )
    regions = set(spec.search_regions) or set(known_regions)
    known_zones = sorted(
        {z for t in catalog.instance_types if t.cloud in clouds and t.region in regions for z in t.zones}
    )
    for zone in spec.zones:
        if zone not in known_zones:
            raise SpecError(
                f"{source}: zones: '{zone}' is not a zone of {', '.join(sorted(regions))} in the bundled catalog."
                f"{did_you_mean(zone, known_zones)} Known zones: {', '.join(known_zones) or 'none'}."
            )


def _check_auto(spec: JobSpec, catalog: Catalog, source: str) -> None:
    """GPU names in the filter must be sold in the spec's clouds and regions, and type names in ``quota`` must
    exist in the catalog."""
    clouds, regions = set(spec.search_clouds), set(spec.search_regions)
    gpus = sorted(
        {t.gpu_name for t in catalog.instance_types if t.cloud in clouds and (not regions or t.region in regions)}
    )
    lowered = {g.lower() for g in gpus}
    scope = ", ".join(sorted(regions)) or ", ".join(sorted(clouds))
    for gpu in spec.filter.gpus:
        if gpu.lower() not in lowered:
            elsewhere = gpu.lower() in {g.lower() for g in catalog.gpu_names()}
            what = f"'{gpu}' is not sold in {scope}" if elsewhere else f"unknown GPU '{gpu}'"
            raise SpecError(f"{source}: filter.gpus: {what}.{did_you_mean(gpu, gpus)} GPUs there: {', '.join(gpus)}.")
    names = catalog.names()
    for name in spec.quota:
        if name not in names:
            raise SpecError(
                f"{source}: quota: unknown instance type '{name}'.{did_you_mean(name, names)} "
                "Run `srifty catalog list` to see every type."
            )


def check_emulation(spec: JobSpec, source: str = "spec") -> None:
    """Injected preemptions must name a candidate (instance type and market).

    Raises:
        SpecError: naming the preemption and the candidates.
    """
    if spec.emulation is None or spec.auto_candidates:
        return
    candidates = {(c.instance_type, c.market) for c in spec.candidates}
    for index, event in enumerate(spec.emulation.preemptions):
        if (event.instance_type, event.market) not in candidates:
            listed = ", ".join(f"{name} ({market})" for name, market in sorted(candidates))
            raise SpecError(
                f"{source}: emulation.preemptions[{index}] preempts {event.instance_type} ({event.market}), which is "
                f"not a candidate; candidates are {listed}."
            )


def load_spec(path: str | Path, catalog: Catalog | None = None) -> JobSpec:
    """Read, validate and catalog-check a YAML job spec; relative paths resolve against its folder.

    Raises:
        SpecError: the file is missing, not YAML, malformed, or names something the catalog lacks.
    """
    source = Path(path)
    if not source.is_file():
        raise SpecError(f"spec file '{source}' does not exist. Check the path; examples live in examples/.")
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise SpecError(f"{source} is not valid YAML{at}: {problem}. Fix the syntax there.") from None
    except UnicodeDecodeError:
        raise SpecError(f"{source} is not a UTF-8 text file; a spec is YAML text.") from None
    spec = spec_from_mapping(data, source=str(source))
    check_against_catalog(spec, catalog or load_catalog(), source=str(source))
    check_emulation(spec, source=str(source))
    spec = spec.resolve_paths(source.parent)
    if spec.name is None:
        spec = spec.model_copy(update={"name": source.stem})
    return spec
