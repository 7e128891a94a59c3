"""Pruning and enumerating the configuration space (the paper's three insights).

1. Local batches are powers of two.
2. A type's local batch is at least its knee batch (below it the GPU is latency-bound and wasted),
   unless no batch at or above the knee fits, in which case the knee floor is dropped for that type.
3. It is at most the largest batch its GPU memory holds (memory model), and at most the global batch.
4. All VMs of one type share one batch, so the search is over types, not VMs.

What remains is every assignment ``{type: (count, batch)}`` with ``Σ count·gpus·batch = B_global`` (in a
zone's problem that requires a spot group, only those with one); :func:`count_configs` counts it by dynamic
programming before anything is simulated.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from srifty.plan.problem import Candidate, PlanProblem
from srifty.vocab import Config, ConfigGroup

#: Which local batches a type may take: ``knee``, powers of two from its knee up (the paper's pruning);
#: ``all``, every power of two that fits (the true space, and the no-pruning ablation).
BatchPolicy = Literal["knee", "all"]


def powers_of_two(lo: int, hi: int) -> tuple[int, ...]:
    """Powers of two ``b`` with ``lo ≤ b ≤ hi``."""
    out = []
    b = 1
    while b <= hi:
        if b >= lo:
            out.append(b)
        b *= 2
    return tuple(out)


def allowed_batches(
    knee_batch: int, max_batch: int, global_batch: int, gpus: int, policy: BatchPolicy = "knee"
) -> tuple[tuple[int, ...], str]:
    """Allowed local batches for one type under ``policy`` and a note saying which bounds applied."""
    upper = min(max_batch, global_batch // max(gpus, 1))
    if upper < 1:
        return (), f"not even a batch of 1 per GPU fits ({gpus} GPUs per VM, max batch {max_batch})"
    if policy == "all":
        return powers_of_two(1, upper), f"every power of two that fits: 1..{upper} (no knee floor)"
    pruned = powers_of_two(max(knee_batch, 1), upper)
    if pruned:
        return pruned, f"powers of two from knee {knee_batch} to {upper}"
    return powers_of_two(1, upper), f"below the knee ({knee_batch}): nothing larger fits, so 1..{upper}"


def _options(cand: Candidate) -> list[tuple[int, int]]:
    """(count, batch) choices of one candidate, count 0 included once."""
    return [(0, 0)] + [(c, b) for b in cand.batches for c in range(1, cand.quota + 1)]


def count_configs(problem: PlanProblem) -> int:
    """Number of assignments satisfying the batch equation (the simulator calls exhaustive search needs).

    Dynamic programming over "samples still to place", in units of the largest number dividing every
    VM's share, vectorised with numpy: each (type, batch) adds a windowed sum over up to ``quota`` VMs,
    computed with cumulative sums per residue class, so the time is linear in the global batch whatever
    the quotas. Counts above 2**53 are approximate (they only ever decide "too many to simulate").
    """
    ways = _ways(problem.candidates, problem.global_batch)
    if problem.requires_spot:
        ways -= _ways([c for c in problem.candidates if c.market != "spot"], problem.global_batch)
    return int(ways)


def _ways(cands: Sequence[Candidate], global_batch: int) -> float:
    """Assignments of ``cands`` placing exactly ``global_batch`` samples (at least one VM)."""
    return _ways_of_shapes(tuple((c.gpus, c.quota, c.batches) for c in cands), global_batch)


@functools.lru_cache(maxsize=4096)
def _ways_of_shapes(shapes: tuple[tuple[int, int, tuple[int, ...]], ...], global_batch: int) -> float:
    """:func:`_ways` of candidates given as ``(GPUs per VM, quota, batches)``: the count depends on nothing
    else, so the zones of one region (the same types, the same quotas) and a search run twice over the same
    problems count each space once (it is a pure function of its arguments)."""
    shares = [gpus * b for gpus, _, batches in shapes for b in batches]
    capacity = sum(quota * gpus * max(batches, default=0) for gpus, quota, batches in shapes)
    if not shares or capacity < global_batch:
        return 0.0
    unit = math.gcd(*shares)
    if global_batch % unit:
        return 0.0
    total = global_batch // unit
    ways = np.zeros(total + 1)
    ways[0] = 1.0
    for gpus, quota, batches in shapes:
        nxt = ways.copy()
        for b in batches:
            nxt += _shifted_window_sum(ways, gpus * b // unit, min(quota, total))
        ways = nxt
    return float(ways[total]) if total > 0 else 0.0


def _shifted_window_sum(ways: np.ndarray, step: int, count: int) -> np.ndarray:
    """``out[s] = Σ_{c=1..count} ways[s − c·step]`` (terms with a negative index are 0)."""
    n = len(ways)
    rows = -(-n // step)
    flat = np.zeros(rows * step)
    flat[:n] = ways
    csum = np.cumsum(flat.reshape(rows, step), axis=0)  # column r holds ways[r], ways[r + step], …; csum[k] = Σ[:k+1]
    out = np.zeros((rows, step))
    out[1:] = csum[:-1]  # Σ grid[:k]  (c ≥ 1 excludes row k itself)
    if count + 1 < rows:
        out[count + 1 :] -= csum[: rows - count - 1]  # minus Σ grid[:k − count]
    return out.reshape(-1)[:n]


def _reachable(problem: PlanProblem) -> list[NDArray[np.bool_]]:
    """``reach[i][r]``: candidates ``i..`` can place exactly ``r`` samples (``reach[n]`` only ``0``)."""
    total = problem.global_batch
    cands = problem.candidates
    reach = [np.zeros(total + 1, dtype=bool) for _ in range(len(cands) + 1)]
    reach[len(cands)][0] = True
    for i in range(len(cands) - 1, -1, -1):
        row = reach[i + 1].copy()
        cand = cands[i]
        for b in cand.batches:
            per_vm = cand.gpus * b
            for c in range(1, min(cand.quota, total // per_vm) + 1):
                shift = c * per_vm
                row[shift:] |= reach[i + 1][: total + 1 - shift]
        reach[i] = row
    return reach


def enumerate_configs(problem: PlanProblem) -> Iterator[Config]:
    """Every assignment satisfying the batch equation, in a deterministic order (a branch that cannot place
    the rest of the global batch is not walked), placed in the problem's zone."""
    cands = problem.candidates
    zone = problem.placement.zone if problem.placement is not None else None
    reach = _reachable(problem)

    def walk(i: int, remaining: int, chosen: list[ConfigGroup]) -> Iterator[Config]:
        if remaining == 0:
            if chosen and (not problem.requires_spot or any(g.market == "spot" for g in chosen)):
                yield Config(tuple(chosen), zone)
            return
        if i == len(cands) or not reach[i][remaining]:
            return
        yield from walk(i + 1, remaining, chosen)
        cand = cands[i]
        nxt = reach[i + 1]
        for b in cand.batches:
            per_vm = cand.gpus * b
            for c in range(1, min(cand.quota, remaining // per_vm) + 1):
                rest = remaining - c * per_vm
                if nxt[rest]:
                    yield from walk(i + 1, rest, [*chosen, ConfigGroup(cand.instance, c, b, cand.market)])

    yield from walk(0, problem.global_batch, [])


def config_of(
    cands: Sequence[Candidate], counts: Sequence[int], batches: Sequence[int], zone: str | None = None
) -> Config:
    """A config from per-candidate counts and batches (zero counts dropped), its spot VMs in ``zone``."""
    return Config(
        tuple(ConfigGroup(c.instance, n, b, c.market) for c, n, b in zip(cands, counts, batches, strict=True) if n > 0),
        zone,
    )
