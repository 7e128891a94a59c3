"""What srifty can learn about the emulated cloud: raw compute measurements and allreduce probe rows (EMULATED).

Both are *measurements of the emulated truth*, made as srifty would make them on real VMs; the cloud fits
nothing and hands out none of srifty's types, so the pipeline has to learn everything it knows:

* :class:`ProfilingSession` is one GPU of one freshly allocated VM: it says whether a batch fits (a real
  profiler would try and catch the out-of-memory error), times any batch the caller chooses for a number of
  iterations (every phase of every iteration, as CUDA events would, with the straggler process running), says
  the peak memory of a batch that ran, and records one backward pass's per-parameter gradient-ready times.
  srifty's side (:mod:`srifty.evaluate.profiling`) chooses the batches and fits its own models.
* :func:`probe_rows` is the paper's grid probe: allreduces of every size, node count and concurrency,
  repeated, in the probe-row schema of :mod:`srifty.vocab.probes`, so ``BandwidthModel().fit`` and
  ``AlphaBetaModel().fit`` read them as they read real probes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from srifty.catalog import InstanceType
from srifty.cloud.compute import ComputeTruth
from srifty.cloud.errors import OutOfMemoryError
from srifty.cloud.gradients import GradientTruth
from srifty.cloud.network import LinkSetup, allreduce_phases_s
from srifty.cloud.params import CloudParams
from srifty.cloud.stragglers import StragglerFit, straggler_factors
from srifty.vocab import algbw_bytes_per_s, busbw_bytes_per_s

#: Probe rows carry this epoch as their clock (the emulated cloud never reads the wall clock).
EMULATED_EPOCH_S = 1.8e9
#: Relative jitter of one parameter's recorded ready time (event timing on a busy stream).
READY_RECORD_SIGMA = 0.01


@dataclass(frozen=True)
class TimedBatch:
    """Every timed iteration of one batch on one GPU (ms per phase; ``iter`` is their sum) and the peak
    memory allocated while it ran (bytes)."""

    batch: int
    fw_ms: tuple[float, ...]
    bwd_ms: tuple[float, ...]
    step_ms: tuple[float, ...]
    iter_ms: tuple[float, ...]
    peak_bytes: float


@dataclass(frozen=True)
class GradientRecord:
    """One backward pass at ``batch``: each parameter's name, gradient bytes and ready time (ms from the start
    of backward), in the order the gradients became ready, and the backward's length."""

    batch: int
    backward_ms: float
    names: tuple[str, ...]
    bytes: tuple[int, ...]
    ready_ms: tuple[float, ...]


class ProfilingSession:
    """One GPU of one VM of ``instance`` in the emulated cloud, rented to profile a model on.

    Args:
        truth: the model's compute truth on this GPU type.
        gradients: the model's gradient truth.
        spatial_factor: this VM's speed factor (its allocation's draw).
        stragglers: the straggler process every GPU runs.
        rng: every draw of the session.
        instance: the VM type.
        label: names the cloud in what it records.
    """

    def __init__(
        self,
        truth: ComputeTruth,
        gradients: GradientTruth,
        spatial_factor: float,
        stragglers: StragglerFit,
        rng: np.random.Generator,
        instance: InstanceType,
        label: str,
    ) -> None:
        self._truth = truth
        self._gradients = gradients
        self._spatial = spatial_factor
        self._stragglers = stragglers
        self._rng = rng
        self.instance = instance
        self.label = label

    @property
    def gpu(self) -> str:
        """The catalog GPU name."""
        return self._truth.gpu

    @property
    def model(self) -> str:
        """The model being profiled."""
        return self._truth.model

    @property
    def memory_bytes(self) -> int:
        """The GPU's memory (what ``nvidia-smi`` says)."""
        return self._truth.memory_capacity_bytes

    def fits(self, batch: int) -> bool:
        """Whether one training iteration at ``batch`` runs without running out of memory."""
        return self._truth.fits(int(batch))

    def time(self, batch: int, iters: int) -> TimedBatch:
        """Time ``iters`` consecutive training iterations at ``batch`` (after warm-up).

        Raises:
            OutOfMemoryError: the batch does not fit.
        """
        if not self.fits(batch):
            raise OutOfMemoryError(f"a batch of {batch} does not fit one {self.gpu} training {self.model}.")
        fw, bwd, step = self._truth.phases_ms(int(batch))
        x = self._spatial * straggler_factors(self._stragglers, self._rng, 1, iters)[:, 0]
        f, b, s = fw * x, bwd * x, step * x
        return TimedBatch(
            batch=int(batch),
            fw_ms=tuple(float(v) for v in f),
            bwd_ms=tuple(float(v) for v in b),
            step_ms=tuple(float(v) for v in s),
            iter_ms=tuple(float(v) for v in f + b + s),
            peak_bytes=self._truth.peak_bytes(int(batch)),
        )

    def gradient_timeline(self, batch: int) -> GradientRecord:
        """Record one backward pass at ``batch`` with a hook on every parameter's gradient.

        Raises:
            OutOfMemoryError: the batch does not fit.
        """
        if not self.fits(batch):
            raise OutOfMemoryError(f"a batch of {batch} does not fit one {self.gpu} training {self.model}.")
        _, bwd, _ = self._truth.phases_ms(int(batch))
        backward_ms = bwd * self._spatial * float(straggler_factors(self._stragglers, self._rng, 1, 1)[0, 0])
        fracs = self._gradients.fractions(int(batch))
        noisy = fracs * self._rng.lognormal(0.0, READY_RECORD_SIGMA, size=fracs.size)
        ready = np.minimum(np.maximum.accumulate(noisy), 1.0) * backward_ms
        return GradientRecord(
            batch=int(batch),
            backward_ms=float(backward_ms),
            names=self._gradients.names,
            bytes=self._gradients.bytes,
            ready_ms=tuple(float(v) for v in ready),
        )


def probe_rows(
    instance: InstanceType,
    setups: Sequence[tuple[int, LinkSetup | None]],
    sizes_bytes: Sequence[int],
    concurrency: Sequence[int],
    repeats: int,
    allocation_id: str,
    zone: str,
    rng: np.random.Generator,
    params: CloudParams,
    label: str,
    clock_s: float,
) -> list[dict[str, Any]]:
    """Probe rows of one allocation: for each ``(n_nodes, setup)``, size, concurrency and repeat, ``k``
    concurrent allreduces started together; the row's time is when all ``k`` have finished (work-conserving
    sharing: latency plus ``k`` data parts), as ``srifty probe`` times a round."""
    sizes = np.asarray(sizes_bytes, dtype=float)
    gpus = instance.gpus_per_vm
    rows: list[dict[str, Any]] = []
    for n_nodes, setup in setups:
        world = n_nodes * gpus
        if setup is None or world < 2:
            continue
        latency_s, data_s = allreduce_phases_s(sizes, setup)
        for k in concurrency:
            for repeat in range(repeats):
                noise = rng.lognormal(0.0, params.network_temporal_sigma, size=len(sizes))
                jitter = rng.lognormal(0.0, params.probe_jitter_sigma, size=len(sizes))
                times = (latency_s + k * data_s * noise) * jitter
                for size, time_s in zip(sizes_bytes, times, strict=True):
                    clock_s += float(time_s) + 1e-3
                    rows.append(
                        _row(
                            instance,
                            size,
                            world,
                            n_nodes,
                            k,
                            repeat,
                            float(time_s),
                            allocation_id,
                            zone,
                            label,
                            clock_s,
                        )
                    )
    return rows


def _row(
    instance: InstanceType,
    size: int,
    world: int,
    n_nodes: int,
    k: int,
    repeat: int,
    time_s: float,
    allocation_id: str,
    zone: str,
    label: str,
    clock_s: float,
) -> dict[str, Any]:
    return {
        "busbw_bytes_per_s": float(busbw_bytes_per_s(size, world, time_s)),
        "algbw_bytes_per_s": float(algbw_bytes_per_s(size, time_s)),
        "time_s": time_s,
        "measured_time_s": time_s,
        "size_bytes": int(size),
        "world_size": world,
        "n_nodes": n_nodes,
        "gpus_per_node": instance.gpus_per_vm,
        "n_concurrent": k,
        "repeat": repeat,
        "inner_iters": 1,
        "backend": "emulated-nccl",
        "device": "emulated",
        "dtype": "float32",
        "cloud": instance.cloud,
        "region": instance.region,
        "zone": zone,
        "instance_type": instance.name,
        "gpu": instance.gpu_name,
        "cpu": "emulated",
        "rated_network_gbps": float("nan") if instance.rated_network_gbps is None else instance.rated_network_gbps,
        "allocation_id": allocation_id,
        "run_id": allocation_id,
        "host": "emulated-vm-0",
        "timestamp_s": clock_s,
        "emulated": True,
        "emulation_scale": 1.0,
        "shaped_gbps": float("nan"),
        "slowest_link_gbps": float("nan"),
        "intra_node_shaped_gbps": float("nan"),
        "rate_variation": 0.0,
        "testbed_name": label,
    }
