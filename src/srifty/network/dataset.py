"""Probe sets on disk: atomic appends to a Parquet file, readers, and the checks a bandwidth model makes.

The row schema itself (:data:`~srifty.vocab.probes.PROBE_COLUMNS`) is shared vocabulary and lives in
:mod:`srifty.vocab.probes`. Files carry ``{"kind": "probe-set", "schema_version": 1}`` in the Parquet
metadata under ``b"srifty"``.
"""

from __future__ import annotations

import fcntl
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from srifty.artifacts import atomic_write_bytes
from srifty.errors import ArtifactError
from srifty.network.errors import NetModelError
from srifty.vocab import (
    PROBE_COLUMNS,
    PROBE_KIND,
    PROBE_SCHEMA_VERSION,
    REQUIRED_FIT_COLUMNS,
    as_table,
    probe_frame,
    with_defaults,
)

if TYPE_CHECKING:
    import pandas as pd

#: What :func:`validate_frame` reads: a DataFrame, a Table or a mapping of column names to arrays.
Frame = Any
_META_KEY = b"srifty"


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
    import pandas as pd

    if path.suffix == ".csv":
        try:
            return with_defaults(pd.read_csv(path))
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
        try:
            doc = json.loads(raw)
        except ValueError:  # JSONDecodeError and UnicodeDecodeError: damaged metadata
            doc = None
        if not isinstance(doc, dict):
            doc = {"kind": "damaged"}
        if doc.get("kind") != PROBE_KIND:
            raise ArtifactError(f"'{path}' is a '{doc.get('kind')}' file, not a {PROBE_KIND} file.")
        if int(doc.get("schema_version", 0)) > PROBE_SCHEMA_VERSION:
            raise ArtifactError(
                f"'{path}' is probe-set schema version {doc['schema_version']}, newer than this srifty "
                f"reads ({PROBE_SCHEMA_VERSION}). Upgrade srifty."
            )
    try:
        frame = table.to_pandas()
    except (UnicodeDecodeError, ValueError) as err:  # damaged pandas metadata in the schema
        raise ArtifactError(
            f"'{path}' is a damaged Parquet probe file ({type(err).__name__}); probe it again or restore the file."
        ) from None
    return with_defaults(frame)


def read_probes(paths: Path | str | Sequence[Path | str]) -> pd.DataFrame:
    """Read one or more probe files (Parquet from ``srifty probe``, or CSV) into one frame.

    Raises:
        ArtifactError: a file is missing, unreadable, of another kind or of a newer schema.
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if not items:
        raise ArtifactError("no probe files given; pass at least one .parquet or .csv file.")
    import pandas as pd

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
    import pandas as pd

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


def validate_frame(frame: Frame, *, need_label: bool, need_time: bool = False) -> None:
    """Check the columns a bandwidth model needs: present, numeric, finite, in range. ``frame`` is a DataFrame,
    a :class:`~srifty.network.table.Table` or a mapping of column names to arrays.

    Raises:
        NetModelError: naming the column, the problem and how many rows have it.
    """
    table = as_table(frame, NetModelError)
    needed = REQUIRED_FIT_COLUMNS if need_label else REQUIRED_FIT_COLUMNS[:2]
    missing = [c for c in needed if c not in table]
    if missing:
        raise NetModelError(
            f"the frame lacks the column(s) {', '.join(missing)}; a bandwidth model needs "
            f"{', '.join(needed)} (probe files from `srifty probe` have them)."
        )
    if not len(table):
        raise NetModelError("the frame has no rows; pass at least one probe row.")
    checks = {"size_bytes": (1.0, "a positive number of bytes"), "world_size": (1.0, "at least 1 rank")}
    if need_label:
        checks["busbw_bytes_per_s"] = (np.nextafter(0.0, 1.0), "a positive bandwidth in bytes/s")
    if need_time and "timestamp_s" in table:  # probe age weighs rows when a half-life is set
        checks["timestamp_s"] = (-np.inf, "a time in seconds since the epoch")
    for column, (low, meaning) in checks.items():
        values = table.numeric(column)
        bad = ~np.isfinite(values) | (values < low)
        if bad.any():
            example = table.raw(column)[np.flatnonzero(bad)[0]]
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
