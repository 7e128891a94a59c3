"""Shared Rich consoles: results on stdout, errors and progress on stderr."""

from __future__ import annotations

import sys

from rich.console import Console

# Rich assumes 80 columns when output is not a terminal (or takes COLUMNS, which test runners set to 80);
# tables of VM types need more to stay legible when piped to a file.
_WIDTH = None if sys.stdout.isatty() else 160

out = Console(highlight=False, width=_WIDTH)
err = Console(stderr=True, highlight=False, width=_WIDTH)


def fmt_usd(value: float | None) -> str:
    """``$1.234`` or an em dash."""
    return "—" if value is None else f"${value:,.3f}"


def fmt_opt(value: float | None, spec: str = ".1f") -> str:
    """A number in ``spec`` format, or an em dash for ``None``."""
    return "—" if value is None else format(value, spec)
