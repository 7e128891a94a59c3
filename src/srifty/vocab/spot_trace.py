"""Spot traces: how many spot VMs of one type were held (or obtainable) in one zone, tick by tick.

The format is the one of the traces behind *Can't Be Late* (Wu et al., NSDI 2024; SkyPilot's spot-traces
repository)::

    {"metadata": {"gap_seconds": 300}, "data": [4, 4, 3, 0, ...]}

``data[i]`` is the number of instances held at tick ``i``, ``i · gap_seconds`` after the trace starts: a fall
is a loss (a preemption, or a launch refused), a rise is capacity coming back. The file name
``<zone>_<gpu>_<gpus per VM>.json`` names the zone and the instance type (the catalog's type with that GPU and
GPU count, in the cloud the zone's name belongs to); ``FILE=INSTANCE_TYPE`` names the type instead.

The format is shared vocabulary: srifty's spot model (:mod:`srifty.spot`) learns from it, and the judge's
trace replay (:mod:`srifty.evaluate.spot_replay`) replays it, without either importing the other.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from srifty.artifacts import read_json
from srifty.catalog import Catalog
from srifty.errors import ArtifactError, TraceError, did_you_mean

#: AWS zone names (``us-east-1f``), AWS zone IDs (``use1-az4``, ``usw2-lax1-az1``), GCP zones (``us-central1-a``).
_AWS_ZONE_NAME = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+-\d+)[a-z]$")
_AWS_ZONE_ID = re.compile(r"^[a-z]{3,4}\d+(?:-[a-z]+\d+)?-az\d+$")
_GCP_ZONE = re.compile(r"^([a-z]+-[a-z]+\d+)-[a-z]$")
_FILE_NAME = re.compile(r"^(?P<zone>.+)_(?P<gpu>[A-Za-z0-9-]+)_(?P<count>\d+)$")


@dataclass(frozen=True)
class SpotTrace:
    """One trace file, checked.

    Attributes:
        name: the file's folder and name, ``folder/file.json`` (how results and the spot model refer to it).
        instance_type: the catalog instance type it stands for.
        cloud: that type's cloud.
        zone: the zone the file name says (``""`` when it names none).
        region: the zone's region (``""`` when unknown).
        gap_s: seconds between ticks.
        held: instances held at each tick.
        sha256: the file's SHA-256 (its fingerprint).
    """

    name: str
    instance_type: str
    cloud: str
    zone: str
    region: str
    gap_s: float
    held: tuple[int, ...]
    sha256: str

    @property
    def max_held(self) -> int:
        """The most instances the trace ever holds (the cluster size it was collected with)."""
        return max(self.held)

    @property
    def span_s(self) -> float:
        """Seconds the trace covers."""
        return len(self.held) * self.gap_s

    def held_at(self, t_s: float) -> int:
        """Instances held ``t_s`` seconds after the trace starts (the tick in force then; the last tick after
        the end)."""
        index = min(max(int(t_s // self.gap_s), 0), len(self.held) - 1)
        return self.held[index]


def zone_cloud_region(zone: str, catalog: Catalog | None = None) -> tuple[str, str]:
    """``(cloud, region)`` a zone name belongs to (``""`` for what its form does not say).

    AWS zone IDs (``use1-az4``) are looked up in the catalog's zones when one is given.
    """
    if m := _AWS_ZONE_NAME.match(zone):
        return "aws", m.group(1)
    if m := _GCP_ZONE.match(zone):
        return "gcp", m.group(1)
    if _AWS_ZONE_ID.match(zone):
        if catalog is not None:
            for t in catalog.instance_types:
                if zone in t.zones:
                    return t.cloud, t.region
        return "aws", ""
    return "", ""


def split_trace_argument(argument: str) -> tuple[Path, str | None]:
    """``"FILE=INSTANCE_TYPE"`` or ``"FILE"`` as ``(path, type or None)``."""
    if "=" in argument:
        path, _, name = argument.rpartition("=")
        if path and name:
            return Path(path), name.strip()
    return Path(argument), None


def load_trace(argument: str | Path, catalog: Catalog, instance_type: str | None = None) -> SpotTrace:
    """Read and check one trace file (``argument``: a path, or ``PATH=INSTANCE_TYPE``).

    Raises:
        TraceError: the file is missing or not JSON, a key is missing or of the wrong type, a count is
            negative, the data is empty or never holds an instance, or the instance type is not in the
            catalog (or cannot be told from the file name); each names the file and the field.
    """
    path, named = split_trace_argument(str(argument)) if instance_type is None else (Path(argument), instance_type)
    label = str(path)
    try:
        raw_bytes = path.read_bytes()
    except OSError as err:
        raise TraceError(f"spot trace '{label}': cannot read it ({err.strerror or err}); check the path.") from None
    try:
        document = read_json(path)
    except ArtifactError as err:
        raise TraceError(f"spot trace '{label}': {err}") from None
    gap_s, held = _checked_body(document, label)
    type_name, cloud, zone, region = _instance_of(path, named, catalog, label)
    return SpotTrace(
        name=f"{path.parent.name}/{path.name}" if path.parent.name else path.name,
        instance_type=type_name,
        cloud=cloud,
        zone=zone,
        region=region,
        gap_s=gap_s,
        held=held,
        sha256=hashlib.sha256(raw_bytes).hexdigest(),
    )


def _checked_body(document: object, label: str) -> tuple[float, tuple[int, ...]]:
    fix = 'a trace is {"metadata": {"gap_seconds": SECONDS}, "data": [COUNT, ...]}'
    if not isinstance(document, dict):
        raise TraceError(f"spot trace '{label}': the file holds a {type(document).__name__}, not an object; {fix}.")
    for key in ("metadata", "data"):
        if key not in document:
            raise TraceError(f"spot trace '{label}': field `{key}` is missing; {fix}.")
    metadata = document["metadata"]
    if not isinstance(metadata, dict):
        raise TraceError(f"spot trace '{label}': field `metadata` must be an object with gap_seconds; {fix}.")
    if "gap_seconds" not in metadata:
        raise TraceError(f"spot trace '{label}': field `metadata.gap_seconds` is missing; {fix}.")
    gap = metadata["gap_seconds"]
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not gap > 0:
        raise TraceError(
            f"spot trace '{label}': field `metadata.gap_seconds` must be a positive number of seconds, got {gap!r}."
        )
    data = document["data"]
    if not isinstance(data, list):
        raise TraceError(f"spot trace '{label}': field `data` must be a list of instance counts, got {data!r:.40}.")
    if not data:
        raise TraceError(f"spot trace '{label}': field `data` is empty; a trace needs at least one tick.")
    bad = next((i for i, value in enumerate(data) if type(value) is not int or value < 0), None)
    if bad is not None:
        value = data[bad]
        if type(value) is not int:
            raise TraceError(
                f"spot trace '{label}': field `data[{bad}]` must be a whole number of instances, got {value!r}."
            )
        raise TraceError(f"spot trace '{label}': field `data[{bad}]` is {value}; instance counts cannot be negative.")
    if max(data) == 0:
        raise TraceError(
            f"spot trace '{label}': field `data` never holds an instance (every tick is 0); a trace must hold at "
            "least one to say anything about losses."
        )
    return float(gap), tuple(data)


def _instance_of(path: Path, named: str | None, catalog: Catalog, label: str) -> tuple[str, str, str, str]:
    """``(instance type, cloud, zone, region)`` of a trace file, from ``named`` or the file name."""
    match = _FILE_NAME.match(path.stem)
    zone = match.group("zone") if match else ""
    zone_cloud, region = zone_cloud_region(zone, catalog) if zone else ("", "")
    if named is not None:
        found = [t for t in catalog.instance_types if t.name == named]
        if not found:
            raise TraceError(
                f"spot trace '{label}': instance type '{named}' (after '=') is not in the catalog."
                f"{did_you_mean(named, catalog.names())} Run `srifty catalog list` to see every type."
            )
        return named, found[0].cloud, zone, region
    if match is None:
        raise TraceError(
            f"spot trace '{label}': its file name does not say the instance type (expected "
            "<zone>_<gpu>_<gpus per VM>.json, e.g. us-east-1f_v100_1.json); name it as FILE=INSTANCE_TYPE."
        )
    gpu, count = match.group("gpu"), int(match.group("count"))
    types = [
        t
        for t in catalog.instance_types
        if t.name and t.gpu_name.lower() == gpu.lower() and t.gpus_per_vm == count and zone_cloud in ("", t.cloud)
    ]
    names = sorted({t.name for t in types})
    if not names:
        where = f" on {zone_cloud}" if zone_cloud else ""
        raise TraceError(
            f"spot trace '{label}': the catalog has no instance type with {count} x {gpu}{where} (from the file "
            f"name's instance field '{gpu}_{count}'); name one as FILE=INSTANCE_TYPE."
        )
    if len(names) > 1:
        raise TraceError(
            f"spot trace '{label}': {count} x {gpu} is several catalog types ({', '.join(names)}); name one as "
            "FILE=INSTANCE_TYPE."
        )
    cloud = next(t.cloud for t in types)
    return names[0], cloud, zone, region
