"""The planning problem: what may be rented, and what must hold.

Decision variables, per candidate ``i`` (an instance type on a market): ``counts[i]`` VMs, each GPU with
local batch ``batches[i]``. Constraints (paper, section "Optimizer"):

* ``Σ counts[i]·gpus[i]·batches[i] = B_global`` exactly; ``0 ≤ counts[i] ≤ quota[i]``;
* job time ``T = N·t_iter + overhead`` where ``overhead`` is one VM launch plus one checkpoint restore;
* cost ``C = Σ counts[i]·price[i]·T`` (spot price of the chosen or cheapest zone, or on-demand);
* ``min_time`` minimises ``T`` subject to the budget (and the deadline, if one is given);
  ``min_cost`` minimises ``C`` subject to the deadline (and the budget, if one is given).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from srifty.catalog import InstanceType, Market
from srifty.units import SECONDS_PER_HOUR

Goal = Literal["min_time", "min_cost"]


@dataclass(frozen=True)
class Candidate:
    """One rentable option: an instance type on a market, with a quota and the batches it may take.

    Attributes:
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

    @property
    def key(self) -> str:
        """``"p3.8xlarge/spot"``."""
        return f"{self.instance.name}/{self.market}"

    @property
    def gpus(self) -> int:
        """GPUs per VM."""
        return self.instance.gpus_per_vm


@dataclass(frozen=True)
class PlanProblem:
    """Everything the search needs besides the performance model."""

    candidates: tuple[Candidate, ...]
    global_batch: int
    iterations: int
    goal: Goal
    deadline_s: float | None
    budget_usd: float | None
    overhead_s: float

    def job_time_s(self, iter_mean_s: float) -> float:
        """Predicted wall-clock job time, overheads included."""
        return self.iterations * iter_mean_s + self.overhead_s

    @staticmethod
    def cost_usd(price_usd_per_hour: float, time_s: float) -> float:
        """Cost of a configuration priced per hour running for ``time_s``."""
        return price_usd_per_hour * time_s / SECONDS_PER_HOUR
