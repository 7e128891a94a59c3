"""What `srifty` prints reads as plain text (issue 29, item 5): every table rendered to a pipe carries no Rich
markup tags, money below a dollar is shown in cents, and `srifty plan` gives the answer first and the
pruned types' tables only under --show-pruned."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from srifty.units import usd_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: A Rich style tag: ``[/]``, ``[/yellow]``, ``[bold red]``, ``[link=…]`` (a configuration's ``[spot]`` is not one).
STYLE_TAG = re.compile(
    r"\[/[^\]]*\]|\[(?:bold|dim|italic|underline|reverse|blink|strike|link|"
    r"(?:bright_)?(?:black|red|green|yellow|blue|magenta|cyan|white))(?:\s[^\]]*)?\]"
)

COMMANDS = [
    ("plan", str(EXAMPLES / "case1-resnet50.yaml"), "--show-pruned"),
    ("plan", str(EXAMPLES / "case6-inception.yaml"), "--show-pruned"),
    ("plan", str(EXAMPLES / "case4-dlrm.yaml")),
    ("plan", str(EXAMPLES / "p4d-p5-bert.yaml"), "--show-pruned"),
    ("plan", str(EXAMPLES / "tiny-local.yaml")),
    ("simulate", str(EXAMPLES / "case5-bert.yaml"), "--config", "4xg4dn.12xlarge@64"),
    ("catalog", "list", "--gpu", "T4"),
    ("profile", "show", str(EXAMPLES / "profiles" / "srifty.compute.zoo-tiny_mlp__cpu.json")),
]


def test_money_below_a_dollar_is_shown_in_cents() -> None:
    assert [usd_text(v) for v in (47.756, 1.0, 0.328, 0.0031, 0.0)] == ["$47.76", "$1.00", "32.8¢", "0.31¢", "0¢"]
    assert usd_text(None) == "—" and usd_text(0.99999) == "$1.00"


def test_the_style_tag_pattern_finds_tags_and_spares_configurations() -> None:
    assert STYLE_TAG.search("p5.48xlarge [yellow]not probed[/yellow]")
    assert STYLE_TAG.search("[bold red]infeasible[/]")
    assert not STYLE_TAG.search("8xp6-b200.48xlarge@16[spot],2xg4dn.xlarge@4[on_demand] [cpu, 2 threads]")


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(Path(x).name for x in a[:3]))
def test_no_markup_leaks_into_plain_output(cli, args: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli(*args)
    assert code in (0, 2), err
    assert out.strip()
    leaks = sorted({m.group(0) for m in STYLE_TAG.finditer(out + err)})
    assert not leaks, f"{' '.join(args)} printed markup tags {leaks}"
    assert "$0.00" not in out + err


def test_plan_gives_the_answer_first_and_pruned_types_only_when_asked(cli) -> None:  # type: ignore[no-untyped-def]
    spec = str(EXAMPLES / "auto-resnet50.yaml")
    code, out, err = cli("plan", spec)
    assert code == 0, err
    assert out.startswith("Chosen: ") and "fixed overheads 155.0 s" in out.splitlines()[0]
    shown = re.search(
        r"network figures \(64 MiB allreduce\): the (\d+) types shown above \(--show-pruned: all (\d+)\)", out
    )
    assert shown is not None and int(shown.group(1)) < int(shown.group(2))
    assert "pruned before search" not in out
    code, full, err = cli("plan", spec, "--show-pruned")
    assert code == 0, err
    assert "pruned before search (one reason per offer)" in full
    assert len(full.splitlines()) > len(out.splitlines())


def test_an_infeasible_plan_says_so_before_its_tables_and_once_on_stderr(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("plan", str(EXAMPLES / "case6-inception.yaml"))
    assert code == 2
    assert out.startswith("No configuration meets the constraints (deadline binds)")
    assert err.strip().startswith("error: no configuration meets the constraints") and "\ninfeasible" not in err
