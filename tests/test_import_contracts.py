"""The import contracts (``[tool.importlinter]`` in pyproject.toml, run by ``make lint``) hold on the package,
and a deliberate violation of each, added to a scratch copy, breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

LINT = Path(sys.executable).with_name("lint-imports")
pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed (make test installs it)")


def scratch_copy(folder: Path) -> Path:
    """The package's Python files copied under ``folder/src``; returns that ``src``."""
    src = folder / "src"
    shutil.copytree(
        REPO / "src" / "srifty",
        src / "srifty",
        ignore=lambda _dir, names: [n for n in names if n == "__pycache__" or n.startswith("data")],
    )
    return src


def lint(src: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the project's contracts over the package under ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [str(LINT), "--no-cache", str(REPO / "pyproject.toml")]
    return subprocess.run(command, cwd=src.parent, env=env, capture_output=True, text=True, timeout=300)


def test_the_package_keeps_every_contract(tmp_path: Path) -> None:
    result = lint(scratch_copy(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("files", "contract"),
    [
        ({"cloud/scratch.py": "from srifty.sim import Simulator\n"}, "The judge (cloud, evaluate.truth)"),
        ({"cloud/scratch.py": "from srifty.compute.estimate import estimate_profile\n"}, "The judge"),
        ({"cloud/scratch.py": "from srifty.network.model import BandwidthModel\n"}, "The judge"),
        ({"cloud/scratch.py": "from srifty.compute.latency import fit_latency_curve\n"}, "The judge"),
        ({"cloud/scratch.py": "from srifty.compute import Profile\n"}, "The judge"),
        ({"cloud/scratch.py": "def f():\n    from srifty.plan.methods import sample_configs\n"}, "The judge"),
        # the truth side of srifty eval: scoring, space and reference are the judge's own
        ({"evaluate/truth/scratch.py": "from srifty.plan import job_time_cost\n"}, "The judge"),
        ({"evaluate/truth/scratch.py": "from srifty.plan.space import allowed_batches\n"}, "The judge"),
        ({"evaluate/truth/scratch.py": "from srifty.sim import simulate\n"}, "The judge"),
        ({"evaluate/truth/scratch.py": "from srifty.spot import SpotModel\n"}, "The judge"),
        # indirectly, through a module of srifty eval that plans
        ({"evaluate/truth/scratch.py": "import srifty.evaluate.cases\n"}, "The judge"),
        ({"sim/scratch.py": "from srifty.plan import make_plan\n"}, "Stages are layered"),
        ({"vocab/scratch.py": "from srifty.compute import Profile\n"}, "Stages are layered"),
        ({"runtime/scratch.py": "from srifty.cli.console import out\n"}, "Stages are layered"),
        ({"compute/scratch.py": "def f():\n    import torch\n"}, "Models and planning are pure"),
        ({"plan/scratch.py": "from srifty.compute.measure import profiler\n"}, "Measurement (torch"),
        ({"runtime/scratch.py": "from srifty.plan.api import plan_job\n"}, "srifty.plan is imported through its"),
        ({"evaluate/scratch.py": "from srifty.plan.methods.paleo import paleo_profile\n"}, "srifty.plan is imported"),
        ({"plan/scratch.py": "from srifty.vocab.config import Config\n"}, "srifty.vocab is imported through its"),
        ({"plan/scratch.py": "from srifty.compute.latency import LatencyModel\n"}, "srifty.compute is imported"),
        ({"cli/scratch.py": "from srifty.network.testbed.hosts import vanish\n"}, "srifty.network.testbed is"),
        ({"evaluate/scratch.py": "from srifty.cloud.emulated import EmulatedCloud\n"}, "srifty.cloud is imported"),
        ({"cli/scratch.py": "def f():\n    from srifty.evaluate.tables import cases_rows\n"}, "srifty.evaluate is"),
        (
            {
                "report/scratch_a.py": "import srifty.report.scratch_b\n",
                "report/scratch_b.py": "import srifty.report.scratch_a\n",
            },
            "No import cycles",
        ),
    ],
)
def test_a_deliberate_violation_breaks_its_contract(tmp_path: Path, files: dict[str, str], contract: str) -> None:
    src = scratch_copy(tmp_path)
    for name, code in files.items():
        (src / "srifty" / name).write_text(code, encoding="utf-8")
    result = lint(src)
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if " BROKEN" in line]
    assert any(line.startswith(contract) for line in broken), result.stdout
