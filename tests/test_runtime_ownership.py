"""The controller owns its state: only :mod:`srifty.runtime.controller` writes a controller's attributes; every
other module reads them through read-only properties and changes them through the controller's methods."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from srifty.catalog import load_catalog
from srifty.runtime.controller import Controller
from srifty.runtime.decisions import DecisionLog
from srifty.spec import spec_from_mapping
from srifty.vocab import parse_config
from tests.conftest import REPO

OWNER = REPO / "src" / "srifty" / "runtime" / "controller.py"
SCANNED = ("src", "benchmarks", "scripts", "tests")
SPEC = {
    "model": "resnet50", "global_batch": 64, "iterations": 10, "goal": "min_cost", "region": "us-east-1",
    "candidates": [{"instance_type": "p3.8xlarge", "market": "spot", "quota": 2}],
}  # fmt: skip


def _is_controller(node: ast.expr) -> bool:
    """An expression that names a controller: ``controller``, ``ctl``, ``self.controller``, ``x._controller``."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.lstrip("_") in ("controller", "ctl")


def controller_writes(source: str) -> list[int]:
    """Lines that assign, augment or delete an attribute of a controller, or call ``setattr`` on one."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            targets = [ast.Attribute(node.args[0], "", ast.Store())] if node.args else []
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and _is_controller(part.value):
                    lines.append(node.lineno)
    return lines


def test_no_module_but_the_controller_writes_a_controller_attribute() -> None:
    found = {}
    for folder in SCANNED:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path in (OWNER, Path(__file__).resolve()) or ".venv" in path.parts:  # this file writes on purpose
                continue
            lines = controller_writes(path.read_text(encoding="utf-8"))
            if lines:
                found[str(path.relative_to(REPO))] = lines
    assert found == {}, f"these assign a controller's attributes (use the controller's methods): {found}"


@pytest.mark.parametrize(
    "source",
    [
        "self.controller.iteration = 3",
        "controller.tracker.window_s = 1",
        "ctl._set_aside += ['h']",
        "setattr(runner.controller, 'find_slow', f)",
        "del controller.config",
    ],
)
def test_the_rule_sees_each_kind_of_write(source: str) -> None:
    assert controller_writes(source) == [1]


def test_a_controller_refuses_writes_from_outside(tmp_path: Path) -> None:
    config = parse_config("2xp3.8xlarge@32[spot]", "us-east-1", catalog=load_catalog())
    ctl = Controller(spec_from_mapping(SPEC), config, lambda spec: None, DecisionLog(tmp_path / "d.jsonl"))  # type: ignore[arg-type,return-value]
    for name, value in (("iteration", 3), ("config", config), ("set_aside_hosts", ()), ("find_slow", None)):
        with pytest.raises(AttributeError):
            setattr(ctl, name, value)
    ctl.rollback_to(0, 1.0)
    assert ctl.iteration == 0
