"""The spot model: per instance type and zone, how often spot VMs are lost, how many go together, how long
capacity stays away and the chance of obtaining n VMs, learned from traces; a versioned artefact.

:func:`fit_spot_model` fits it on trace files (:func:`~srifty.vocab.spot_trace.load_trace`);
:meth:`SpotModel.figures_for` answers for an instance type in a zone, saying where the answer comes from:

1. ``zone``: traces of that type in that very zone (a zone named as the trace files name it);
2. ``region``: traces of that type in other zones of the region, pooled. The bundled traces name AWS zones
   (``us-east-1f``) while the catalog lists zone IDs (``use1-az4``), and AWS maps one to the other
   differently per account, so a catalog zone is matched by region, never by a guessed zone;
3. ``type``: traces of that type in other regions, pooled;
4. ``prior``: no trace of the type: every trace pooled, the rate's spread between zones doubled
   (:func:`~srifty.spot.fit.fit_prior`).

Pure: no clock, no I/O beyond reading and writing the artefact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from statistics import NormalDist
from typing import Any, Literal

from srifty.artifacts import read_json_artifact, write_json_artifact
from srifty.catalog import Catalog
from srifty.errors import ArtifactError
from srifty.spot.fit import WINDOW_S, FittedFigures, RatePrior, TraceCounts, count_trace, fit_figures, fit_prior
from srifty.vocab import SpotTrace, load_trace

SPOT_MODEL_KIND = "spot-model"
SPOT_MODEL_SCHEMA_VERSION = 1

Level = Literal["zone", "region", "type", "prior"]


@dataclass(frozen=True)
class TraceRecord:
    """A trace a model was fitted on: its name, fingerprint and extent."""

    name: str
    instance_type: str
    cloud: str
    zone: str
    region: str
    sha256: str
    gap_s: float
    ticks: int
    max_held: int

    @property
    def span_days(self) -> float:
        """Days the trace covers."""
        return self.ticks * self.gap_s / 86400.0


@dataclass(frozen=True)
class SpotEntry:
    """Fitted figures at one level (see the module docstring), with what they were fitted on.

    Attributes:
        level: ``zone``, ``region``, ``type`` or ``prior``.
        instance_type: the type (``""`` for the prior).
        traces: the trace names pooled.
        held_vm_hours, vms_lost, loss_events: what those traces hold.
        figures: the fitted figures.
    """

    level: Level
    instance_type: str
    cloud: str
    region: str
    zone: str
    traces: tuple[str, ...]
    held_vm_hours: float
    vms_lost: int
    loss_events: int
    figures: FittedFigures


@dataclass(frozen=True)
class SpotFigures:
    """The spot model's answer for one instance type in one zone, and where it comes from.

    Attributes:
        source: a sentence naming the traces or the prior behind the figures.
    """

    instance_type: str
    level: Level
    source: str
    traces: tuple[str, ...]
    figures: FittedFigures

    @property
    def loss_rate_per_vm_hour(self) -> float:
        """Expected VMs lost per VM-hour held."""
        return self.figures.loss_rate_per_vm_hour

    def events_per_hour(self, n_vms: int) -> float:
        """Expected loss events per hour for ``n_vms`` VMs held together: each event takes ``1 + ρ(n − 1)`` of
        them on average, so ``λ n / (1 + ρ (n − 1))``."""
        if n_vms <= 0:
            return 0.0
        return self.figures.loss_rate_per_vm_hour * n_vms / (1.0 + self.figures.burst_rho * (n_vms - 1))

    def vms_per_event(self, n_vms: int) -> float:
        """Expected VMs lost in one event when ``n_vms`` are held."""
        return 1.0 + self.figures.burst_rho * max(n_vms - 1, 0)

    def p_obtain(self, n_vms: int) -> float:
        """Chance that ``n_vms`` VMs can be had at once. Beyond the largest count any trace held (``K``), each
        further VM keeps the last conditional chance, ``p(K) · (p(K) / p(K − 1))^(n − K)`` (an assumption: no
        trace says how capacity runs out past ``K``)."""
        p = self.figures.p_obtain
        if n_vms <= 0 or not p:
            return 1.0
        if n_vms <= len(p):
            return p[n_vms - 1]
        step = p[-1] / p[-2] if len(p) >= 2 and p[-2] > 0 else 1.0
        return p[-1] * step ** (n_vms - len(p))

    def downtime_quantile_s(self, q: float) -> float:
        """The ``q`` quantile of the time to regain capacity (log-normal fit), seconds."""
        f = self.figures
        return math.exp(f.downtime_log_mu + f.downtime_log_sigma * NormalDist().inv_cdf(q))


@dataclass(frozen=True)
class SpotModel:
    """Spot figures per instance type and zone, fitted on traces (see the module docstring).

    Attributes:
        prior: the widened gamma prior of the loss rate.
        traces: every trace fitted on, with its SHA-256.
        entries: fitted figures per level.
        created_by: how the model was made (a command line).
    """

    prior: RatePrior
    traces: tuple[TraceRecord, ...]
    entries: tuple[SpotEntry, ...]
    created_by: str = ""
    _answers: dict[tuple[str, str | None, str | None], SpotFigures] = field(
        default_factory=dict, compare=False, repr=False
    )

    def figures_for(self, instance_type: str, zone: str | None = None, region: str | None = None) -> SpotFigures:
        """Figures for ``instance_type`` in ``zone`` of ``region``, from the most specific level that has them
        (zone, region, type, prior); remembered, since a planner asks about the same few many times."""
        key = (instance_type, zone, region)
        if key not in self._answers:
            self._answers[key] = self._find(instance_type, zone, region)
        return self._answers[key]

    def _find(self, instance_type: str, zone: str | None, region: str | None) -> SpotFigures:
        for level in ("zone", "region", "type"):
            for entry in self.entries:
                if entry.level != level or entry.instance_type != instance_type:
                    continue
                if (level == "zone" and (not zone or entry.zone != zone)) or (
                    level == "region" and (not region or entry.region != region)
                ):
                    continue
                return SpotFigures(instance_type, entry.level, _source_text(entry, zone), entry.traces, entry.figures)
        prior = self.prior_entry
        source = _source_text(prior, zone, instance_type)
        return SpotFigures(instance_type, "prior", source, prior.traces, prior.figures)

    @property
    def prior_entry(self) -> SpotEntry:
        """The prior's entry.

        Raises:
            ArtifactError: the model has none (a hand-edited file).
        """
        for entry in self.entries:
            if entry.level == "prior":
                return entry
        raise ArtifactError("the spot model has no prior entry; refit it with `srifty fit-spot`.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without ``kind``/``schema_version``)."""
        return {
            "created_by": self.created_by,
            "window_s": WINDOW_S,
            "prior": asdict(self.prior),
            "traces": [asdict(t) for t in self.traces],
            "entries": [_entry_dict(e) for e in self.entries],
        }

    def save(self, path: str | Path) -> Path:
        """Write the model atomically as a versioned artefact (kind ``spot-model``)."""
        return write_json_artifact(path, SPOT_MODEL_KIND, SPOT_MODEL_SCHEMA_VERSION, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> SpotModel:
        """Read a spot model file.

        Raises:
            ArtifactError: not a spot model, of a version this srifty cannot read, or with a field missing or
                of the wrong type (named).
        """
        document = read_json_artifact(path, SPOT_MODEL_KIND, SPOT_MODEL_SCHEMA_VERSION)
        try:
            return cls(
                prior=RatePrior(**document["prior"]),
                traces=tuple(TraceRecord(**t) for t in document["traces"]),
                entries=tuple(_entry_of(e) for e in document["entries"]),
                created_by=str(document.get("created_by", "")),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ArtifactError(
                f"spot model '{path}' is damaged ({type(err).__name__}: {err}); refit it with `srifty fit-spot`."
            ) from None


def fit_spot_model(traces: Sequence[SpotTrace], created_by: str = "") -> SpotModel:
    """Fit a spot model on ``traces`` (see the module docstring and :mod:`srifty.spot.fit`).

    Raises:
        ValueError: no traces (the CLI says so before calling).
    """
    if not traces:
        raise ValueError("fit_spot_model needs at least one trace")
    counted = [(t, count_trace(t)) for t in traces]
    prior = fit_prior([c.rates[0] for _, c in counted])
    pooled_all = _pool([c for _, c in counted])
    base = fit_figures(pooled_all, prior, as_prior=True)
    entries = [
        SpotEntry(
            "prior",
            "",
            "",
            "",
            "",
            tuple(t.name for t, _ in counted),
            pooled_all.held_vm_hours,
            pooled_all.vms_lost,
            pooled_all.loss_events,
            base,
        )
    ]
    groups: dict[tuple[str, str, str, str], list[tuple[SpotTrace, TraceCounts]]] = {}
    for trace, counts in counted:
        for key in (
            ("type", trace.instance_type, "", ""),
            ("region", trace.instance_type, trace.region, ""),
            ("zone", trace.instance_type, trace.region, trace.zone),
        ):
            if (key[0] == "region" and not trace.region) or (key[0] == "zone" and not trace.zone):
                continue
            groups.setdefault(key, []).append((trace, counts))
    order = {"zone": 0, "region": 1, "type": 2}
    for (level, type_name, region, zone), members in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0])):
        pooled = _pool([c for _, c in members])
        figures = fit_figures(pooled, prior, base)
        entries.append(
            SpotEntry(
                level,  # type: ignore[arg-type]
                type_name,
                members[0][0].cloud,
                region,
                zone,
                tuple(t.name for t, _ in members),
                pooled.held_vm_hours,
                pooled.vms_lost,
                pooled.loss_events,
                figures,
            )
        )
    records = tuple(
        TraceRecord(t.name, t.instance_type, t.cloud, t.zone, t.region, t.sha256, t.gap_s, len(t.held), t.max_held)
        for t in traces
    )
    return SpotModel(prior, records, tuple(entries), created_by)


def fit_spot_files(arguments: Iterable[str | Path], catalog: Catalog, created_by: str = "") -> SpotModel:
    """Load trace files (``PATH`` or ``PATH=INSTANCE_TYPE``) and fit a model on them.

    Raises:
        TraceError: a bad trace file (named, with the field).
    """
    return fit_spot_model([load_trace(a, catalog) for a in arguments], created_by)


def _pool(counts: Sequence[TraceCounts]) -> TraceCounts:
    total = counts[0]
    for c in counts[1:]:
        total = total + c
    return total


def _source_text(entry: SpotEntry, zone: str | None, instance_type: str | None = None) -> str:
    n = len(entry.traces)
    traces = f"{n} trace{'s' if n != 1 else ''}"
    if entry.level == "zone":
        return f"{traces} of {entry.instance_type} in {entry.zone} ({', '.join(entry.traces)})"
    if entry.level == "region":
        asked = f"; zone {zone} is matched by region: trace files name zones, the catalog zone IDs" if zone else ""
        return f"{traces} of {entry.instance_type} in {entry.region}, pooled{asked}"
    if entry.level == "type":
        return f"{traces} of {entry.instance_type} in other regions, pooled"
    return (
        f"prior (no trace of {instance_type}): every trace pooled ({traces}), the spread of the loss rate between "
        "zones doubled"
    )


def _entry_dict(entry: SpotEntry) -> dict[str, Any]:
    out = {f.name: getattr(entry, f.name) for f in fields(entry) if f.name != "figures"}
    out["traces"] = list(entry.traces)
    figures = asdict(entry.figures)
    figures["p_obtain"] = list(entry.figures.p_obtain)
    return {**out, "figures": figures}


def _entry_of(raw: dict[str, Any]) -> SpotEntry:
    figures = dict(raw["figures"])
    figures["p_obtain"] = tuple(float(p) for p in figures["p_obtain"])
    values = {k: v for k, v in raw.items() if k != "figures"}
    if values["level"] not in ("zone", "region", "type", "prior"):
        raise ValueError(f"unknown level {values['level']!r}")
    values["traces"] = tuple(values["traces"])
    return SpotEntry(**values, figures=FittedFigures(**figures))
