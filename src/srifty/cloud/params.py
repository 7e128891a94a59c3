"""The emulated cloud's assumptions, in one place, and the hidden parameters it draws once per seed.

EMULATION. Nothing here was measured on a cloud. Each constant is an assumption, chosen to reproduce what
the Srifty paper reports about EC2 (section "Cloud Variance"), and each says where it comes from:

* compute varies across VMs roughly normally with a spread of up to 1.1× (paper, Figure 2): a per-VM
  factor ``N(1, 0.015)`` clipped to ±4.5% (so max/min stays below 1.1); across iterations, every GPU runs
  the straggler process fitted on the H200's 400-iteration run (``calibration.json``), not a parameter here;
* the mean allreduce bandwidth of a whole allocation varies up to 1.8× on large buffers and 1.5× on small
  ones (paper, Figure 1): an allocation-wide bandwidth factor (0.5 + 0.5·Beta(2, 1.2)) and an
  allocation-wide per-hop latency (log-normal, σ = 0.11), with a per-host link factor on top;
* the rated network bandwidth is not what NCCL achieves (the paper's footnote: rated bandwidth has a
  4000%+ MAPE): each instance type has a hidden efficiency, achieved/rated, drawn once per seed;
* the compute truth's own uncertainty (its fit errors, ``calibration.json``) is drawn once per seed, as is a
  launch-time factor per GPU's host (log-normal, σ = ``host_launch_sigma``, an assumption: the calibration
  fits one factor per host generation, not per machine type);
* a GPU keeps ``cuda_context_bytes`` for the CUDA context and libraries' workspaces and needs
  ``allocator_headroom`` × the peak allocated bytes (the caching allocator's fragmentation): assumptions;
* DDP's buckets are ready when backward has produced their gradients; the shape of backward differs per
  model on the cloud (``ready_model_sigma``) and per run (``ready_run_sigma``): assumptions, since the H200
  recorded one backward per batch;
* every iteration, each VM's host starts it after an exponential skew (``launch_skew_mean_s``: data loading
  and Python) and every allreduce pays ``collective_launch_s`` to enqueue and rendezvous: assumptions;
* VM launch takes about two minutes (the paper expected 150 s and observed 95–138 s);
* spot VMs are preempted by a Poisson process per VM-hour whose rate depends on the instance family (an
  assumption; AWS publishes only monthly interruption-frequency buckets in its Spot Instance Advisor).

The hidden parameters are functions of ``(seed, name)``, so they do not depend on the order in which a
caller asks about types.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from srifty.units import BYTES_PER_MIB

#: Preemptions per spot VM-hour, by instance family (the part of the name before the dot). Assumption.
DEFAULT_PREEMPTIONS_PER_VM_HOUR: Mapping[str, float] = {
    "p3": 0.10,
    "p3dn": 0.10,
    "p4d": 0.12,
    "p4de": 0.12,
    "p5": 0.15,
    "g4dn": 0.04,
    "g5": 0.05,
    "g6": 0.05,
    "g6e": 0.06,
}


@dataclass(frozen=True)
class CloudParams:
    """Every assumption of the emulated cloud (see the module docstring). Units are in the names.

    Attributes:
        compute_spatial_sigma: standard deviation of the per-VM compute speed factor (relative).
        compute_clip: that factor is clipped to ``1 ± compute_clip``.
        host_launch_sigma: log-normal σ of the per-GPU host launch-time factor drawn per seed.
        cuda_context_bytes: memory a GPU keeps for the CUDA context and workspaces.
        allocator_headroom: a batch fits when headroom × peak allocated + context ≤ the GPU's memory.
        ready_model_sigma: log-normal σ of the per-model bend of gradient ready fractions (per seed).
        ready_run_sigma: log-normal σ of each bucket's ready fraction per run.
        launch_skew_mean_s: mean of each VM's exponential start skew per iteration.
        collective_launch_s: enqueue and rendezvous cost of one allreduce.
        network_efficiency_range: the per-type achieved/rated network bandwidth is uniform in this range.
        allocation_bandwidth_beta: ``(a, b)`` of the Beta draw of the allocation-wide bandwidth factor.
        allocation_bandwidth_min: that factor is ``min + (1 − min) · Beta(a, b)``.
        host_link_exp_scale: a host's link factor is ``1 − Exp(scale)``, at least ``host_link_min``.
        host_link_min: floor of the per-host link factor.
        hop_latency_s: median one-hop latency between VMs (TCP through the hypervisor).
        allocation_latency_sigma: log-normal σ of the allocation-wide latency factor.
        default_network_gbps: rated link assumed where the catalog has none.
        nvlink_hop_latency_s, pcie_hop_latency_s: one intra-VM hop between GPUs.
        intra_efficiency: achieved fraction of the intra-VM link (NVLink figures are halved first: they
            are bidirectional totals).
        mtu_bytes: the network MTU (EC2 jumbo frames).
        header_bytes: TCP/IP headers inside the MTU.
        frame_overhead_bytes: Ethernet framing outside the MTU (header, FCS, preamble, gap).
        packet_cost_s: per-packet stack cost, paid like bandwidth (pipelined).
        chunk_bytes: the collective moves each step's message in chunks of at most this size.
        chunk_cost_s: fixed cost of one chunk (a protocol round), paid like latency.
        network_temporal_sigma: log-normal σ of the per-iteration (per-repeat) factor on transfer time.
        probe_jitter_sigma: log-normal σ of measurement jitter on one probe repeat.
        launch_offset_s, launch_median_s, launch_sigma: VM launch time is ``offset + LogNormal(ln median, σ)``.
        preemptions_per_vm_hour: spot preemption rate by family; ``default_preemptions_per_vm_hour`` for others.
    """

    compute_spatial_sigma: float = 0.015
    compute_clip: float = 0.045
    host_launch_sigma: float = 0.1
    cuda_context_bytes: float = 0.6 * 2**30
    allocator_headroom: float = 1.05
    ready_model_sigma: float = 0.15
    ready_run_sigma: float = 0.03
    launch_skew_mean_s: float = 0.3e-3
    collective_launch_s: float = 20e-6
    network_efficiency_range: tuple[float, float] = (0.45, 0.85)
    allocation_bandwidth_beta: tuple[float, float] = (2.0, 1.2)
    allocation_bandwidth_min: float = 0.5
    host_link_exp_scale: float = 0.03
    host_link_min: float = 0.6
    hop_latency_s: float = 30e-6
    allocation_latency_sigma: float = 0.11
    default_network_gbps: float = 10.0
    nvlink_hop_latency_s: float = 4e-6
    pcie_hop_latency_s: float = 8e-6
    intra_efficiency: float = 0.8
    mtu_bytes: int = 9001
    header_bytes: int = 52
    frame_overhead_bytes: int = 38
    packet_cost_s: float = 0.25e-6
    chunk_bytes: int = BYTES_PER_MIB // 2
    chunk_cost_s: float = 2e-6
    network_temporal_sigma: float = 0.06
    probe_jitter_sigma: float = 0.02
    launch_offset_s: float = 70.0
    launch_median_s: float = 50.0
    launch_sigma: float = 0.35
    preemptions_per_vm_hour: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PREEMPTIONS_PER_VM_HOUR))
    default_preemptions_per_vm_hour: float = 0.05

    @property
    def payload_bytes(self) -> int:
        """Payload bytes of one full packet (MTU minus TCP/IP headers)."""
        return self.mtu_bytes - self.header_bytes

    @property
    def mean_launch_time_s(self) -> float:
        """Expected VM launch time: ``offset + median · exp(σ²/2)``."""
        return self.launch_offset_s + self.launch_median_s * float(np.exp(self.launch_sigma**2 / 2))

    def preemption_rate_per_vm_hour(self, instance_type: str) -> float:
        """The spot preemption rate of ``instance_type``'s family."""
        family = instance_type.split(".", 1)[0]
        return float(self.preemptions_per_vm_hour.get(family, self.default_preemptions_per_vm_hour))


def named_rng(seed: int, *names: str | int) -> np.random.Generator:
    """A generator that depends only on ``seed`` and ``names`` (strings hashed with CRC-32)."""
    keys = [zlib.crc32(n.encode()) if isinstance(n, str) else int(n) for n in names]
    return np.random.default_rng([int(seed), *keys])


@dataclass(frozen=True)
class HiddenDraw:
    """The network parameters drawn once per seed that no planner may see: network efficiency per instance
    type (the compute truth draws its own, :mod:`srifty.cloud.compute`). Pure functions of ``(seed, name)``."""

    seed: int
    params: CloudParams

    def network_efficiency(self, instance_type: str) -> float:
        """Achieved over rated network bandwidth of ``instance_type``."""
        lo, hi = self.params.network_efficiency_range
        return float(named_rng(self.seed, "hidden-network", instance_type).uniform(lo, hi))
