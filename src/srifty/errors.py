"""Typed errors. Every user-facing error says what was wrong and how to fix it.

The CLI prints a :class:`SriftyError` as one paragraph and exits with code 2; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class SriftyError(Exception):
    """Base class of errors caused by user input or the user's environment, not by a bug."""


class SpecError(SriftyError):
    """A job spec is malformed or refers to something that does not exist."""


class CatalogError(SriftyError):
    """An instance type, GPU, region or market is not in the bundled catalog."""


class ProfileError(SriftyError):
    """A compute profile is missing, malformed, or cannot be measured."""


class ArtifactError(SriftyError):
    """A versioned artefact file (profile, probe set, model, plan) is unreadable or of the wrong kind."""


class ProbeError(SriftyError):
    """An allreduce probe cannot start or cannot finish (bad options, no torchrun, a failed collective)."""


class ProbeTimeoutError(ProbeError):
    """A collective did not finish within the probe's timeout; the message names the ranks that hung."""


class TraceError(SriftyError):
    """A spot trace file is unreadable, malformed, or names an instance type the catalog lacks."""


class LaunchError(SriftyError):
    """A cloud launch cannot go on: SkyPilot is missing, cannot provision the plan, or one of its calls failed
    (the message names the command and quotes its output)."""


class InfeasiblePlanError(SriftyError):
    """No configuration satisfies the job's constraints.

    Attributes:
        binding_constraint: the constraint that binds, for example ``"deadline"`` or ``"quota"``.
    """

    def __init__(self, message: str, binding_constraint: str = "") -> None:
        super().__init__(message)
        self.binding_constraint = binding_constraint


def closest_names(name: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """The ``n`` valid names closest to ``name`` (case-insensitive), best first."""
    valid_list = sorted(set(valid))
    lowered = {v.lower(): v for v in valid_list}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[h] for h in hits]


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """A ``" Did you mean 'a' or 'b'?"`` suffix, or an empty string when nothing is close."""
    hits = closest_names(name, valid)
    if not hits:
        return ""
    quoted = [f"'{h}'" for h in hits]
    joined = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" Did you mean {joined}?"
