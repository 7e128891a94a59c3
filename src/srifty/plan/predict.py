"""Predictors: what a configuration's iteration time will be.

A :class:`Predictor` predicts the iteration time of a configuration; scoring that prediction against the
job's deadline and budget is :mod:`srifty.plan.scoring`'s business. srifty's predictor is the simulator
(:class:`SimPredictor`); the baselines' (APM, Paleo) plug into the same search
(:mod:`srifty.plan.methods`), as in the paper, which compares predictors "by replacing its learned models
with the baselines', keeping the optimizer intact for fairness".
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from srifty.sim import Simulator
from srifty.vocab import Config


@dataclass(frozen=True)
class Estimate:
    """Predicted iteration time of one configuration (seconds).

    Attributes:
        parallelism, checkpointing: the strategy the configuration was predicted under
            (:mod:`srifty.plan.sharding` chooses it).
        fits_memory: whether every GPU holds its local batch under that strategy (predicted).
        memory_peak_bytes, memory_usable_bytes: the fullest GPU's predicted peak and usable memory (0: not
            checked).
    """

    iter_mean_s: float
    iter_std_s: float
    iter_p5_s: float
    iter_p95_s: float
    compute_s: float
    comm_exposed_s: float
    estimated_profiles: bool = False
    iter_mean_error_s: float = 0.0
    #: How compute and communication were combined (srifty: measured interference or perfect overlap).
    iteration_model: str = ""
    parallelism: str = "ddp"
    checkpointing: bool = False
    fits_memory: bool = True
    memory_peak_bytes: float = 0.0
    memory_usable_bytes: float = 0.0


class Predictor(Protocol):
    """Predicts iteration time; ``name`` says which predictor it is."""

    name: str

    def predict(self, config: Config) -> Estimate:
        """Predict ``config``'s iteration time."""
        ...


class SimPredictor:
    """srifty's predictor: the simulator, with common random numbers per configuration.

    Each configuration gets its own generator seeded from ``(seed, its notation)``, so its estimate does not
    depend on the order in which the search visits configurations, and two configurations are compared on
    the same footing.
    """

    name = "srifty"

    def __init__(self, simulator: Simulator, seed: int = 0) -> None:
        self.simulator = simulator
        self.seed = seed

    def prefetch(self, configs: Sequence[Config]) -> None:
        """Warm the simulator's network cache for a whole search space (one bandwidth-model call)."""
        self.simulator.prefetch(configs)

    def predict(self, config: Config) -> Estimate:
        rng = np.random.default_rng([self.seed, zlib.crc32(config.notation().encode())])
        r = self.simulator.simulate(config, rng)
        return Estimate(
            r.iter_mean_s,
            r.iter_std_s,
            r.iter_p5_s,
            r.iter_p95_s,
            r.fw_mean_s + r.bwd_mean_s + r.step_mean_s,
            r.comm_exposed_mean_s,
            r.estimated_profiles,
            r.iter_mean_error_s,
            r.iteration_model,
            config.parallelism,
            config.checkpointing,
        )


class MemoPredictor:
    """Any predictor, remembering each configuration's estimate.

    A configuration's predicted iteration time does not depend on its zone or its price, so a search over
    several zones of one region predicts each configuration once. Keys are the notation and the region.
    """

    def __init__(self, inner: Predictor) -> None:
        self.inner = inner
        self.name = inner.name
        self._memo: dict[tuple[str, str, str], Estimate] = {}

    @property
    def n_predicted(self) -> int:
        """Distinct configurations predicted so far."""
        return len(self._memo)

    def prefetch(self, configs: Sequence[Config]) -> None:
        """Pass a search space to the inner predictor's prefetch (if it has one), without known configurations."""
        prefetch = getattr(self.inner, "prefetch", None)
        if prefetch is not None:
            prefetch([c for c in configs if self._key(c) not in self._memo])

    def predict(self, config: Config) -> Estimate:
        key = self._key(config)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self.inner.predict(config)
        return hit

    @staticmethod
    def _key(config: Config) -> tuple[str, str, str]:
        return (config.notation(), config.cloud, config.region)
