"""The emulated cloud: a seeded statistical model of a cloud, the ground truth for judging plans.

EMULATED, not a real cloud, and labelled so wherever its numbers appear. srifty learns about it only
through :meth:`EmulatedCloud.profile` (noisy compute measurements) and :meth:`EmulatedCloud.probe`
(allreduce probe rows); its network truth is deliberately a different model from srifty's simulator
(:mod:`srifty.cloud.network`). Its compute truth comes from estimated profiles times hidden factors
(:mod:`srifty.cloud.compute`), because no GPU was measured in this project.

Pure numpy and pandas; importing it loads neither torch nor xgboost.
"""

from srifty.cloud.allocation import Allocation, GroupDraw
from srifty.cloud.compute import ComputeTruth
from srifty.cloud.emulated import EmulatedCloud, RunResult, default_node_counts
from srifty.cloud.errors import CloudError, OutOfMemoryError
from srifty.cloud.market import Preemption
from srifty.cloud.params import CloudParams, named_rng
from srifty.cloud.sources import find_source_profiles

__all__ = [
    "Allocation",
    "CloudError",
    "CloudParams",
    "ComputeTruth",
    "EmulatedCloud",
    "GroupDraw",
    "OutOfMemoryError",
    "Preemption",
    "RunResult",
    "default_node_counts",
    "find_source_profiles",
    "named_rng",
]
