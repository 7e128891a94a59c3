"""The profiles shipped inside the package (``compute/data/profiles``), and lookups over profile files.

File names are ``<model>__<device>.json``, where ``<device>`` is ``cpu`` or a catalog GPU name and the
model name is made file-safe (``hf:bert-base`` → ``hf-bert-base``). ``README.md`` beside them says where
and how each was measured.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from srifty.compute.profile import Profile, load_profile


def profile_filename(model: str, device_label: str) -> str:
    """``<model>__<device>.json`` with the model name made file-safe."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip("-")
    return f"{safe}__{device_label}.json"


def bundled_dir() -> Path:
    """The folder of bundled profiles."""
    return Path(str(resources.files("srifty.compute").joinpath("data", "profiles")))


def bundled_profile_paths() -> list[Path]:
    """Every bundled profile file, sorted."""
    folder = bundled_dir()
    return sorted(folder.glob("*__*.json")) if folder.is_dir() else []


def bundled_profiles_for(model: str) -> list[Profile]:
    """Bundled profiles of ``model`` on every device they exist for."""
    prefix = profile_filename(model, "").removesuffix(".json")
    return [load_profile(p) for p in bundled_profile_paths() if p.name.startswith(prefix)]
