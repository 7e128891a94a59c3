"""Batch limits read off the emulated cloud's truth, for the planner's problem builder (not for the judge).

Oracle BO searches its method's space by measuring the truth, and the harder suite's generator sizes srifty's
space: both build srifty's problem (:func:`srifty.plan.build_problems`) with what one GPU really holds and no
knee floor (the knee is srifty's insight, not a fact of the world).
"""

from __future__ import annotations

from dataclasses import dataclass

from srifty.catalog import InstanceType
from srifty.cloud import EmulatedCloud


@dataclass(frozen=True)
class TruthLimits:
    """What one GPU of each type really holds training ``model`` on ``cloud``; no knee."""

    cloud: EmulatedCloud
    model: str

    def max_batch(self, instance: InstanceType) -> int:
        """Largest local batch one GPU of ``instance`` holds."""
        return self.cloud.max_batch(instance.gpu_name, self.model)

    def knee_batch(self, instance: InstanceType) -> int:
        """1: no knee floor."""
        return 1
