"""The planning problem: what may be rented, and what must hold.

Decision variables, per candidate ``i`` (an instance type on a market): ``counts[i]`` VMs, each GPU with
local batch ``batches[i]``. Constraints (paper, section "Optimizer"):

* ``Σ counts[i]·gpus[i]·batches[i] = B_global`` exactly; ``0 ≤ counts[i] ≤ quota[i]``;
* job time ``T = N·t_iter + overhead`` where ``overhead`` is one VM launch plus one checkpoint restore;
* cost ``C = Σ counts[i]·price[i]·T``, every price in the problem's placement: one zone (spot price of that
  zone) or, for configurations of on-demand VMs only, one region;
* ``min_time`` minimises ``T`` subject to the budget (and the deadline, if one is given);
  ``min_cost`` minimises ``C`` subject to the deadline (and the budget, if one is given).

``T`` and ``C`` are distributions (:mod:`srifty.plan.risk`: model error, iteration variance, VM launch, spot
losses): a constraint holds when its probability reaches ``confidence``, and the goal ranks on expected values.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from srifty.catalog import InstanceType, Market, OnMarket
from srifty.units import SECONDS_PER_HOUR
from srifty.vocab import Config

if TYPE_CHECKING:
    from srifty.spot import SpotModel

Goal = Literal["min_time", "min_cost"]


@dataclass(frozen=True)
class Placement:
    """Where one configuration runs: one zone of one region (``zone=None``: anywhere in the region, for
    on-demand VMs only, or on a cloud whose spot prices are regional).

    Attributes:
        price_covers_host_vm: ``False`` where prices cover only the GPU attachment (the bundled GCP rows).
    """

    cloud: str
    region: str
    zone: str | None = None
    price_covers_host_vm: bool = True

    @property
    def label(self) -> str:
        """``"aws us-east-1 use1-az4"`` or ``"aws us-west-2 (on-demand, any zone)"``."""
        return f"{self.cloud} {self.region} " + (self.zone or "(any zone)")

    @property
    def area(self) -> str:
        """``"aws us-east-1"``: the cloud and region (what a configuration may never span two of)."""
        return f"{self.cloud} {self.region}"


@dataclass(frozen=True)
class Candidate(OnMarket):
    """One rentable option: an instance type on a market, with a quota and the batches it may take.

    Attributes:
        price_usd_per_hour: one VM's price in the problem's placement.
        batches: allowed local batches per GPU after pruning, ascending.
        pruned_note: why the batch range is what it is (knee, memory, global batch).
    """

    instance: InstanceType
    market: Market
    quota: int
    price_usd_per_hour: float
    batches: tuple[int, ...]
    knee_batch: int
    max_batch: int
    pruned_note: str = ""


@dataclass(frozen=True)
class PlanProblem:
    """Everything the search needs besides the performance model.

    Attributes:
        placement: where its configurations run (``None``: not placed; spot priced in the cheapest common zone).
        requires_spot: only configurations with a spot group belong here (configurations of on-demand VMs
            only are planned once per region, in the region's own problem, not once per zone).
        confidence: the probability with which the deadline and the budget must each hold.
        spot: the spot model spot VMs are judged by (``None``: spot VMs are taken never to be lost).
        vm_launch_s, checkpoint_restore_s: the spec's overheads (``overhead_s`` is their sum).
        on_demand_quotas: on-demand VMs the spec offers per type anywhere in the region, ``(type, quota)``: what
            an on-demand fallback may use (it needs no zone).
    """

    candidates: tuple[Candidate, ...]
    global_batch: int
    iterations: int
    goal: Goal
    deadline_s: float | None
    budget_usd: float | None
    overhead_s: float
    placement: Placement | None = None
    requires_spot: bool = False
    confidence: float = 0.9
    spot: SpotModel | None = None
    vm_launch_s: float = 150.0
    checkpoint_restore_s: float = 5.0
    on_demand_quotas: tuple[tuple[str, int], ...] = ()

    @functools.cached_property
    def fallback_quotas(self) -> dict[str, int]:
        """On-demand VMs per type that an on-demand fallback may use: the spec's offers anywhere in the region
        and this placement's own on-demand candidates (computed once; read-only by convention)."""
        quotas = dict(self.on_demand_quotas)
        for c in self.candidates:
            if c.market == "on_demand":
                quotas[c.instance.name] = max(quotas.get(c.instance.name, 0), c.quota)
        return quotas

    def place(self, config: Config) -> Config:
        """``config`` placed in this problem's zone (configurations built from its candidates run there)."""
        return config.placed(self.placement.zone if self.placement is not None else None)

    def job_time_s(self, iter_mean_s: float) -> float:
        """Predicted wall-clock job time, overheads included."""
        return self.iterations * iter_mean_s + self.overhead_s

    @staticmethod
    def cost_usd(price_usd_per_hour: float, time_s: float) -> float:
        """Cost of a configuration priced per hour running for ``time_s``."""
        return price_usd_per_hour * time_s / SECONDS_PER_HOUR
