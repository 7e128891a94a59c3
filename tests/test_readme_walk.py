"""The README, walked as a new user would (issue 29): every command it shows, in order, on a fresh copy of the
tracked files (scripts/readme_walk.py says how each runs: as printed, shortened, stubbed or skipped, and why).

make test runs the quick walk: the README's own workflow (plan, plan --json, run --plan, report --timeline) and
its job specs, each other command left to the test its rule names. The full walk (every command that can run
here, about 2 minutes) is `python scripts/readme_walk.py`, run by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def test_every_readme_command_runs_as_the_readme_says(tmp_path: Path) -> None:
    if not (REPO / ".git").exists():
        pytest.skip("the walk copies the tracked files of a git checkout")
    walk = tmp_path / "walk"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "readme_walk.py"), "--quick", "--keep", str(walk)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    rows = done.stdout.splitlines()
    assert not [r for r in rows if r.startswith(("FAILED", "unknown"))], done.stdout
    ran = [r for r in rows if r.startswith(("as printed", "shortened", "stubbed"))]
    assert any("srifty run job.yaml --plan plan.json" in r for r in ran), done.stdout
    assert any("job specs the README shows" in r for r in ran), done.stdout
    covered = [r for r in rows if r.startswith("covered")]
    assert covered and all("tests/test_" in r for r in covered), done.stdout
    assert (walk / "run.html").is_file()
