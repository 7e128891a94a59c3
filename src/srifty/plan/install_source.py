"""Where the VMs get srifty from: the install line of exported SkyPilot tasks.

The source is what the user gives (``--install``: a wheel file, a git URL, any pip requirement) or, failing
that, where this srifty itself came from, as pip recorded it (PEP 610 ``direct_url.json``): a git URL at the
installed commit, a wheel, or the package index (``srifty==VERSION``). An editable install or a local
folder is nothing a VM can reach, so there is no default then and the caller says how to give one.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from srifty.errors import SpecError

#: Where a local wheel lands on every VM (SkyPilot copies it there through ``file_mounts``).
REMOTE_WHEEL_DIR = "~/.srifty-wheels"
HOW = (
    "give --install with a wheel (build one with `pip wheel --no-deps PATH/TO/srifty -w dist`) or a git URL "
    "the VMs can reach (git+https://github.com/OWNER/srifty@COMMIT)"
)


@dataclass(frozen=True)
class InstallSource:
    """``requirement`` is what ``pip install`` gets on the VM; ``wheel`` a local file copied there first."""

    requirement: str
    wheel: Path | None = None
    origin: str = "given"

    def file_mounts(self) -> dict[str, str]:
        """SkyPilot ``file_mounts`` that put the wheel on every VM (empty for a requirement pip can fetch)."""
        return {} if self.wheel is None else {self.requirement: str(self.wheel)}

    def setup(self) -> str:
        """The task's ``setup`` script."""
        return f"pip install {shlex.quote(self.requirement) if self.wheel is None else self.requirement}\n"


def _wheel(path: Path, origin: str) -> InstallSource:
    return InstallSource(f"{REMOTE_WHEEL_DIR}/{path.name}", path.resolve(), origin)


def parse_install(text: str) -> InstallSource:
    """``--install``: a wheel file, or anything pip takes (``git+https://…@COMMIT``, ``srifty==0.1.0``, a URL).

    Raises:
        SpecError: a wheel that does not exist, or a local folder (the VMs cannot see it).
    """
    value = text.strip()
    if not value:
        raise SpecError(f"--install is empty; {HOW}")
    path = Path(value).expanduser()
    if value.endswith(".whl") and "://" not in value:
        if not path.is_file():
            raise SpecError(f"--install {value}: no such wheel file; {HOW}")
        return _wheel(path, "given")
    if path.is_dir():
        raise SpecError(f"--install {value} is a local folder the VMs cannot see; {HOW}")
    return InstallSource(value, None, "given")


def installed_source() -> InstallSource | None:
    """Where this srifty was installed from, as a source a VM can install from, or ``None`` (editable or local
    folder installs)."""
    try:
        dist = metadata.distribution("srifty")
    except metadata.PackageNotFoundError:
        return None
    text = dist.read_text("direct_url.json")
    if text is None:  # from an index
        return InstallSource(f"srifty=={dist.version}", None, "the package index")
    record = json.loads(text)
    url = str(record.get("url", ""))
    vcs = record.get("vcs_info")
    if vcs is not None:
        commit = vcs.get("commit_id")
        return InstallSource(f"{vcs['vcs']}+{url}" + (f"@{commit}" if commit else ""), None, "its git URL")
    if "archive_info" in record:
        parsed = urlparse(url)
        if parsed.scheme == "file":
            wheel = Path(unquote(parsed.path))
            return _wheel(wheel, "its wheel") if wheel.suffix == ".whl" and wheel.is_file() else None
        return InstallSource(url, None, "its URL")
    return None


def install_source(text: str | None) -> InstallSource | None:
    """The ``--install`` source if given, else this installation's own (``None`` when there is none)."""
    return parse_install(text) if text is not None else installed_source()
