"""What a planner's prediction and the judge's truth say alike of a configuration's job: which constraints it
breaks, and how many samples per second it trains."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

from srifty.vocab.config import Config


class JobOutcome(ABC):
    """A mixin of the frozen records of one configuration's job (predicted or true).

    A subclass has ``config`` and ``violations`` (the constraints broken: ``"deadline"``, ``"budget"``,
    ``"oom"``, …) and says its mean iteration time in :attr:`mean_iter_s`.
    """

    config: Config
    violations: tuple[str, ...]

    @property
    @abstractmethod
    def mean_iter_s(self) -> float:
        """Mean iteration time (s)."""

    @property
    def feasible(self) -> bool:
        """Meets every constraint given."""
        return not self.violations

    @property
    def throughput_samples_per_s(self) -> float:
        """Global batch per mean iteration (0 for an iteration of no or unbounded time)."""
        return self.config.global_batch / self.mean_iter_s if 0 < self.mean_iter_s < math.inf else 0.0
