"""Which host slows a synchronous job down: compare each host's own compute time with the others'.

In synchronous data-parallel training every rank waits for the slowest one at each allreduce, so the
iteration time alone cannot say which host is slow. Each worker may therefore report its *own* compute
time per iteration (``compute_s``: for example the wall time of its forward pass, which contains no
collective when DDP does not broadcast buffers). A host whose median compute time is at least ``factor``
times the median of the other hosts' medians is a straggler. A plan balances compute across hosts (a
slower type gets a smaller local batch), so hosts of different types compare fairly.

:class:`ComputeSamples` keeps each rank's recent reports of one launch. Pure functions of the samples; times
in seconds.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: A host this many times slower than the others' median is a straggler.
DEFAULT_FACTOR = 1.5
#: Fewest samples of a host before it is judged.
MIN_SAMPLES = 3


@dataclass(frozen=True)
class Straggler:
    """A slow host: its median compute time and the others' (seconds)."""

    host: str
    median_s: float
    others_median_s: float

    @property
    def ratio(self) -> float:
        """How many times slower than the others."""
        return self.median_s / self.others_median_s

    def describe(self) -> str:
        """``its compute takes 0.210 s per iteration, 4.2x the other hosts' 0.050 s``."""
        return (
            f"its compute takes {self.median_s:.3f} s per iteration, {self.ratio:.1f}x the other hosts' "
            f"{self.others_median_s:.3f} s"
        )


def find_stragglers(
    compute_s_by_host: Mapping[str, Sequence[float]], factor: float = DEFAULT_FACTOR, min_samples: int = MIN_SAMPLES
) -> list[Straggler]:
    """The hosts whose median compute time is at least ``factor`` times the median over the other hosts,
    slowest first. Hosts with fewer than ``min_samples`` samples are not judged (nor used as a reference);
    with fewer than two judged hosts there is nothing to compare, and no straggler."""
    if factor <= 1.0:
        raise ValueError(f"a straggler factor must be above 1, got {factor}")
    medians = {h: statistics.median(v) for h, v in compute_s_by_host.items() if len(v) >= min_samples}
    if len(medians) < 2:
        return []
    found = []
    for host, median_s in medians.items():
        others = statistics.median(m for h, m in medians.items() if h != host)
        if others > 0 and median_s >= factor * others:
            found.append(Straggler(host, median_s, others))
    if len(found) * 2 > len(medians):
        return []  # most hosts "slow": the reference is the outlier, not them
    return sorted(found, key=lambda s: -s.ratio)


#: Compute-time samples kept per rank (the most recent ones) to judge stragglers.
COMPUTE_SAMPLES = 5


class ComputeSamples:
    """Each rank's most recent compute-time reports in one launch, by the host the rank runs on.

    Args:
        host_of_rank: the address of each rank's host, by rank.
        keep: samples kept per rank (the most recent).
    """

    def __init__(self, host_of_rank: Sequence[str], keep: int = COMPUTE_SAMPLES) -> None:
        self._host_of_rank = list(host_of_rank)
        self._keep = keep
        self._by_rank: dict[int, list[tuple[int, float]]] = {}

    def add(self, rank: int, record: Mapping[str, object]) -> None:
        """Keep ``compute_s`` of a worker's report (``record``) if it is for an iteration not seen yet."""
        value, iteration = record.get("compute_s"), record.get("compute_iteration")
        if not isinstance(value, int | float) or not isinstance(iteration, int) or rank >= len(self._host_of_rank):
            return
        samples = self._by_rank.setdefault(rank, [])
        if not samples or samples[-1][0] != iteration:
            samples.append((iteration, float(value)))
            del samples[: -self._keep]

    def by_host(self) -> dict[str, list[float]]:
        """Every host's samples (seconds), its ranks' together."""
        found: dict[str, list[float]] = {}
        for rank, samples in self._by_rank.items():
            found.setdefault(self._host_of_rank[rank], []).extend(v for _, v in samples)
        return found

    def medians(self) -> dict[str, float]:
        """Each host's median compute time (seconds, to the microsecond)."""
        return {h: round(statistics.median(v), 6) for h, v in self.by_host().items() if v}

    def stragglers(self) -> list[Straggler]:
        """The hosts slow next to the others (:func:`find_stragglers`), slowest first."""
        return find_stragglers(self.by_host())
