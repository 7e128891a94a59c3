"""Atomic and durable: commands killed with SIGKILL at random points leave the old file or the new one,
never a torn one; a killed `srifty run` leaves no worker behind. A few kills each (see tests/faults.py;
benchmarks/reliability.py runs many more)."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest

from tests.faults import TARGETS, kill_at_random, stop_run_at_random

pytest.importorskip("torch")
pytestmark = pytest.mark.slow


# The writing loops are where kills land inside writes; the commands mostly die before they write (see
# benchmarks/reliability.py for many kills of each).
KILLS = {"model-save": 3, "atomic-write": 3}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_kill_at_a_random_point_leaves_the_old_file_or_the_new_one(name: str, tmp_path: Path) -> None:
    kills = KILLS.get(name, 1)
    row = kill_at_random(TARGETS[name](), kills=kills, rng=random.Random(name), base=tmp_path)
    assert row.injected == kills and row.torn == 0 and row.old + row.new == kills, row
    assert row.leftovers == 0, row


def test_killing_srifty_run_with_sigkill_still_ends_its_workers(tmp_path: Path) -> None:
    """No handler runs on SIGKILL: torchrun learns of it from the kernel (parent-death signal) and ends
    its workers."""
    row = stop_run_at_random(signal.SIGKILL, count=1, rng=random.Random(0), base=tmp_path)
    assert row.injected == 1 and row.leftovers == 0, row
