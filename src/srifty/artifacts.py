"""Versioned artefact files, written atomically.

Every file srifty writes between stages (profile, probe set, bandwidth model, plan, decision log) is a
value with a ``kind`` and a ``schema_version``. Writers go through :func:`atomic_write_bytes`, so a crash
never leaves a half-written file behind; readers go through :func:`read_json_artifact`, which checks the
kind and version and names the fix when they are wrong.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from srifty.errors import ArtifactError


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically: a temp file in the same folder, fsync, then rename.

    The file gets the usual permissions (0666 less the umask), not the temp file's private 0600.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def write_json_artifact(
    path: str | os.PathLike[str], kind: str, schema_version: int, payload: Mapping[str, Any]
) -> Path:
    """Write ``payload`` as a versioned JSON artefact of ``kind`` at ``schema_version``."""
    document = {"kind": kind, "schema_version": schema_version, **payload}
    try:
        text = json.dumps(document, indent=1, sort_keys=False, allow_nan=False)
    except ValueError:
        raise ArtifactError(
            f"refusing to write {kind} '{path}': it holds NaN or infinity, which no reader accepts (a bug)."
        ) from None
    return atomic_write_text(path, text + "\n")


Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number srifty writes")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file srifty wrote, refusing ``NaN`` and ``Infinity`` (JSON has neither; Python's
    parser accepts them, and a NaN latency or bandwidth would flow silently into every prediction).

    Raises:
        ArtifactError: unreadable, not UTF-8, not JSON, or holding NaN/Infinity; naming the file.
    """
    source = Path(path)
    try:
        return json.loads(source.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise ArtifactError(f"'{source}' is not valid JSON ({err}); regenerate it.") from None
    except OSError as err:
        raise ArtifactError(f"cannot read '{source}' ({err.strerror or err}); check the path.") from None


def read_json_artifact(
    path: str | os.PathLike[str],
    kind: str,
    current_version: int,
    migrations: Mapping[int, Migration] | None = None,
) -> dict[str, Any]:
    """Read a versioned JSON artefact, migrating older versions forward.

    Args:
        path: the file.
        kind: the expected ``kind`` field, for example ``"profile"``.
        current_version: the version this code writes.
        migrations: ``{v: f}`` where ``f`` turns a version-``v`` document into version ``v + 1``.

    Raises:
        ArtifactError: the file is missing, not JSON, of another kind, or of a version this code cannot read.
    """
    source = Path(path)
    if not source.is_file():
        raise ArtifactError(f"{kind} file '{source}' does not exist. Check the path.")
    document = read_json(source)
    if not isinstance(document, dict) or document.get("kind") != kind:
        found = document.get("kind") if isinstance(document, dict) else type(document).__name__
        raise ArtifactError(f"'{source}' is a '{found}' file, not a {kind} file. Pass a {kind} file.")
    version = document.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise ArtifactError(f"'{source}' has no valid schema_version; regenerate it.")
    if version > current_version:
        raise ArtifactError(
            f"'{source}' is {kind} schema version {version}, newer than this srifty reads "
            f"({current_version}). Upgrade srifty."
        )
    steps = migrations or {}
    while version < current_version:
        if version not in steps:
            raise ArtifactError(
                f"'{source}' is {kind} schema version {version}, which this srifty can no longer read; regenerate it."
            )
        document = steps[version](document)
        version += 1
        document["schema_version"] = version
    return document
