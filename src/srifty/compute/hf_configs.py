"""Where the configuration of an ``hf:`` model comes from, with no network: checked without importing torch.

``hf:<name>`` builds a Hugging Face ``transformers`` model from its configuration (random weights; no weight
download). The configuration is found, in this order:

1. srifty's own short names (``hf:bert-base``, ``hf:gpt2-small``: :data:`srifty.compute.names.HF_MODELS`);
2. a local ``config.json``, or a folder holding one (``hf:./my-model`` or an absolute path);
3. the bundled configurations of common models (``compute/data/hf/configs.json``, by Hub id or alias:
   ``hf:meta-llama/Llama-2-7b-hf``, ``hf:bert-base-uncased``);
4. the Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``), where
   ``huggingface-cli download <id> config.json`` on a machine with network access puts it.

srifty never downloads: a name found nowhere gets a message naming the four places and how to fill one.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from srifty.errors import ProfileError, did_you_mean

#: A Hub model id (``org/name`` or a legacy ``name``).
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?$")


@dataclass(frozen=True)
class HfConfig:
    """A model's ``config.json`` fields and where they were read (for profiles and messages)."""

    name: str
    source: str
    fields: dict[str, Any]


@functools.cache
def _bundled() -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The bundled configurations by Hub id, and every alias (and lower-cased id) to its id."""
    path = resources.files("srifty.compute").joinpath("data", "hf", "configs.json")
    records: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["configs"]
    names: dict[str, str] = {}
    for hub_id, record in records.items():
        for alias in (hub_id, *record.get("aliases", ())):
            names[alias] = hub_id
            names.setdefault(alias.lower(), hub_id)
    return records, names


def bundled_hf_ids() -> list[str]:
    """Hub ids of the bundled configurations, sorted."""
    return sorted(_bundled()[0])


def hf_cache_dirs() -> list[Path]:
    """Where the Hugging Face cache may be, as ``huggingface_hub`` looks for it."""
    if os.environ.get("HF_HUB_CACHE"):
        return [Path(os.environ["HF_HUB_CACHE"]).expanduser()]
    if os.environ.get("HF_HOME"):
        return [Path(os.environ["HF_HOME"]).expanduser() / "hub"]
    return [Path.home() / ".cache" / "huggingface" / "hub"]


def _cached_config(hub_id: str) -> Path | None:
    """``config.json`` of ``hub_id`` in the Hugging Face cache: the snapshot ``refs/main`` names, else the newest."""
    for cache in hf_cache_dirs():
        repo = cache / ("models--" + hub_id.replace("/", "--"))
        main = repo / "refs" / "main"
        if main.is_file():
            candidate = repo / "snapshots" / main.read_text(encoding="utf-8").strip() / "config.json"
            if candidate.is_file():
                return candidate
        found = sorted((repo / "snapshots").glob("*/config.json"), key=lambda p: p.stat().st_mtime)
        if found:
            return found[-1]
    return None


def _read(path: Path, name: str) -> dict[str, Any]:
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ProfileError(f"hf:{name}: cannot read '{path}' as a config.json: {err}.") from None
    if not isinstance(fields, dict) or not isinstance(fields.get("model_type"), str):
        raise ProfileError(
            f"hf:{name}: '{path}' has no `model_type`; give a Hugging Face config.json (it names the model type)."
        )
    return fields


def find_hf_config(name: str) -> HfConfig | None:
    """The configuration of ``hf:<name>`` (not one of srifty's short names) from a local file, the bundled
    set or the Hugging Face cache; ``None`` when none has it.

    Raises:
        ProfileError: a local file that is not a config.json.
    """
    local = Path(name).expanduser()
    if local.is_dir() and (local / "config.json").is_file():
        local = local / "config.json"
    if local.suffix == ".json" and local.is_file():
        return HfConfig(name, f"file {local}", _read(local, name))
    records, names = _bundled()
    hub_id = names.get(name) or names.get(name.lower())
    if hub_id is not None:
        fields = dict(records[hub_id]["config"])
        return HfConfig(name, f"bundled config of {hub_id} (compute/data/hf)", fields)
    if HUB_ID.match(name):
        cached = _cached_config(name)
        if cached is not None:
            return HfConfig(name, f"Hugging Face cache {cached}", _read(cached, name))
    return None


def missing_hf_config(name: str) -> str:
    """What is missing for ``hf:<name>`` and how to provide it (srifty does not download)."""
    caches = " or ".join(str(p) for p in hf_cache_dirs())
    hint = did_you_mean(name, [n for n in _bundled()[1] if n == n.lower() or n in _bundled()[0]])
    return (
        f"no configuration for hf:{name} on this machine.{hint} It is not a local config.json, not in the Hugging "
        f"Face cache ({caches}), and not one of srifty's bundled configurations ({', '.join(bundled_hf_ids())}). "
        f"srifty never downloads: on a machine with network access run `huggingface-cli download {name} "
        "config.json` (then copy the cache here), or save the model's config.json and give hf:/path/to/config.json."
    )


def require_hf_config(name: str) -> HfConfig:
    """:func:`find_hf_config`, or a :class:`ProfileError` saying what is missing (:func:`missing_hf_config`)."""
    found = find_hf_config(name)
    if found is None:
        raise ProfileError(missing_hf_config(name))
    return found
