"""The emulated cloud's assumptions, in one place, and the hidden parameters it draws once per seed.

EMULATION. Nothing here was measured on a cloud. Each constant is an assumption, chosen to reproduce what
the Srifty paper reports about EC2 (section "Cloud Variance"), and each says where it comes from:

* compute varies across VMs roughly normally with a spread of up to 1.1× (paper, Figure 2): a per-VM
  factor ``N(1, 0.015)`` clipped to ±4.5% (so max/min stays below 1.1); across iterations, every GPU runs
  the straggler process fitted on the H200's 400-iteration run (``calibration.json``), not a parameter here;
* the network's constants are fitted to real clusters' tables (:mod:`srifty.cloud.netfit`); around them the
  mean allreduce bandwidth of a whole allocation varies up to 1.8× on large buffers and 1.5× on small ones
  (paper, Figure 1): an allocation-wide bandwidth factor (0.6 + 0.4·Beta(2, 1.2), divided by its median so
  that the median allocation is the tables') and an allocation-wide latency factor (log-normal, σ = 0.11),
  with a per-host link factor on top;
* each instance type's efficiency is drawn once per seed around its fabric's fit, log-normal with the
  fabric's held-out error (the tables of one fabric disagree by that much);
* at scale (assumptions; no public table measures them): a rack holds ``rack_gpus`` GPUs; VMs of a
  configuration beyond one rack, or an allocation the cloud spreads over racks (``spread_probability`` on the
  TCP fabric; EFA and InfiniBand families are placed in cluster placement groups), cross an oversubscribed
  spine (``spine_oversubscription``, and ``spine_latency_s`` more latency per allreduce step); an on-demand
  configuration placed in no zone with more VMs of one type than a zone holds (``zone_capacity_vms``) lands
  in two zones and pays ``cross_zone_latency_s`` per step and ``cross_zone_bandwidth_factor`` on its links;
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
        allocation_bandwidth_beta: ``(a, b)`` of the Beta draw of the allocation-wide bandwidth factor.
        allocation_bandwidth_min: that factor is ``min + (1 − min) · Beta(a, b)``.
        host_link_exp_scale: a host's link factor is ``1 − Exp(scale)``, at least ``host_link_min``.
        host_link_min: floor of the per-host link factor.
        allocation_latency_sigma: log-normal σ of the allocation-wide latency factor.
        default_network_gbps: rated link assumed where neither the catalog nor ``data/fabrics.csv`` has one.
        rack_gpus: GPUs one rack holds (a rack of VMs of ``g`` GPUs holds ``max(1, rack_gpus // g)`` of them).
        spine_oversubscription: per fabric, the bandwidth of links across racks divided by this.
        spine_latency_s: per allreduce step, added when a configuration spans racks.
        spread_probability: per fabric, the chance an allocation is spread over racks however small.
        zone_capacity_vms: VMs of one type and market one zone holds for an on-demand configuration placed in no
            zone; more span two zones.
        cross_zone_latency_s: per allreduce step between VMs, added when it does.
        cross_zone_bandwidth_factor: its links' bandwidth multiplied by this when it does.
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
    allocation_bandwidth_beta: tuple[float, float] = (2.0, 1.2)
    allocation_bandwidth_min: float = 0.6
    host_link_exp_scale: float = 0.03
    host_link_min: float = 0.6
    allocation_latency_sigma: float = 0.11
    default_network_gbps: float = 10.0
    rack_gpus: int = 32
    spine_oversubscription: Mapping[str, float] = field(
        default_factory=lambda: {"tcp": 1.5, "efa-host": 1.5, "roce": 1.5, "efa-rdma": 1.0, "ib": 1.0}
    )
    spine_latency_s: float = 2e-6
    spread_probability: Mapping[str, float] = field(default_factory=lambda: {"tcp": 0.1})
    zone_capacity_vms: int = 16
    cross_zone_latency_s: float = 250e-6
    cross_zone_bandwidth_factor: float = 0.5
    network_temporal_sigma: float = 0.06
    probe_jitter_sigma: float = 0.02
    launch_offset_s: float = 70.0
    launch_median_s: float = 50.0
    launch_sigma: float = 0.35
    preemptions_per_vm_hour: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_PREEMPTIONS_PER_VM_HOUR))
    default_preemptions_per_vm_hour: float = 0.05

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
    """The network factors drawn once per seed that no planner may see: each instance type's efficiency
    around its fabric's fit (the compute truth draws its own, :mod:`srifty.cloud.compute`). Pure functions of
    ``(seed, name)``."""

    seed: int
    params: CloudParams
    _efficiency: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def network_efficiency(self, instance_type: str, sigma: float) -> float:
        """``instance_type``'s efficiency relative to its fabric's fit: log-normal with ``sigma``."""
        hit = self._efficiency.get(instance_type)
        if hit is None:
            hit = float(named_rng(self.seed, "hidden-network", instance_type).lognormal(0.0, sigma))
            self._efficiency[instance_type] = hit
        return hit
