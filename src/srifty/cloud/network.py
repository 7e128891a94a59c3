"""The emulated cloud's network truth: how long allreduces really take (EMULATED).

Deliberately *not* srifty's predictor (a learned bus-bandwidth model and the paper's fair-share rule with a
cap), so that judging srifty against it is not circular. The truth is built from mechanisms instead:

* **Hierarchical allreduce.** Inside a VM with ``g`` GPUs: reduce-scatter and all-gather over the
  intra-VM link (``2(g−1)`` hops of ``s/g`` bytes; NVLink or PCIe, from the catalog's ``GpuSpec``).
  Between ``N`` VMs: an allreduce of each GPU's shard, ``g`` streams sharing each VM's network link.
* **Chunked ring or tree, whichever is faster** (as NCCL's tuner picks). Ring: ``2(N−1)`` steps of
  ``s/(N·g)`` bytes per stream, bandwidth-optimal. Tree: ``2·ceil(log2 N)`` steps of the whole shard,
  latency-optimal. Each step costs the hop latency plus a fixed cost per chunk of at most
  ``chunk_bytes``.
* **Per-host links drawn per allocation.** A ring (or tree) runs at the slowest VM's link:
  rated × hidden efficiency × allocation factor × host factor, so it slows down as VMs are added.
* **Packets.** A message of ``m`` bytes travels as ``ceil(m / payload)`` packets, each with header and
  framing bytes and a per-packet stack cost: messages up to one MTU go in one packet, one byte more needs
  two.
* **Max-min fair, work-conserving sharing** between concurrent transfers (buckets): each transfer is a
  latency part (hops, chunk rounds; not shared) followed by a data part that shares the link equally
  with every other active transfer's data part. Sharing is work-conserving: the link never idles while
  data is waiting, so the last transfer ends at :func:`drain_time_s` (exactly; :func:`fair_share_finish_s`
  is the event-driven reference).

Compare srifty's simulator (:mod:`srifty.sim.allreduce`): a transfer there runs at its own bus bandwidth
(latency included) until the sum of rates exceeds a cap, then at its share of the cap. Given the truth's
alone bandwidths, the two agree exactly when one transfer is in flight at a time, and disagree when
transfers overlap: below the cap srifty lets each run at its alone rate while the truth shares their data
parts (the truth is slower); above it srifty shares latency as if it were bandwidth (srifty is slower).
The emulated iteration (:mod:`srifty.cloud.iteration`) runs a job's buckets on one stream instead; this
sharing is the probe's (concurrent probe transfers). Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.catalog import InstanceType
from srifty.cloud.params import CloudParams
from srifty.units import gbps_to_bytes_per_s

FloatArray = NDArray[np.float64]
PCIE3_BYTES_PER_S = 16e9


@dataclass(frozen=True)
class IntraLink:
    """The link between the GPUs of one VM type: ``gpus`` GPUs, achieved bytes/s one way, hop latency."""

    gpus: int
    bytes_per_s: float
    hop_latency_s: float


@dataclass(frozen=True)
class LinkSetup:
    """The links one collective crosses, in one allocation.

    Attributes:
        n_nodes: VMs taking part.
        streams_per_node: GPUs per VM (the largest of the configuration's types): one stream each.
        net_bytes_per_s: the slowest VM's achieved network bandwidth.
        net_hop_latency_s: one hop between VMs.
        intra: the intra-VM link of each type with more than one GPU.
    """

    n_nodes: int
    streams_per_node: int
    net_bytes_per_s: float
    net_hop_latency_s: float
    intra: tuple[IntraLink, ...]


def intra_link(instance: InstanceType, params: CloudParams) -> IntraLink:
    """The intra-VM link of ``instance`` from its GPU datasheet (NVLink totals are halved: one direction)."""
    spec = instance.gpu
    if spec is None:
        return IntraLink(instance.gpus_per_vm, PCIE3_BYTES_PER_S * params.intra_efficiency, params.pcie_hop_latency_s)
    nvlink = spec.intra_node_link.startswith("nvlink")
    one_way = spec.link_bytes_per_s_per_gpu / (2.0 if nvlink else 1.0)
    latency = params.nvlink_hop_latency_s if nvlink else params.pcie_hop_latency_s
    return IntraLink(instance.gpus_per_vm, one_way * params.intra_efficiency, latency)


def rated_bytes_per_s(instance: InstanceType, params: CloudParams) -> float:
    """The catalog's rated network link of ``instance`` (``default_network_gbps`` where unknown)."""
    gbps = instance.rated_network_gbps if instance.rated_network_gbps else params.default_network_gbps
    return gbps_to_bytes_per_s(gbps)


def packets(message_bytes: ArrayLike, params: CloudParams) -> FloatArray:
    """Packets needed for each message (at least one)."""
    m = np.asarray(message_bytes, dtype=float)
    return np.maximum(np.ceil(m / params.payload_bytes), 1.0)


def wire_bytes(message_bytes: ArrayLike, params: CloudParams) -> FloatArray:
    """Bytes on the wire for each message: payload plus headers and framing of every packet."""
    m = np.asarray(message_bytes, dtype=float)
    return m + packets(m, params) * (params.header_bytes + params.frame_overhead_bytes)


def _chunks(message_bytes: FloatArray, params: CloudParams) -> FloatArray:
    return np.maximum(np.ceil(message_bytes / params.chunk_bytes), 1.0)


def _network_steps(
    steps: ArrayLike, message: FloatArray, setup: LinkSetup, params: CloudParams
) -> tuple[FloatArray, FloatArray]:
    """``(latency_s, data_s)`` of ``steps`` network steps, each moving ``message`` bytes on every stream."""
    g = setup.streams_per_node
    latency = np.asarray(steps, dtype=float) * (
        setup.net_hop_latency_s + _chunks(message, params) * params.chunk_cost_s
    )
    per_step = g * (
        wire_bytes(message, params) / setup.net_bytes_per_s + packets(message, params) * params.packet_cost_s
    )
    return latency, np.asarray(steps, dtype=float) * per_step


def allreduce_phases_s(sizes_bytes: ArrayLike, setup: LinkSetup, params: CloudParams) -> tuple[FloatArray, FloatArray]:
    """``(latency_s, data_s)`` of one allreduce of each size, alone on the links (see the module docstring).

    Returns zeros for a single GPU.
    """
    s = np.asarray(sizes_bytes, dtype=float)
    latency = np.zeros_like(s)
    data = np.zeros_like(s)
    intra_total = np.zeros_like(s)
    for link in setup.intra:
        if link.gpus <= 1:
            continue
        hops = 2.0 * (link.gpus - 1)
        shard = s / link.gpus
        lat = hops * (link.hop_latency_s + _chunks(shard, params) * params.chunk_cost_s)
        dat = hops * shard / link.bytes_per_s
        slower = lat + dat > intra_total
        latency = np.where(slower, lat, latency)
        data = np.where(slower, dat, data)
        intra_total = np.maximum(intra_total, lat + dat)
    n = setup.n_nodes
    if n >= 2:
        g = setup.streams_per_node
        ring_lat, ring_dat = _network_steps(2.0 * (n - 1), s / (n * g), setup, params)
        depth = float(np.ceil(np.log2(n)))
        tree_lat, tree_dat = _network_steps(2.0 * depth, s / g, setup, params)
        use_tree = tree_lat + tree_dat < ring_lat + ring_dat
        latency = latency + np.where(use_tree, tree_lat, ring_lat)
        data = data + np.where(use_tree, tree_dat, ring_dat)
    return latency, data


def drain_time_s(arrival_s: ArrayLike, work_s: ArrayLike) -> FloatArray:
    """When the last of several transfers ends on a work-conserving shared link.

    ``arrival_s[..., k]`` is when transfer ``k``'s data part may start, ``work_s[..., k]`` how long it takes
    alone. For any work-conserving sharing (max-min fair included) the link empties at
    ``max_k (a_(k) + Σ_{j ≥ k} w_(j))`` over arrivals in ascending order. Vectorised over leading axes;
    ``-inf``-free: an empty last axis gives 0.
    """
    a = np.asarray(arrival_s, dtype=float)
    w = np.broadcast_to(np.asarray(work_s, dtype=float), a.shape)
    if a.shape[-1] == 0:
        return np.zeros(a.shape[:-1])
    order = np.argsort(a, axis=-1, kind="stable")
    a_sorted = np.take_along_axis(a, order, axis=-1)
    w_sorted = np.take_along_axis(w, order, axis=-1)
    suffix = np.flip(np.cumsum(np.flip(w_sorted, axis=-1), axis=-1), axis=-1)
    return np.max(a_sorted + suffix, axis=-1)


def fair_share_finish_s(arrival_s: ArrayLike, work_s: ArrayLike) -> FloatArray:
    """Each transfer's finish time under max-min fair sharing of one link (event-driven reference).

    Every active transfer gets an equal share of the link (its demand is the whole link), so the link is
    work-conserving; the largest finish time equals :func:`drain_time_s`.
    """
    arrivals = np.asarray(arrival_s, dtype=float).ravel()
    remaining = np.asarray(work_s, dtype=float).ravel().copy()
    n = len(arrivals)
    finish = np.zeros(n)
    pending = list(np.argsort(arrivals, kind="stable"))
    active: list[int] = []
    now = float(arrivals[pending[0]]) if n else 0.0
    while pending or active:
        next_arrival = float(arrivals[pending[0]]) if pending else np.inf
        if active:
            share = 1.0 / len(active)
            j = min(active, key=lambda k: remaining[k])
            next_finish = now + remaining[j] / share
        else:
            next_finish = np.inf
        if next_arrival <= next_finish:
            if active:
                remaining[active] -= (next_arrival - now) / len(active)
            now = max(now, next_arrival)
            active.append(int(pending.pop(0)))
            continue
        remaining[active] -= (next_finish - now) / len(active)
        remaining[j] = 0.0
        now = next_finish
        for k in [k for k in active if remaining[k] <= 1e-12]:
            finish[k] = now
            active.remove(k)
    return finish
