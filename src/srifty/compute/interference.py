"""Compute/communication interference on one device: how much backward and gradient communication slow
each other when they run at the same time, measured, and the overlap factors the simulator draws from it.

The paper's iteration model, ``t_fw + max(t_bwd, t_pe) + t_step``, assumes perfect overlap: the allreduce
of a DDP bucket costs backward nothing and backward costs the allreduce nothing. Where both compete for one
resource that is not true. On a CPU, gloo's threads copy, sum and push bytes through the kernel's TCP stack
on the same cores as the backward pass, or under the same CPU quota (the testbed emulates a smaller VM with
a cgroup quota, and a throttled group runs neither); on a GPU, NCCL's kernels take SMs and memory bandwidth
from it. The profiler (:mod:`srifty.compute.measure.interference`) measures it on the device itself with
the model's own DDP buckets: backward alone, one round of the buckets' allreduce alone, backward while the
allreduce runs all along, the allreduce while compute runs all along, and (as a check) backward with each
bucket launched as its gradients become ready, as DDP does; each with the process's CPU time beside its
wall time.

**The overlap factors** (:class:`OverlapFactors`, Galvatron's "overlap slowdown" measured instead of
assumed): while both run, backward progresses ``f_b`` times slower than alone and communication ``f_c``
times slower than alone, the medians over repetitions; while only one runs, it runs at its own speed.
Nothing is fitted to iteration times. The factors are measured with communication as fast as loopback
allows; applied to a slower link they assume the two slow each other as much there (true when a CPU quota
gates both, as the testbed's does; an upper bound where communication needs less of the device on a slow
link). Scaling both by the exchange's rate over its rate in the measurement (the CPU a byte costs held
fixed) was tried and predicted the testbed's multi-host runs worse (14.9 % MAPE against 11.5 % for the
factors as measured, from the same profiles; BENCHMARKS.md, "Multi-host iteration-time prediction"), so
they apply as measured. Measured directly on the testbed's slow links (``benchmarks.multihost_resnet --part
overlap``): where the wire sets the allreduce's pace, compute in the same CPU quota still slows it ×1.9-2.2 and
is slowed ×1.3-1.7, the range of the loopback factors.

Pure: no torch. Times in ms in the records (as profile samples are).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from srifty.errors import ProfileError

#: The words a GPU measurement's method carries (see :mod:`srifty.compute.measure.interference`).
HOST_STAGED_MARK = "pinned host memory"
#: Slowdowns below this are measurement noise: taken as no slowdown.
MIN_SLOWDOWN = 1.0


@dataclass(frozen=True)
class InterferenceRepetition:
    """One repetition of the interference measurement (medians of its timed passes).

    Attributes:
        bwd_alone_ms: backward alone.
        bwd_alone_cores: the process's CPU time per wall second during it (cores).
        comm_alone_ms: one round of allreduces of every DDP bucket, one after the other, nothing else running.
        comm_alone_cores: CPU time per wall second during it (this process's share of the exchange).
        bwd_with_comm_ms: backward while the allreduce runs throughout.
        comm_with_compute_ms: one round while compute (forward and backward passes) runs throughout.
        both_cores: CPU time per wall second while backward ran with the allreduce.
        ddp_bwd_ms: backward with each bucket allreduced as soon as its gradients are ready (DDP's order).
        ddp_end_ms: from the start of that backward to the end of its last allreduce.
    """

    bwd_alone_ms: float
    bwd_alone_cores: float
    comm_alone_ms: float
    comm_alone_cores: float
    bwd_with_comm_ms: float
    comm_with_compute_ms: float
    both_cores: float
    ddp_bwd_ms: float
    ddp_end_ms: float

    @property
    def bwd_slowdown(self) -> float:
        """Backward with communication over backward alone."""
        return max(self.bwd_with_comm_ms / self.bwd_alone_ms, MIN_SLOWDOWN)

    @property
    def comm_slowdown(self) -> float:
        """Communication with compute over communication alone."""
        return max(self.comm_with_compute_ms / self.comm_alone_ms, MIN_SLOWDOWN)


@dataclass(frozen=True)
class Spread:
    """The median of a quantity over repetitions, with its smallest and largest value."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """Median, minimum and maximum of ``values``."""
        return cls(float(statistics.median(values)), float(min(values)), float(max(values)))


@dataclass(frozen=True)
class OverlapFactors:
    """How much backward and communication slow each other while both run (see the module docstring).

    Attributes:
        bwd_slowdown: backward's time while communication runs throughout, over its time alone (≥ 1).
        comm_slowdown: communication's time while compute runs throughout, over its time alone (≥ 1).
    """

    bwd_slowdown: float
    comm_slowdown: float

    def __post_init__(self) -> None:
        if not (self.bwd_slowdown >= 1.0 and self.comm_slowdown >= 1.0):
            raise ProfileError(f"overlap slowdowns are at least 1, got {self.bwd_slowdown}, {self.comm_slowdown}")

    def rates(self, communicating: bool, computing: bool) -> tuple[float, float]:
        """``(backward speed, communication speed)``, each a fraction (0-1] of its speed alone."""
        if communicating and computing:
            return 1.0 / self.bwd_slowdown, 1.0 / self.comm_slowdown
        return 1.0, 1.0


@dataclass(frozen=True)
class InterferenceMeasurement:
    """What the profiler measured about interference on its device, at one batch.

    Attributes:
        method: how, in words (the peer, the collective, the backend).
        batch: the batch size backward ran at.
        bucket_bytes: the DDP buckets allreduced, in launch order (bytes).
        bus_bytes_per_round: bus bytes one round of them moves per rank (2 ranks: their total size).
        peer: where the peer rank ran (outside this process's CPU quota, or sharing it, and why).
        cpu_quota_cores: the CPU quota the profiled process ran under (cores), ``None`` without one.
        threads: the profiled process's intra-op threads.
        repetitions: each repetition's medians.
    """

    method: str
    batch: int
    bucket_bytes: tuple[int, ...]
    bus_bytes_per_round: float
    peer: str
    cpu_quota_cores: float | None
    threads: int
    repetitions: tuple[InterferenceRepetition, ...]

    def __post_init__(self) -> None:
        if not self.repetitions:
            raise ProfileError("an interference measurement needs at least one repetition")
        if self.bus_bytes_per_round <= 0:
            raise ProfileError("an interference measurement needs buckets with bytes to exchange")
        for rep in self.repetitions:
            times = (rep.bwd_alone_ms, rep.comm_alone_ms, rep.bwd_with_comm_ms, rep.comm_with_compute_ms)
            if min(times) <= 0:
                raise ProfileError(f"interference times must be positive, got {times}")

    @property
    def bwd_slowdown(self) -> Spread:
        """How much the allreduce slows backward (backward with it over alone), over repetitions."""
        return Spread.of([r.bwd_slowdown for r in self.repetitions])

    @property
    def comm_slowdown(self) -> Spread:
        """How much compute slows the allreduce (with over alone), over repetitions."""
        return Spread.of([r.comm_slowdown for r in self.repetitions])

    def factors(self) -> OverlapFactors:
        """The :class:`OverlapFactors` the simulator uses: the slowdowns' medians over repetitions."""
        return OverlapFactors(self.bwd_slowdown.median, self.comm_slowdown.median)

    def summary(self) -> str:
        """One line: the two slowdowns with their spread, and where the peer ran."""
        b, c = self.bwd_slowdown, self.comm_slowdown
        quota = "no CPU quota" if self.cpu_quota_cores is None else f"CPU quota {self.cpu_quota_cores:g} cores"
        staged = "; gloo's exchange staged through host memory, not NCCL's" if self.host_staged else ""
        return (
            f"backward x{b.median:.2f} [{b.low:.2f}-{b.high:.2f}] under communication, communication "
            f"x{c.median:.2f} [{c.low:.2f}-{c.high:.2f}] under compute ({len(self.repetitions)} repetitions, "
            f"batch {self.batch}, {quota}{staged})"
        )

    @property
    def host_staged(self) -> bool:
        """Whether a GPU's buckets went through gloo's host-staged exchange (not NCCL's kernels), per the method."""
        return HOST_STAGED_MARK in self.method

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = asdict(self)
        out["bucket_bytes"] = list(self.bucket_bytes)
        out["repetitions"] = [asdict(r) for r in self.repetitions]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InterferenceMeasurement:
        """Inverse of :meth:`to_dict`.

        Raises:
            ProfileError: a field is missing or malformed.
        """
        try:
            return cls(
                method=str(data["method"]),
                batch=int(data["batch"]),
                bucket_bytes=tuple(int(b) for b in data["bucket_bytes"]),
                bus_bytes_per_round=float(data["bus_bytes_per_round"]),
                peer=str(data["peer"]),
                cpu_quota_cores=None if data.get("cpu_quota_cores") is None else float(data["cpu_quota_cores"]),
                threads=int(data["threads"]),
                repetitions=tuple(
                    InterferenceRepetition(**{k: float(v) for k, v in r.items()}) for r in data["repetitions"]
                ),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ProfileError(f"malformed interference record: {type(err).__name__} {err}; regenerate it") from None
