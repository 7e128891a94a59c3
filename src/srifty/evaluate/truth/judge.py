"""Judging configurations on the emulated cloud's ground truth (EMULATED).

A configuration's *true* outcome is its expected iteration time over a fixed set of placement draws
(``n_allocations`` allocations of ``iters`` iterations each, the same draws for every configuration: common
random numbers), and the job time, cost and broken constraints that implies (:mod:`.scoring`). The judge
also answers, for its own searches (:mod:`.search`), a configuration's *steady* iteration (every random part
at its typical value: deterministic, about a hundred times cheaper) and a floor on the allreduce time of any
configuration holding given VMs.

Everything comes from the cloud and the spec; nothing from srifty's predictors or planner (an import contract
in ``pyproject.toml`` says so).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from srifty.cloud import EmulatedCloud
from srifty.evaluate.truth.offers import RentalOffer, cheapest_placement, rental_offers
from srifty.evaluate.truth.scoring import JobTerms, TrueOutcome, infeasible, outcome_of
from srifty.evaluate.truth.space import OfferCurve, Part
from srifty.spec import JobSpec
from srifty.vocab import Config, ConfigGroup


class TruthJudge:
    """True outcomes of one job's configurations, cached.

    Args:
        cloud: the emulated cloud.
        spec: the job (model, global batch, iterations, goal, constraints, restore overhead, what it may rent).
        n_allocations: placement draws each configuration is averaged over.
        iters: iterations drawn per placement.
    """

    def __init__(self, cloud: EmulatedCloud, spec: JobSpec, n_allocations: int = 4, iters: int = 25) -> None:
        self.cloud = cloud
        self.spec = spec
        self.model = spec.model.name or cloud.model or ""
        self.n_allocations = n_allocations
        self.iters = iters
        self.terms = JobTerms.of(spec, cloud.params.mean_launch_time_s)
        self.tag = spec.name or "job"
        self.offers: tuple[RentalOffer, ...] = rental_offers(spec, cloud.catalog, cloud.cloud, cloud.region)
        self._cache: dict[tuple[str, str, str, str | None], TrueOutcome] = {}
        self._iter_s: dict[str, float] = {}
        self._steady_s: dict[str, float] = {}
        self._curves: tuple[OfferCurve, ...] | None = None

    @property
    def n_judged(self) -> int:
        """Distinct configurations judged in full so far."""
        return len(self._cache)

    @property
    def curves(self) -> tuple[OfferCurve, ...]:
        """Each offer's steady per-rank time at every batch that fits (the truth's own)."""
        if self._curves is None:
            self._curves = tuple(
                OfferCurve(o, self.cloud.truth(o.instance.gpu_name, self.model).rank_curve_ms()) for o in self.offers
            )
        return self._curves

    def max_batch(self, gpu: str) -> int:
        """Largest local batch one ``gpu`` really holds."""
        return self.cloud.max_batch(gpu, self.model)

    def _unrunnable(self, config: Config) -> str | None:
        if any(g.local_batch > self.max_batch(g.instance.gpu_name) for g in config.groups):
            return "oom"
        if config.global_batch != self.terms.global_batch:
            return "batch"
        return None

    def judge(self, config: Config) -> TrueOutcome:
        """The true outcome of ``config`` in its zone (unplaced: its cheapest zone for its spot groups)."""
        key = config.key
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        reason = self._unrunnable(config)
        if reason is not None:
            outcome = infeasible(config, reason)
        else:
            notation = config.notation()  # the truth does not depend on the zone, only the price does
            if notation not in self._iter_s:
                self._iter_s[notation] = self.cloud.expected_iteration_s(
                    config, self.n_allocations, self.iters, model=self.model, tag=self.tag
                )
            outcome = outcome_of(config, self.terms, self._iter_s[notation], config.price_usd_per_hour())
        self._cache[key] = outcome
        return outcome

    def judge_all(self, configs: Iterable[Config]) -> list[TrueOutcome]:
        """True outcomes of every configuration given."""
        return [self.judge(c) for c in configs]

    def steady(self, config: Config) -> TrueOutcome:
        """``config``'s outcome at its steady iteration time (for ranking only; not cached as a judgement)."""
        reason = self._unrunnable(config)
        if reason is not None:
            return infeasible(config, reason)
        notation = config.notation()
        if notation not in self._steady_s:
            self._steady_s[notation] = self.cloud.steady_iteration_s(
                config, self.n_allocations, model=self.model, tag=self.tag
            )
        return outcome_of(config, self.terms, self._steady_s[notation], config.price_usd_per_hour())

    def config_of(self, parts: Sequence[Part]) -> Config | None:
        """The configuration of ``parts`` (``(offer index, VMs, local batch)``), placed in the cheapest zone that
        offers all of it; ``None`` when no zone does."""
        used = [(self.offers[i], n) for i, n, _ in parts]
        placed = cheapest_placement(used)
        if placed is None:
            return None
        groups = tuple(ConfigGroup(self.offers[i].instance, n, b, self.offers[i].market) for i, n, b in parts if n > 0)
        return Config(groups, placed[0])

    def allreduce_floor_s(self, counts: Sequence[int]) -> float:
        """Least total allreduce time of one iteration for any configuration holding at least these VMs of each
        offer (0 for fewer than two GPUs)."""
        parts = [(i, n, 1) for i, n in enumerate(counts) if n > 0]
        if not parts or sum(n * self.offers[i].gpus for i, n, _ in parts) < 2:
            return 0.0
        groups = tuple(ConfigGroup(self.offers[i].instance, n, 1, self.offers[i].market) for i, n, _ in parts)
        return self.cloud.allreduce_floor_s(Config(groups), self.n_allocations, model=self.model, tag=self.tag)

    @property
    def slowest_speed(self) -> float:
        """The least relative speed a VM of the cloud runs at (steady outcomes are never faster than their
        per-rank curves divided by it)."""
        return 1.0 - self.cloud.params.compute_clip

    def price_floor_usd_per_hour(self, counts: Sequence[int]) -> float:
        """The lowest the VMs ``counts`` can cost per hour anywhere."""
        return math.fsum(n * self.offers[i].lowest_price_usd_per_hour for i, n in enumerate(counts) if n > 0)
