"""True per-iteration times of a configuration in one allocation (EMULATED).

One synchronous data-parallel iteration, with time 0 at its start on every VM:

* VM ``v`` of group ``g`` runs forward, backward and step in ``x_v·μ_fw``, ``x_v·μ_bw``, ``x_v·μ_step``
  where ``μ`` is the truth's mean at the group's local batch and ``x_v`` = spatial factor (fixed for the
  allocation) × temporal factor (drawn per iteration): a slow VM stays slow, unlike srifty's simulator,
  which draws every rank afresh each iteration;
* DDP bucket ``k`` (the source profile's bucket map) is ready on VM ``v`` at ``x_v·(μ_fw + f_k·μ_bw)``
  and its allreduce can start when it is ready on *every* VM;
* the allreduces share the links max-min fairly (:mod:`srifty.cloud.network`); their data time is
  scaled per iteration by a log-normal factor (temporal network interference);
* VM ``v`` steps once its backward and every allreduce are done, so the iteration takes
  ``max_v [max(x_v·(μ_fw + μ_bw), t_pe) + x_v·μ_step]``.

Randomness: the caller's generator seeds one stream per group and one for the network, so the first
VMs of a type see the same noise whatever the counts of other types (common random numbers).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from srifty.cloud.allocation import Allocation, group_key
from srifty.cloud.compute import ComputeTruth
from srifty.cloud.network import LinkSetup, allreduce_phases_s, drain_time_s
from srifty.cloud.params import CloudParams
from srifty.vocab import Config

MS = 1e-3


@dataclass(frozen=True)
class GroupCompute:
    """One configuration group's true mean phase times (s) at its local batch."""

    key: str
    count: int
    fw_s: float
    bwd_s: float
    step_s: float
    truth: ComputeTruth


def group_computes(config: Config, truths: Sequence[ComputeTruth]) -> tuple[GroupCompute, ...]:
    """Mean phase times of each group of ``config``; ``truths[i]`` is the truth of group ``i``'s GPU."""
    out = []
    for group, truth in zip(config.groups, truths, strict=True):
        fw, bwd, st = (float(truth.mean_ms(p, group.local_batch)[()]) * MS for p in ("fw", "bw", "step"))
        out.append(GroupCompute(group_key(group), group.count, fw, bwd, st, truth))
    return tuple(out)


def _stream(base: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng([base, *keys])


def iteration_times_s(
    groups: Sequence[GroupCompute],
    bucket_start_frac: NDArray[np.float64],
    bucket_bytes: NDArray[np.float64],
    setup: LinkSetup | None,
    allocation: Allocation,
    iters: int,
    rng: np.random.Generator,
    params: CloudParams,
) -> NDArray[np.float64]:
    """``iters`` true iteration times (s) of the groups in ``allocation`` (see the module docstring).

    Args:
        groups: from :func:`group_computes`.
        bucket_start_frac: when DDP launches each bucket, as a fraction of backward.
        bucket_bytes: gradient bytes of each bucket.
        setup: the links of this configuration in this allocation; ``None`` for a single GPU.
        allocation: the placement draw (spatial factors of every VM).
        iters: iterations to draw.
        rng: seeds the per-iteration noise.
        params: the cloud's assumptions.
    """
    base = int(rng.integers(0, 2**63 - 1))
    x_max = np.empty((iters, len(groups)))
    for j, g in enumerate(groups):
        spatial = allocation.group(g.key).spatial_factor[: g.count]
        temporal = g.truth.temporal_factors(_stream(base, zlib.crc32(g.key.encode()), 2), (g.count, iters))
        x_max[:, j] = np.max(spatial[:, None] * temporal, axis=0)
    fw = np.array([g.fw_s for g in groups])
    bwd = np.array([g.bwd_s for g in groups])
    step = np.array([g.step_s for g in groups])
    compute_end = np.max(x_max * (fw + bwd + step), axis=1)
    if setup is None or len(bucket_bytes) == 0:
        return compute_end
    latency_s, data_s = allreduce_phases_s(bucket_bytes, setup, params)
    ready = np.max(x_max[:, :, None] * (fw[:, None] + bucket_start_frac[None, :] * bwd[:, None]), axis=1)
    noise = _stream(base, 3).lognormal(0.0, params.network_temporal_sigma, size=iters)
    t_pe = drain_time_s(ready + latency_s[None, :], data_s[None, :] * noise[:, None])
    step_max = np.max(x_max * step, axis=1)
    return np.maximum(compute_end, t_pe + step_max)
