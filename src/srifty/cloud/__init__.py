"""The emulated cloud: a seeded statistical model of a cloud, the ground truth for judging plans.

EMULATED, not a real cloud, and labelled so wherever its numbers appear. Its compute truth comes from real
measurements (one H200's latency curves, public per-GPU throughput) carried to every GPU type by a physical
model of its own (:mod:`srifty.cloud.kernels`, :mod:`srifty.cloud.transfer`) over its own counts of each
model (:mod:`srifty.cloud.architectures`); its network (:mod:`srifty.cloud.network`) is a form of its own
fitted to public nccl-tests and torch.distributed tables of real clusters and the testbed's probes
(:mod:`srifty.cloud.netfit`); its execution (:mod:`srifty.cloud.iteration`) is its own too. It reaches none of
srifty's predictors or its planner (``srifty.sim``, ``srifty.network``, ``srifty.plan``, ``srifty.compute``,
``srifty.spot``): the ``judge-apart`` import contract in ``pyproject.toml`` enforces it. srifty learns about
it only by measuring: :meth:`EmulatedCloud.profiling_session` and :meth:`EmulatedCloud.probe`. Other packages
import the public names below, never the modules (the ``public-cloud`` import contract).

Pure numpy, scipy and pandas; importing it loads neither torch nor xgboost.
"""

from srifty.cloud.allocation import Allocation, GroupDraw
from srifty.cloud.architectures import H200_NAMES
from srifty.cloud.compute import ComputeTruth
from srifty.cloud.emulated import EmulatedCloud, RunResult, default_node_counts
from srifty.cloud.errors import CloudError, OutOfMemoryError
from srifty.cloud.market import Preemption
from srifty.cloud.observations import EMULATED_EPOCH_S, GradientRecord, ProfilingSession, TimedBatch
from srifty.cloud.params import CloudParams, named_rng
from srifty.cloud.reference_data import workloads
from srifty.cloud.stragglers import NO_STRAGGLERS

__all__ = [
    "EMULATED_EPOCH_S",
    "H200_NAMES",
    "NO_STRAGGLERS",
    "Allocation",
    "CloudError",
    "CloudParams",
    "ComputeTruth",
    "EmulatedCloud",
    "GradientRecord",
    "GroupDraw",
    "OutOfMemoryError",
    "Preemption",
    "ProfilingSession",
    "RunResult",
    "TimedBatch",
    "default_node_counts",
    "named_rng",
    "workloads",
]
