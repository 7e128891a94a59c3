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
#: Modules a plan needs, which must not import pandas either (half a second of a cold `srifty plan`).
PANDAS_FREE = ("srifty", "srifty.vocab", "srifty.spec", "srifty.plan", "srifty.cli.main")


@pytest.mark.parametrize("module", [*LIGHT, *LIGHT_TOO])
def test_import_is_light(module: str) -> None:
    heavy_here = (*HEAVY, "pandas", "pyarrow") if module in PANDAS_FREE else HEAVY
    code = f"import sys, {module}\nheavy = [m for m in {heavy_here!r} if m in sys.modules]\nprint(','.join(heavy))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"{module} imported {result.stdout.strip()}"


def test_a_plan_with_the_embedded_bandwidth_model_imports_neither_pandas_nor_xgboost(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The whole of `srifty plan` (spec, profiles, the default bandwidth model's predictions, the search) runs
    on numpy: pandas, pyarrow, scipy and xgboost are only for fitting and probe files."""
    from pathlib import Path

    spec = Path(__file__).resolve().parents[1] / "examples" / "case1-resnet50.yaml"
    code = (
        "import sys\nfrom srifty.cli.main import run\n"
        f"sys.argv = ['srifty', 'plan', {str(spec)!r}, '--json', {str(tmp_path / 'plan.json')!r}]\n"
        "try:\n    run()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "heavy = ('pandas', 'pyarrow', 'scipy', 'xgboost', 'torch')\n"
        "print('LOADED=' + ','.join(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (tmp_path / "plan.json").is_file()
    assert result.stdout.strip().splitlines()[-1] == "LOADED=", result.stdout[-300:]
