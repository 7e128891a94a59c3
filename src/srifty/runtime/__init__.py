"""The runtime behind ``srifty run``: run a planned job for real and keep it on its plan.

* :mod:`~srifty.runtime.progress`: windowed throughput with a confidence bound, projected end time and cost;
* :mod:`~srifty.runtime.controller`: when to re-plan (a certain violation, a lost VM) and to what;
* :mod:`~srifty.runtime.decisions`: the decision log;
* :mod:`~srifty.runtime.local`: ``torchrun`` over local processes, faults, relaunch from the last checkpoint;
* :mod:`~srifty.runtime.api`: :func:`run_local_job`, the Python API of ``srifty run``.

Replaying a scenario on the emulated cloud (``srifty run --emulated``) judges this runtime rather than being
part of it; it lives in :mod:`srifty.evaluate.scenario`. Importing this package loads no torch.
"""

from srifty.runtime.api import config_from_plan, run_local_job
from srifty.runtime.controller import Controller
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.local import Fault, LocalRunner, RunOutcome, checkpoint_interval_iters
from srifty.runtime.progress import ProgressTracker

__all__ = [
    "Controller",
    "Decision",
    "DecisionLog",
    "Fault",
    "LocalRunner",
    "ProgressTracker",
    "RunOutcome",
    "checkpoint_interval_iters",
    "config_from_plan",
    "run_local_job",
]
