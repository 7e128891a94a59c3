"""Shared Rich consoles: results on stdout, errors and progress on stderr.

Markup is off: messages and table cells carry file names, field values and model names the user wrote,
and a ``[/]`` in any of them must print as written, not be taken as a style tag (or raise). Styled words
are built with :func:`styled`.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text

# Rich assumes 80 columns when output is not a terminal (or takes COLUMNS, which test runners set to 80);
# tables of VM types need more to stay legible when piped to a file.
_WIDTH = None if sys.stdout.isatty() else 160

out = Console(highlight=False, markup=False, width=_WIDTH)
err = Console(stderr=True, highlight=False, markup=False, width=_WIDTH)


def styled(style: str, label: str, text: str = "") -> Text:
    """``label`` in ``style`` followed by ``text``, both printed exactly as written."""
    return Text.assemble((label, style), text)


def fmt_usd(value: float | None) -> str:
    """``$1.234`` or an em dash."""
    return "—" if value is None else f"${value:,.3f}"


def fmt_opt(value: float | None, spec: str = ".1f") -> str:
    """A number in ``spec`` format, or an em dash for ``None``."""
    return "—" if value is None else format(value, spec)
