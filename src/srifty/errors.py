"""Typed errors. Every user-facing error says what was wrong and how to fix it.

The CLI prints a :class:`SriftyError` as one paragraph and exits with code 2; anything else is a bug and
keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable


class SriftyError(Exception):
    """Base class of errors caused by user input or the user's environment, not by a bug."""


class SpecError(SriftyError):
    """A job spec is malformed or refers to something that does not exist."""


class OptionError(SpecError):
    """A bad value of an option of a Python API function.

    The message reads ``"{option} {problem}"``, with the parameters' own names; the CLI words it with the
    flags that set them instead (:meth:`worded`), so that core modules never name a command-line flag.

    Attributes:
        option: the parameter's name, e.g. ``"lease_s"``.
        problem: what is wrong with its value and how to fix it; other options it names are written
            ``{name}`` and listed in ``mentions``, e.g. ``"must be longer than {heartbeat_timeout_s}."``.
        mentions: the other options ``problem`` names.
    """

    def __init__(self, option: str, problem: str, mentions: tuple[str, ...] = ()) -> None:
        self.option = option
        self.problem = problem
        self.mentions = mentions
        super().__init__(self.worded(lambda name: name))

    def worded(self, name_of: Callable[[str], str]) -> str:
        """The message with each option called ``name_of(option)`` (its command-line flag, for example); a
        problem that starts with a colon follows the name directly."""
        problem = self.problem
        for other in self.mentions:
            problem = problem.replace("{" + other + "}", name_of(other))
        return f"{name_of(self.option)}{'' if problem.startswith(':') else ' '}{problem}"


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
