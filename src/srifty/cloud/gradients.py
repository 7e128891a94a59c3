"""When each gradient is really ready, and the DDP buckets the emulated cloud's runs exchange (EMULATED).

* **Measured models**: the H200's per-parameter ready times at batch 32 and 128, as fractions of backward,
  interpolated in ``log2(batch)`` between them (held beyond): how backward's shape changes with the batch.
* **Other models**: the ready fractions srifty's profiler recorded on the CPU (``workloads.json``).
* **Per model, per seed**: the fractions are bent, ``f → f^γ`` with ``γ`` log-normal
  (``CloudParams.ready_model_sigma``): the backward's shape on a cloud GPU is not the reference machine's.
* **Per run**: each bucket's ready fraction is jittered (``ready_run_sigma``) and kept in order.

Buckets follow DDP's rule after its first iteration, written here for the cloud (it does not import
srifty's): parameters in ready order fill a bucket until it reaches its cap (1 MiB for the first, 25 MiB
after); a bucket can be reduced once its last parameter is ready.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from srifty.cloud.params import CloudParams, named_rng
from srifty.cloud.reference_data import GradReady

FloatArray = NDArray[np.float64]
FIRST_BUCKET_BYTES = 1 << 20
BUCKET_BYTES = 25 << 20


@dataclass(frozen=True)
class GradientTruth:
    """One model's gradients: names and bytes in ready order, and ready fractions at anchor batches.

    Attributes:
        names, bytes: parameters in the order their gradients become ready.
        anchor_batches: batches with measured fractions (one for a CPU-recorded timeline).
        anchor_fracs: per anchor, each parameter's ready time as a fraction of backward.
        gamma: this seed's bend of the fractions.
    """

    names: tuple[str, ...]
    bytes: tuple[int, ...]
    anchor_batches: tuple[int, ...]
    anchor_fracs: tuple[FloatArray, ...]
    gamma: float
    _buckets: dict[int, tuple[FloatArray, FloatArray]] = field(default_factory=dict, compare=False, repr=False)

    def fractions(self, batch: int) -> FloatArray:
        """Each parameter's true ready fraction of backward at ``batch`` (non-decreasing in ready order)."""
        if len(self.anchor_batches) == 1:
            base = self.anchor_fracs[0]
        else:
            x = np.log2(max(batch, 1))
            lo, hi = np.log2(self.anchor_batches[0]), np.log2(self.anchor_batches[-1])
            w = float(np.clip((x - lo) / (hi - lo), 0.0, 1.0))
            base = (1.0 - w) * self.anchor_fracs[0] + w * self.anchor_fracs[-1]
        return np.maximum.accumulate(np.clip(base, 0.0, 1.0) ** self.gamma)

    def buckets(self, batch: int) -> tuple[FloatArray, FloatArray]:
        """``(bytes, ready fraction)`` of each DDP bucket at ``batch``, in reduction order (cached)."""
        hit = self._buckets.get(batch)
        if hit is None:
            hit = ddp_buckets(self.bytes, self.fractions(batch))
            self._buckets[batch] = hit
        return hit


def ddp_buckets(sizes: Sequence[int], fracs: FloatArray) -> tuple[FloatArray, FloatArray]:
    """DDP's buckets over parameters in ready order: ``(bytes, ready fraction)`` of each."""
    out_bytes: list[float] = []
    out_ready: list[float] = []
    limit, filled, last = FIRST_BUCKET_BYTES, 0, 0.0
    for size, frac in zip(sizes, fracs, strict=True):
        filled += int(size)
        last = float(frac)
        if filled >= limit:
            out_bytes.append(float(filled))
            out_ready.append(last)
            limit, filled = BUCKET_BYTES, 0
    if filled:
        out_bytes.append(float(filled))
        out_ready.append(last)
    return np.asarray(out_bytes), np.maximum.accumulate(np.asarray(out_ready))


def jitter_ready(fracs: FloatArray, multipliers: FloatArray) -> FloatArray:
    """One run's bucket ready fractions: each multiplied by its run's draw, clipped to 1, kept in order."""
    if fracs.size == 0:
        return fracs
    return np.maximum.accumulate(np.minimum(fracs * multipliers[: fracs.size], 1.0))


def gradient_truth(
    workload: Mapping[str, Any], measured: Sequence[GradReady], seed: int, params: CloudParams
) -> GradientTruth:
    """The gradient truth of a model: from its H200 records if any, else from its workload's CPU timeline."""
    gamma = math.exp(float(named_rng(seed, "ready-bend", str(workload["model"])).normal(0.0, params.ready_model_sigma)))
    if measured:
        first = measured[0]
        position = {n: i for i, n in enumerate(first.names)}
        fracs = []
        for rec in measured:
            values = np.zeros(len(first.names))
            for name, t in zip(rec.names, rec.ready_ms, strict=True):
                if name in position:
                    values[position[name]] = t / rec.backward_ms if rec.backward_ms > 0 else 1.0
            fracs.append(values)
        return GradientTruth(
            names=first.names,
            bytes=first.bytes,
            anchor_batches=tuple(r.batch for r in measured),
            anchor_fracs=tuple(fracs),
            gamma=gamma,
        )
    order = workload["params_ready_order"]
    return GradientTruth(
        names=tuple(p["name"] for p in order),
        bytes=tuple(int(p["bytes"]) for p in order),
        anchor_batches=(1,),
        anchor_fracs=(np.array([float(p["ready_frac"]) for p in order]),),
        gamma=gamma,
    )
