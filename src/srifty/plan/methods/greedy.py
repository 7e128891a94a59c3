"""The greedy baselines of the paper's evaluation, as configuration builders.

* **CGF** (full batch, cheapest GPU first): every chosen GPU takes its largest batch; GPU types are taken
  in order of price per GPU-hour, each up to its quota, until the global batch is placed.
* **FGF** (magic batch 64, fastest GPU first): every GPU takes a batch of 64; types are taken fastest
  first (highest samples/s per GPU at batch 64). If the quotas run out before the global batch is placed,
  FGF packs every GPU with the largest feasible batch instead.

Neither looks at the deadline or budget, as in the paper; the batch equation is met exactly (the last
group may take a smaller power-of-two batch to land on it), or the heuristic returns nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from srifty.plan.problem import Candidate, PlanProblem
from srifty.vocab import Config, ConfigGroup

FGF_BATCH = 64
LatencyFn = Callable[[Candidate, int], float]


def _fill(order: Sequence[Candidate], global_batch: int, batch_of: Callable[[Candidate], int]) -> Config | None:
    """Greedy: each type in order takes as many VMs (≤ quota) at its batch as fit in what remains; then the
    remainder goes to leftover VMs at the largest power-of-two batch that divides into it."""
    remaining = global_batch
    groups: dict[str, ConfigGroup] = {}
    used: dict[str, int] = {}
    for cand in order:
        batch = min(batch_of(cand), remaining // cand.gpus) if remaining >= cand.gpus else 0
        if batch < 1:
            continue
        count = min(cand.quota, remaining // (cand.gpus * batch))
        if count:
            groups[cand.key] = ConfigGroup(cand.instance, count, batch, cand.market)
            used[cand.key] = count
            remaining -= count * cand.gpus * batch
    # Land exactly on the global batch with smaller batches on VMs still free.
    for cand in order:
        if remaining == 0:
            break
        free = cand.quota - used.get(cand.key, 0)
        batch = 1 << (max(remaining // cand.gpus, 1).bit_length() - 1)
        while free > 0 and remaining > 0 and batch >= 1:
            if cand.gpus * batch <= remaining and cand.key not in groups:
                count = min(free, remaining // (cand.gpus * batch))
                groups[cand.key] = ConfigGroup(cand.instance, count, batch, cand.market)
                used[cand.key] = used.get(cand.key, 0) + count
                free -= count
                remaining -= count * cand.gpus * batch
            batch //= 2
    if remaining != 0 or not groups:
        return None
    return Config(tuple(groups.values()))


def cgf(problem: PlanProblem) -> Config | None:
    """Cheapest GPU first, each GPU at its largest batch."""
    order = sorted(problem.candidates, key=lambda c: (c.price_usd_per_hour / c.gpus, c.key))
    return _fill(order, problem.global_batch, lambda c: _largest_power_of_two(c.max_batch))


def fgf(problem: PlanProblem, latency_ms: LatencyFn) -> Config | None:
    """Fastest GPU first at batch 64; pack at the largest feasible batch when GPUs run short.

    Args:
        latency_ms: compute latency (ms) of one GPU of a candidate at a batch; speed is batch / latency.
    """

    def samples_per_s(cand: Candidate, batch: int) -> float:
        return batch / max(latency_ms(cand, batch), 1e-12)

    order = sorted(problem.candidates, key=lambda c: (-samples_per_s(c, FGF_BATCH), c.key))
    capacity_at_64 = sum(c.quota * c.gpus * min(FGF_BATCH, c.max_batch) for c in order)
    if capacity_at_64 >= problem.global_batch:
        return _fill(order, problem.global_batch, lambda c: min(FGF_BATCH, _largest_power_of_two(c.max_batch)))
    return _fill(order, problem.global_batch, lambda c: _largest_power_of_two(c.max_batch))


def _largest_power_of_two(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)
