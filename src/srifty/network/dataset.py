"""Probe sets: the rows ``srifty probe`` measures, their schema, and atomic appends to a Parquet file.

One row is one timed repeat of ``n_concurrent`` concurrent allreduces of ``size_bytes`` each over
``world_size`` ranks. Bandwidth columns are in bytes/s and times in seconds, in the units of the machine
the row *represents*: on a real cluster those are the measured values (``emulation_scale`` = 1); on the
emulated testbed, where links are shaped ``emulation_scale`` times slower than the represented instance
family's rating, ``time_s = measured_time_s / emulation_scale`` and bandwidths follow from it (see
``srifty.network.testbed``). ``measured_time_s`` and ``shaped_gbps`` always keep what really happened.

Files carry ``{"kind": "probe-set", "schema_version": 1}`` in the Parquet metadata under ``b"srifty"``.
"""

from __future__ import annotations

import fcntl
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from srifty.artifacts import atomic_write_bytes
from srifty.errors import ArtifactError
from srifty.network.errors import NetModelError

PROBE_KIND = "probe-set"
PROBE_SCHEMA_VERSION = 1
_META_KEY = b"srifty"

#: Every column of a probe row and its pandas dtype, in file order.
PROBE_COLUMNS: dict[str, str] = {
    "busbw_bytes_per_s": "float64",
    "algbw_bytes_per_s": "float64",
    "time_s": "float64",
    "measured_time_s": "float64",
    "size_bytes": "int64",
    "world_size": "int64",
    "n_nodes": "int64",
    "gpus_per_node": "int64",
    "n_concurrent": "int64",
    "repeat": "int64",
    "inner_iters": "int64",
    "backend": "string",
    "device": "string",
    "dtype": "string",
    "cloud": "string",
    "region": "string",
    "zone": "string",
    "instance_type": "string",
    "gpu": "string",
    "cpu": "string",
    "rated_network_gbps": "float64",
    "allocation_id": "string",
    "run_id": "string",
    "host": "string",
    "timestamp_s": "float64",
    "emulated": "bool",
    "emulation_scale": "float64",
    "shaped_gbps": "float64",
    "slowest_link_gbps": "float64",
    "rate_variation": "float64",
    "testbed_name": "string",
}

#: Columns a bandwidth model needs to be fitted (``busbw_bytes_per_s`` is the label).
REQUIRED_FIT_COLUMNS = ("size_bytes", "world_size", "busbw_bytes_per_s")


def probe_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows as a frame in schema order and dtypes.

    Raises:
        ArtifactError: a row lacks a schema column.
    """
    frame = pd.DataFrame(list(rows))
    missing = [c for c in PROBE_COLUMNS if c not in frame.columns]
    if missing and len(frame):
        raise ArtifactError(f"probe rows lack the columns {', '.join(missing)}.")
    if not len(frame):
        frame = pd.DataFrame({c: pd.Series(dtype=t) for c, t in PROBE_COLUMNS.items()})
    return frame[list(PROBE_COLUMNS)].astype(PROBE_COLUMNS)


def _to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_META_KEY] = json.dumps({"kind": PROBE_KIND, "schema_version": PROBE_SCHEMA_VERSION}).encode()
    table = table.replace_schema_metadata(meta)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=9)
    return sink.getvalue()


def _read_one(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise ArtifactError(f"probe file '{path}' does not exist. Check the path, or run `srifty probe`.")
    if path.suffix == ".csv":
        try:
            return pd.read_csv(path)
        except (ValueError, UnicodeDecodeError) as err:
            raise ArtifactError(f"'{path}' is not a readable CSV probe file ({err}).") from None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        raise ArtifactError(
            f"'{path}' is not a readable Parquet probe file ({err}); probe files are written by "
            "`srifty probe` (Parquet) or are CSV files named *.csv."
        ) from None
    raw = (table.schema.metadata or {}).get(_META_KEY)
    if raw is not None:
        doc = json.loads(raw)
        if doc.get("kind") != PROBE_KIND:
            raise ArtifactError(f"'{path}' is a '{doc.get('kind')}' file, not a {PROBE_KIND} file.")
        if int(doc.get("schema_version", 0)) > PROBE_SCHEMA_VERSION:
            raise ArtifactError(
                f"'{path}' is probe-set schema version {doc['schema_version']}, newer than this srifty "
                f"reads ({PROBE_SCHEMA_VERSION}). Upgrade srifty."
            )
    return table.to_pandas()


def read_probes(paths: Path | str | Sequence[Path | str]) -> pd.DataFrame:
    """Read one or more probe files (Parquet from ``srifty probe``, or CSV) into one frame.

    Raises:
        ArtifactError: a file is missing, unreadable, of another kind or of a newer schema.
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if not items:
        raise ArtifactError("no probe files given; pass at least one .parquet or .csv file.")
    frames = [_read_one(Path(p)) for p in items]
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


@contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory ``flock`` on ``lock_path`` (created if needed) for the ``with`` body."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def append_probes(path: Path | str, rows: pd.DataFrame | Iterable[Mapping[str, Any]]) -> int:
    """Append probe rows to the Parquet file at ``path`` atomically; returns the file's row count.

    Read-modify-write under an advisory lock, written to a temp file and renamed, so a crash or a second
    writer never loses rows already in the file.

    Raises:
        ArtifactError: ``path`` is not a ``.parquet`` file, or the existing file is not a probe set.
    """
    target = Path(path)
    if target.suffix != ".parquet":
        raise ArtifactError(f"probe sets are written as Parquet; name the file *.parquet, not '{target}'.")
    new = rows if isinstance(rows, pd.DataFrame) else probe_frame(rows)
    if list(new.columns) != list(PROBE_COLUMNS):
        new = probe_frame(new.to_dict("records"))  # type: ignore[arg-type]
    with exclusive_lock(target.with_name(target.name + ".lock")):
        if target.exists():
            old = _read_one(target)
            missing = [c for c in PROBE_COLUMNS if c not in old.columns]
            if missing:
                raise ArtifactError(f"'{target}' lacks the probe columns {', '.join(missing)}; write to a new file.")
            new = pd.concat([old[list(PROBE_COLUMNS)].astype(PROBE_COLUMNS), new], ignore_index=True)
        atomic_write_bytes(target, _to_parquet_bytes(new))
    return len(new)


def validate_frame(frame: pd.DataFrame, *, need_label: bool) -> None:
    """Check the columns a bandwidth model needs: present, numeric, finite, in range.

    Raises:
        NetModelError: naming the column, the problem and how many rows have it.
    """
    needed = REQUIRED_FIT_COLUMNS if need_label else REQUIRED_FIT_COLUMNS[:2]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise NetModelError(
            f"the frame lacks the column(s) {', '.join(missing)}; a bandwidth model needs "
            f"{', '.join(needed)} (probe files from `srifty probe` have them)."
        )
    if not len(frame):
        raise NetModelError("the frame has no rows; pass at least one probe row.")
    checks = {"size_bytes": (1.0, "a positive number of bytes"), "world_size": (1.0, "at least 1 rank")}
    if need_label:
        checks["busbw_bytes_per_s"] = (np.nextafter(0.0, 1.0), "a positive bandwidth in bytes/s")
    for column, (low, meaning) in checks.items():
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values) | (values < low)
        if bad.any():
            example = frame[column].to_numpy()[np.flatnonzero(bad)[0]]
            raise NetModelError(
                f"column {column} must be {meaning}; {int(bad.sum())} row(s) are not "
                f"(for example {example!r}). Drop or fix those rows."
            )


def file_fingerprint(path: Path | str) -> str:
    """``sha256:<hex>`` of a file's bytes, for provenance records."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()
