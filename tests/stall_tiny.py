"""``examples/train_tiny.py`` with a hang that heartbeats do not reveal: ``python tests/stall_tiny.py AT NODE``.

In a fresh start (no checkpoint yet), the rank on node ``NODE`` (torchrun's ``GROUP_RANK``) stops in a sleep
just before iteration ``AT``: its courier thread keeps posting heartbeats, while the other ranks wait for it
in their allreduce. A relaunch from a checkpoint runs normally.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path

from srifty.checkpoints import read_latest
from srifty.torch import training

STALL_S = 3600.0


def main() -> None:
    at, node = int(sys.argv[1]), sys.argv[2]
    if os.environ.get("GROUP_RANK") == node and read_latest(os.environ["SRIFTY_CKPT_DIR"]) is None:
        beat = training.RunReporter.beat

        def stalling_beat(self: training.RunReporter, iteration: int, phase: str = "done", *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            if iteration == at and phase == "started":
                time.sleep(STALL_S)  # the main thread only: the courier's daemon thread goes on beating
            beat(self, iteration, phase, *args, **kwargs)

        training.RunReporter.beat = stalling_beat  # type: ignore[method-assign]
    sys.argv = sys.argv[:1]
    runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "train_tiny.py"), run_name="__main__")


if __name__ == "__main__":
    main()
