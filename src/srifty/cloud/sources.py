"""Where the emulated cloud's compute truth comes from: measured source profiles of each model.

The cloud needs one measured profile per model (with per-op counts, so it can be estimated on any GPU):
profile files (``*.json``; other JSON files are skipped) in folders the caller names, then the profiles
bundled with srifty (:mod:`srifty.compute.bundled`). A profile measured on a GPU, where one exists,
makes that GPU's truth a resampling of its measurements instead of an estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from srifty.cloud.errors import CloudError
from srifty.compute import Profile, load_profile
from srifty.compute.bundled import bundled_profiles_for, profile_filename
from srifty.errors import ArtifactError, ProfileError


def find_source_profiles(model: str, dirs: Sequence[Path] = (), precision: str = "fp32") -> list[Profile]:
    """Measured profiles of ``model`` at ``precision``: from ``dirs`` first, then the bundled ones.

    Raises:
        CloudError: none found, naming where it looked and how to make one.
    """
    found: list[Profile] = []
    seen: set[str] = set()
    for folder in dirs:
        if not Path(folder).is_dir():
            raise CloudError(f"profile folder '{folder}' does not exist. Check the path.")
        for path in sorted(Path(folder).glob("*.json")):
            try:
                profile = load_profile(path)
            except (ArtifactError, ProfileError):
                continue  # not a profile file
            if profile.model == model and profile.precision == precision and not profile.is_estimate:
                found.append(profile)
                seen.add(profile.device.label)
    for profile in bundled_profiles_for(model):
        if profile.precision == precision and not profile.is_estimate and profile.device.label not in seen:
            found.append(profile)
    if not found:
        where = ", ".join(str(d) for d in dirs) + (" and " if dirs else "") + "the bundled profiles"
        raise CloudError(
            f"no measured {precision} profile of '{model}' in {where}; the emulated cloud builds its compute "
            f"truth from one. Make one with `srifty profile --model {model} --out "
            f"DIR/{profile_filename(model, 'cpu')}` and pass --profiles DIR."
        )
    return found
