"""`import srifty` (and the CLI's start-up) must not import torch or xgboost."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "xgboost", "torchvision", "transformers", "optuna")
LIGHT = (
    "srifty",
    "srifty.catalog",
    "srifty.spec",
    "srifty.vocab",
    "srifty.spot",
    "srifty.plan",
    "srifty.runtime",
    "srifty.cli.main",
)
LIGHT_TOO = ("srifty.cloud", "srifty.evaluate", "srifty.report", "srifty.compute", "srifty.compute.measure")


@pytest.mark.parametrize("module", [*LIGHT, *LIGHT_TOO])
def test_import_is_light(module: str) -> None:
    code = f"import sys, {module}\nheavy = [m for m in {HEAVY!r} if m in sys.modules]\nprint(','.join(heavy))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"{module} imported {result.stdout.strip()}"
