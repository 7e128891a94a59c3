"""The network stage imports neither torch, xgboost nor optuna until used."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "xgboost", "optuna")


MODULES = ["srifty.network", "srifty.cli.network_cmd", "srifty.network.probe", "srifty.network.testbed"]


@pytest.mark.parametrize("module", MODULES)
def test_network_import_is_light(module: str) -> None:
    code = f"import sys, {module}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"{module} imported {result.stdout.strip()}"
