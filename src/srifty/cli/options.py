"""Options that only mean something beside another: given alone, they are refused rather than ignored."""

from __future__ import annotations

from collections.abc import Iterable

import typer

from srifty.errors import SpecError

#: Where an option's value came from when the user gave it (Click's ``ParameterSource`` names).
_GIVEN = ("COMMANDLINE", "ENVIRONMENT", "PROMPT")


def given(ctx: typer.Context, names: Iterable[str]) -> list[str]:
    """The options among ``names`` (parameter names) the user gave, as they are spelled (``--ckpt-dir``)."""
    spelled = {p.name: p.opts[0] for p in ctx.command.params if p.name is not None and p.opts}
    out = []
    for name in names:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name in _GIVEN:
            out.append(spelled.get(name, "--" + name.replace("_", "-")))
    return out


def refuse_without(ctx: typer.Context, names: Iterable[str], needs: str, hint: str = "") -> None:
    """Refuse the options among ``names`` the user gave, since they do nothing without ``needs``.

    Raises:
        SpecError: naming the options, what they need, and ``hint``.
    """
    found = given(ctx, names)
    if found:
        verb = "does" if len(found) == 1 else "do"
        raise SpecError(f"{', '.join(found)} {verb} nothing without {needs}{': ' + hint if hint else ''}.")
