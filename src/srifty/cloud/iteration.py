"""True per-iteration times of a configuration in one allocation: the emulated cloud's own execution (EMULATED).

One synchronous DDP iteration, with time 0 when the previous one ended, for every GPU rank ``r`` (a VM's
GPUs are ranks of their own):

* **Speed.** Rank ``r`` runs at ``x_r,t = s_v · m_r,t``: its VM's spatial factor (fixed for the allocation)
  times its straggler process (the two-state process fitted on the H200's
  400-iteration run, :mod:`srifty.cloud.stragglers`: its state carries from one iteration to the next, so a
  slow GPU stays slow for a while).
* **Launch.** The rank's host starts the iteration after a skew ``δ_r,t ~ Exp(launch_skew_mean_s)``.
* **Forward and backward.** Forward ends at ``δ + x·μ_fw``; backward at ``δ + x·(μ_fw + μ_bwd)``, where ``μ``
  are the compute truth's means at the rank's local batch (:mod:`srifty.cloud.compute`).
* **Buckets.** Bucket ``k`` is ready on rank ``r`` at ``δ + x·(μ_fw + f_k·μ_bwd)``, ``f_k`` its ready
  fraction at that batch (:mod:`srifty.cloud.gradients`), jittered per run. Its allreduce is enqueued when
  every rank has it ready, plus ``collective_launch_s``.
* **One NCCL stream.** The allreduces run one after another in bucket order, as DDP's buckets do on their
  communicator's stream: ``end_k = max(enqueue_k, end_{k−1}) + latency_k + data_k · n_t`` (network truth in
  :mod:`srifty.cloud.network`; ``n_t`` the iteration's log-normal network interference).
* **Step.** The optimizer's kernels were issued by the host while the GPU worked (``host`` span); they run
  after backward and the last allreduce: the rank ends at ``max(max(bwd_end, end_K) + x·μ_step_gpu, δ +
  host)``. The iteration takes the slowest rank's end.

Compare srifty's simulator: per-rank normal draws (no persistence, no skew), ``t_fw + max(t_bwd, t_pe) +
t_step`` with the measured step time, and concurrent fair-shared transfers. Randomness: the caller's
generator seeds one stream per group (common random numbers across configurations) and one for the rest.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from srifty.cloud.allocation import Allocation, group_key, group_offsets
from srifty.cloud.compute import ComputeTruth
from srifty.cloud.gradients import GradientTruth, jitter_ready
from srifty.cloud.network import LinkSetup, allreduce_phases_s
from srifty.cloud.params import CloudParams
from srifty.cloud.stragglers import StragglerFit, straggler_factors
from srifty.vocab import Config

MS = 1e-3
FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class GroupCompute:
    """One configuration group's true means (s) at its local batch, and how many ranks it has."""

    key: str
    vms: int
    gpus_per_vm: int
    batch: int
    fw_s: float
    bwd_s: float
    step_gpu_s: float
    host_s: float
    offset: int = 0

    @property
    def ranks(self) -> int:
        """GPU ranks of the group."""
        return self.vms * self.gpus_per_vm


def group_computes(config: Config, truths: Sequence[ComputeTruth]) -> tuple[GroupCompute, ...]:
    """Means of each group of ``config``; ``truths[i]`` is the truth of group ``i``'s GPU."""
    out = []
    for group, truth, offset in zip(config.groups, truths, group_offsets(config), strict=True):
        fw, bwd, _ = truth.phases_ms(group.local_batch)
        out.append(
            GroupCompute(
                key=group_key(group),
                vms=group.count,
                gpus_per_vm=group.instance.gpus_per_vm,
                batch=group.local_batch,
                fw_s=fw * MS,
                bwd_s=bwd * MS,
                step_gpu_s=truth.step_gpu_ms * MS,
                host_s=truth.host_issue_ms * MS,
                offset=offset,
            )
        )
    return tuple(out)


def _stream(base: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng([base, *keys])


def iteration_times_s(
    groups: Sequence[GroupCompute],
    gradients: GradientTruth,
    setup: LinkSetup | None,
    allocation: Allocation,
    stragglers: StragglerFit,
    iters: int,
    rng: np.random.Generator,
    params: CloudParams,
) -> FloatArray:
    """``iters`` true iteration times (s) of the groups in ``allocation`` (see the module docstring)."""
    base = int(rng.integers(0, 2**63 - 1))
    net_noise = _stream(base, 3).lognormal(0.0, params.network_temporal_sigma, size=iters)
    n_buckets = gradients.buckets(groups[0].batch)[0].size if groups else 0
    ready_jitter = _stream(base, 2).lognormal(0.0, params.ready_run_sigma, size=n_buckets)
    end = np.zeros(iters)
    bucket_ready: FloatArray | None = None
    bucket_bytes: FloatArray | None = None
    rank_ends = []
    for g in groups:
        stream = _stream(base, zlib.crc32(g.key.encode()), 7, g.offset)
        spatial = np.repeat(allocation.group(g.key).spatial_factor[g.offset : g.offset + g.vms], g.gpus_per_vm)
        x = spatial[None, :] * straggler_factors(stragglers, stream, g.ranks, iters)
        skew = stream.exponential(params.launch_skew_mean_s, size=(iters, g.ranks))
        sizes, fracs = gradients.buckets(g.batch)
        fracs = jitter_ready(fracs, ready_jitter)
        bwd_end = skew + x * (g.fw_s + g.bwd_s)
        rank_ends.append((skew, x, bwd_end, g))
        if setup is not None and sizes.size:
            # Each bucket is ready when the slowest rank of the group has produced it.
            ready = np.max(skew[:, :, None] + x[:, :, None] * (g.fw_s + fracs[None, None, :] * g.bwd_s), axis=1)
            bucket_ready = ready if bucket_ready is None else np.maximum(bucket_ready, ready)
            bucket_bytes = sizes
    comm_end = np.zeros(iters)
    if setup is not None and bucket_ready is not None and bucket_bytes is not None:
        latency_s, data_s = allreduce_phases_s(bucket_bytes, setup)
        duration = latency_s[None, :] + data_s[None, :] * net_noise[:, None]
        enqueue = bucket_ready + params.collective_launch_s
        comm_end = fifo_end_s(enqueue, duration)
    for skew, x, bwd_end, g in rank_ends:
        finish = np.maximum(np.maximum(bwd_end, comm_end[:, None]) + x * g.step_gpu_s, skew + g.host_s)
        end = np.maximum(end, finish.max(axis=1))
    return end


def steady_iteration_s(
    groups: Sequence[GroupCompute],
    gradients: GradientTruth,
    setup: LinkSetup | None,
    params: CloudParams,
    speed: Sequence[float] | None = None,
) -> float:
    """The iteration of the module docstring with its random parts at typical values: group ``i``'s ranks all
    at relative speed ``speed[i]`` (default 1), no skew, ready fractions and transfers as they are on average,
    on ``setup``'s links. Deterministic and cheap (the judge ranks configurations with it before judging the
    best in full). It is never below any group's ``fw + bwd + step`` at speed 1 when ``speed ≥ 1``, nor its host
    span, nor the sum of its allreduces.
    """
    if not groups:
        return 0.0
    x = [1.0] * len(groups) if speed is None else list(speed)
    comm_end = 0.0
    if setup is not None:
        ready: FloatArray | None = None
        sizes = np.zeros(0)
        for g, xi in zip(groups, x, strict=True):
            sizes, fracs = gradients.buckets(g.batch)
            at = xi * (g.fw_s + fracs * g.bwd_s)
            ready = at if ready is None else np.maximum(ready, at)
        if ready is not None and sizes.size:
            latency_s, data_s = allreduce_phases_s(sizes, setup)
            enqueue = ready + params.collective_launch_s
            comm_end = float(fifo_end_s(enqueue[None, :], (latency_s + data_s)[None, :])[0])
    return max(
        max(max(xi * (g.fw_s + g.bwd_s), comm_end) + xi * g.step_gpu_s, g.host_s)
        for g, xi in zip(groups, x, strict=True)
    )


def fifo_end_s(enqueue_s: FloatArray, duration_s: FloatArray) -> FloatArray:
    """When the last of a stream's operations ends: ``end_k = max(enqueue_k, end_{k−1}) + d_k``, in closed form
    ``max_k (enqueue_k + Σ_{j ≥ k} d_j)`` over the last axis (operations in stream order)."""
    if enqueue_s.shape[-1] == 0:
        return np.zeros(enqueue_s.shape[:-1])
    suffix = np.flip(np.cumsum(np.flip(duration_s, axis=-1), axis=-1), axis=-1)
    return np.max(enqueue_s + suffix, axis=-1)
