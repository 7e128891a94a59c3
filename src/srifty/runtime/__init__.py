"""The runtime behind ``srifty run``: run a planned job for real and keep it on its plan.

* :mod:`~srifty.runtime.progress`: windowed throughput with a confidence bound, projected end time and cost;
* :mod:`~srifty.runtime.controller`: when to re-plan (a certain violation, a lost VM) and to what; it owns the
  run's progress and exposes it read-only;
* :mod:`~srifty.runtime.decisions`: the decision log;
* :mod:`~srifty.runtime.runner`: the :class:`Runner` interface (the run's clock, timeline, rollback);
* :mod:`~srifty.runtime.local`: :class:`LocalRunner`, ``torchrun`` over local processes (one launch of it:
  :mod:`~srifty.runtime.local_launch`);
* :mod:`~srifty.runtime.cluster`: :class:`ClusterRunner`, one ``torchrun`` per host (one launch of it:
  :mod:`~srifty.runtime.cluster_launch`; how it loses hosts: :mod:`~srifty.runtime.host_losses`; its
  controller from the run state: :mod:`~srifty.runtime.cluster_controller`);
* :mod:`~srifty.runtime.torchrun`: what both runners' launches share (environment, rank layout, torchrun's
  exit report); :mod:`~srifty.runtime.checkpoint_interval`: how often a run checkpoints by default;
* :mod:`~srifty.runtime.faults`: injected faults; :mod:`~srifty.runtime.stragglers`: which host is slow;
* :mod:`~srifty.runtime.state`: a multi-host run's state (``run.json``), options and launcher set-up;
* :mod:`~srifty.runtime.api` and :mod:`~srifty.runtime.cluster_api`: :func:`run_local_job`,
  ``run_cluster_job`` and ``resume_cluster_job``, the Python API of ``srifty run``.

Replaying a scenario on the emulated cloud (``srifty run --emulated``) judges this runtime rather than being
part of it; it lives in :mod:`srifty.evaluate.scenario`. Importing this package loads no torch.
"""

from srifty.runtime.api import config_from_plan, resume_local_job, run_local_job
from srifty.runtime.checkpoint_interval import checkpoint_interval_iters
from srifty.runtime.cluster_api import read_run_state, resume_cluster_job, run_cluster_job
from srifty.runtime.controller import Controller
from srifty.runtime.cpu_quota import leftover_groups
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.faults import Fault, HostFault, Injector, inject_locally, parse_host_faults
from srifty.runtime.launchers import Launcher
from srifty.runtime.local import LocalRunner
from srifty.runtime.progress import ProgressTracker
from srifty.runtime.runner import Runner, RunOutcome
from srifty.runtime.state import LauncherSetup, LocalRunState, RunState

__all__ = [
    "Controller",
    "Decision",
    "DecisionLog",
    "Fault",
    "HostFault",
    "Injector",
    "Launcher",
    "LauncherSetup",
    "LocalRunState",
    "LocalRunner",
    "ProgressTracker",
    "RunOutcome",
    "RunState",
    "Runner",
    "checkpoint_interval_iters",
    "config_from_plan",
    "inject_locally",
    "leftover_groups",
    "parse_host_faults",
    "read_run_state",
    "resume_cluster_job",
    "resume_local_job",
    "run_cluster_job",
    "run_local_job",
]
