"""What follows ``torchrun``'s own options: the training command, in the form torchrun accepts.

``srifty run`` and every command srifty prints or exports (``srifty plan``'s torchrun lines, SkyPilot tasks)
hand the training command to torchrun the same way, so a line that works under ``srifty run`` works as
printed too. torchrun runs its target with its own Python: ``torchrun … python train.py`` would try to open
a file named ``python``.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from srifty.errors import SpecError


def torchrun_target(train_command: Sequence[str]) -> list[str]:
    """``python train.py …`` becomes ``train.py …``, ``python -m pkg.mod …`` becomes ``-m pkg.mod …``
    (torchrun runs the script with its own Python); any other executable runs as is, under ``--no-python``.

    Raises:
        SpecError: an empty command.
    """
    if not train_command:
        raise SpecError("no training command given; write it as you would run it, e.g. 'python train.py'")
    first = Path(train_command[0]).name
    if first.startswith("python") and len(train_command) > 1:
        return list(train_command[1:])
    return ["--no-python", *train_command]


def split_command(text: str, what: str = "--train-command") -> list[str]:
    """A command line given as one string, split as a POSIX shell would (no expansion).

    Raises:
        SpecError: unbalanced quotes, or nothing to run.
    """
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise SpecError(f"{what} '{text}' cannot be split into words ({error}); check its quotes") from None
    if not words:
        raise SpecError(f"{what} is empty; give the training command, e.g. 'python train.py'")
    return words
