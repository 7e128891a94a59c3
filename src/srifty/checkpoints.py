"""Where checkpoints live: a local path or an fsspec URL, and the ``latest`` marker in it.

``srifty run --hosts --ckpt-dir`` takes either a path (every host must see the same folder: a shared mount,
or one machine) or a URL with a scheme that fsspec knows (``s3://bucket/run``, ``gs://…``, ``file:///…``,
``hdfs://…``; chained URLs such as ``simplecache::s3://…`` too). A URL is what
``torch.distributed.checkpoint`` writes through its fsspec storage (it picks ``FsspecWriter`` for any
``checkpoint_id`` holding ``://``, exactly the rule :func:`is_url` applies), so the backend package (``s3fs``,
``gcsfs``, …) must be installed on every host and on the controller, which reads the marker on
``srifty run --resume``. ``memory://`` is refused: it lives in one process's memory, so no other host, and no
relaunched worker, could read it.

The marker (``latest``: ``{"step": N, "path": "step-0000000N"}``) is written after every rank has saved
(rank 0, after a barrier). On a path it is written atomically (temp file, fsync, rename); on a URL to a temp
name that is then moved onto ``latest``: a rename where the filesystem has one (``file://``, HDFS), a
server-side copy on object stores, where each object appears whole anyway. Nothing here imports torch, and
fsspec only when a URL is used.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from srifty.artifacts import atomic_write_text
from srifty.errors import SpecError

LATEST = "latest"
#: Beside a local run's heartbeats: ``srifty run`` asks the launch ``{"launch": id}`` to checkpoint and stop.
STOP_REQUEST_FILE = "stop.json"
_PROTOCOL = re.compile(r"[a-z][a-z0-9+.\-]*")
# filesystems that live inside one process: no other host, nor a relaunched worker, can read them
_NOT_SHARED = {"memory"}


def is_url(location: str | Path) -> bool:
    """Whether ``location`` is an fsspec URL (holds ``://``) rather than a local path (torch's own rule)."""
    return not isinstance(location, Path) and "://" in location


def join(location: str | Path, name: str) -> str | Path:
    """``name`` inside ``location`` (a ``Path`` for a path, a URL string for a URL)."""
    if is_url(location):
        return f"{str(location).rstrip('/')}/{name}"
    return Path(location) / name


def url_protocols(url: str) -> list[str]:
    """The protocols of ``url``, outermost first (``simplecache::s3://b/k`` → ``["simplecache", "s3"]``).

    Raises:
        SpecError: a malformed URL (no path after ``://``, an empty or invalid protocol, spaces).
    """
    example = "give e.g. s3://bucket/run, gs://bucket/run or file:///shared/run"
    if url != url.strip() or any(c.isspace() for c in url):
        raise SpecError(f"--ckpt-dir {url!r}: a URL holds no spaces; {example}.")
    *outer, last = url.split("::")
    protocol, _, path = last.partition("://")
    protocols = [*outer, protocol]
    for name in protocols:
        if not _PROTOCOL.fullmatch(name):
            raise SpecError(f"--ckpt-dir {url!r}: {name!r} is not a URL scheme; {example}.")
    if not path.strip("/"):
        raise SpecError(f"--ckpt-dir {url!r}: the URL names no bucket or folder after '://'; {example}.")
    return protocols


def check_location(location: str) -> str:
    """Check a ``--ckpt-dir`` before anything is launched; returns it unchanged.

    A path is accepted as given (each host resolves it; the default is RUN_DIR/checkpoints). A URL must be
    well formed and every protocol in it must have an installed fsspec implementation here.

    Raises:
        SpecError: an empty value, a malformed URL, fsspec missing, an unknown protocol, a protocol whose
            package is missing (naming the ``pip install`` that fixes it), or ``memory://``.
    """
    if not location.strip():
        raise SpecError("--ckpt-dir is empty; give a folder every host can write, or an fsspec URL (s3://bucket/run).")
    if not is_url(location):
        return location
    protocols = url_protocols(location)
    try:
        import fsspec
    except ImportError:
        raise SpecError(
            f"--ckpt-dir {location}: a URL is written through fsspec, which is not installed; "
            "`pip install fsspec` (torch brings it) and the package for the URL's scheme."
        ) from None
    for name in protocols:
        if name in _NOT_SHARED:
            raise SpecError(
                f"--ckpt-dir {location}: {name}:// lives in one process's memory, so no other host and no "
                "relaunched worker could read it; give a folder every host can reach (s3://, gs://, file:// on a "
                "shared mount, or a path)."
            )
        try:
            fsspec.get_filesystem_class(name)
        except ValueError:
            raise SpecError(
                f"--ckpt-dir {location}: fsspec knows no '{name}://' filesystem; check the scheme (s3, gs, az, "
                "hdfs, file, …) or install the package that registers it."
            ) from None
        except ImportError as err:
            hint = str(err).strip() or f"install the fsspec implementation of '{name}'"
            raise SpecError(
                f"--ckpt-dir {location}: the '{name}://' filesystem is not installed here ({hint}); "
                f"e.g. `pip install {_package(name)}`, on the controller and on every host."
            ) from None
    return location


def _package(protocol: str) -> str:
    """The pip package of an fsspec protocol, from fsspec's registry (``s3fs.S3FileSystem`` → ``s3fs``)."""
    from fsspec.registry import known_implementations

    target = str(known_implementations.get(protocol, {}).get("class", protocol))
    return target.split(".", 1)[0]


def write_latest(location: str | Path, step: int, name: str) -> None:
    """Mark checkpoint ``name`` (after ``step`` iterations) the latest in ``location``.

    A path: :func:`~srifty.artifacts.atomic_write_text`. A URL: written to a temp name, then moved onto
    ``latest`` (a rename on file systems; on object stores a copy, each object appearing whole).
    """
    text = json.dumps({"step": step, "path": name})
    if not is_url(location):
        atomic_write_text(Path(location) / LATEST, text)
        return
    from fsspec.core import url_to_fs

    fs, root = url_to_fs(str(location))
    fs.makedirs(root, exist_ok=True)
    final = f"{root.rstrip('/')}/{LATEST}"
    temp = f"{root.rstrip('/')}/.{LATEST}.{uuid.uuid4().hex}.tmp"
    try:
        with fs.open(temp, "w") as handle:
            handle.write(text)
        fs.mv(temp, final)
    except BaseException:
        if fs.exists(temp):
            fs.rm(temp)
        raise


def read_latest(location: str | Path) -> dict[str, Any] | None:
    """The latest marker in ``location`` (``{"step": int, "path": str}``), or None when there is none.

    Raises:
        OSError: the location cannot be read (fsspec raises its own subclasses).
        ValueError: the marker is not the JSON :func:`write_latest` writes.
    """
    if is_url(location):
        from fsspec.core import url_to_fs

        fs, root = url_to_fs(str(location))
        path = f"{root.rstrip('/')}/{LATEST}"
        if not fs.isfile(path):
            return None
        with fs.open(path, "r") as handle:
            text = handle.read()
    else:
        marker = Path(location) / LATEST
        if not marker.is_file():
            return None
        text = marker.read_text(encoding="utf-8")
    latest = json.loads(text)
    if not isinstance(latest, dict) or not isinstance(latest.get("path"), str):
        raise ValueError(f"{join(location, LATEST)} is not a checkpoint marker: {text[:80]!r}")
    return {"step": int(latest["step"]), "path": latest["path"]}
