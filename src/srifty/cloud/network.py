"""The emulated cloud's network truth: how long allreduces really take (EMULATED, fitted to real clusters).

Deliberately *not* srifty's predictor (a learned bus-bandwidth model over the catalog's rated bandwidth, and
the paper's fair-share rule with a cap). The truth's functional form is its own, and its constants are fitted
(:mod:`srifty.cloud.netfit`) to public nccl-tests and torch.distributed tables of real clusters and to the
project's testbed probes (``data/allreduce_public.csv``, ``data/allreduce_testbed.csv``; the data README says
which table grounds which family).

An allreduce of ``s`` bytes over ``n`` VMs holding ``N`` GPUs (at most ``g`` per VM) runs NCCL's three
protocols and takes the fastest:

    t_p(s) = λ_p · ℓ  +  s · 2(N − 1)/N / B_p

* **latency** ``ℓ = a · δ_a + 2(n − 1) · h + 2(N − n) · h_link`` on several VMs (a base, a per-hop latency of
  the fabric between VMs, and the hops over the links inside each VM), ``a · δ_a + 2(g − 1) · h`` on one VM;
  ``λ_LL = 1 < λ_LL128 < λ_Simple``;
* **bus bandwidth** ``B`` is the fabric's efficiency ``η · δ_η`` times its link: on several VMs the slowest
  VM's rated network ``R`` turned into bus bandwidth, ``R · n/(n − 1) · (N − 1)/N`` (a VM sends and receives
  ``2(n − 1)/n`` of the buffer), capped by the links inside the VMs; on one VM its NVLink or PCIe link per GPU
  and direction. The protocols reach ``B_LL = min(ε_LL · B, C_LL)``, ``B_LL128 = ε_LL128 · B`` and
  ``B_Simple = B``: small messages take the low-latency protocols, large ones Simple (NCCL's switch points).
* **fabrics** (``efa-rdma``: EFA with GPUDirect RDMA; ``efa-host``: EFA through host memory; ``tcp``: NCCL
  over sockets on ENA; ``ib``, ``roce``; ``nvlink`` inside one VM) have their own constants; a family with
  tables of its own has its own ``δ`` (``data/fabrics.csv`` says which family is which). A configuration of
  several families runs at the worst of each constant (NCCL falls back to the transport all of them have).
* **scale** (assumptions, :class:`~srifty.cloud.params.CloudParams`): VMs beyond a rack-sized group, or an
  allocation spread over racks, cross an oversubscribed spine (bandwidth divided, a spine hop added to the
  latency); VMs spread over two zones pay a cross-zone latency on every step and share a thinner link. Every
  allocation draws its bandwidth and latency around the tables' (:mod:`srifty.cloud.allocation`).

The time splits into a *latency* part (not shared) and a *data* part (shared by concurrent transfers,
work-conserving, :func:`drain_time_s`). Adding a VM, or a slower one, never makes an allreduce shorter
(the judge's search bounds rely on it). Pure numpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
PROTOCOLS = ("LL", "LL128", "Simple")


@dataclass(frozen=True)
class FabricFit:
    """One fabric's fitted constants.

    Attributes:
        base_latency_s: ``a``, the latency every allreduce pays.
        hop_latency_s: ``h``, per hop between VMs (or, for ``nvlink``, between the GPUs of one VM).
        efficiency: ``η``, achieved bus bandwidth over the link.
        ll128_latency: ``λ_LL128`` (LL's is 1).
        simple_latency: ``λ_Simple``.
        ll_efficiency: ``ε_LL``.
        ll128_efficiency: ``ε_LL128``.
        ll_cap_bytes_per_s: ``C_LL``, the most LL moves whatever the link.
    """

    base_latency_s: float
    hop_latency_s: float
    efficiency: float
    ll128_latency: float
    simple_latency: float
    ll_efficiency: float
    ll128_efficiency: float
    ll_cap_bytes_per_s: float

    def worst(self, other: FabricFit) -> FabricFit:
        """Each constant at its worse value of the two (latencies the larger, efficiencies the smaller)."""
        slower = {"base_latency_s", "hop_latency_s", "ll128_latency", "simple_latency"}
        values = {
            f.name: (max if f.name in slower else min)(getattr(self, f.name), getattr(other, f.name))
            for f in fields(self)
        }
        return FabricFit(**values)


@dataclass(frozen=True)
class LinkSetup:
    """The links one collective crosses, in one allocation.

    Attributes:
        n_nodes: VMs taking part.
        ranks: GPUs taking part.
        gpus_per_node: the most GPUs of one VM.
        fabric: the constants between VMs (the worst of the families present); unused on one VM.
        node_fabric: the constants inside a VM (NVLink or PCIe).
        net_bytes_per_s: the slowest VM's network link as it is in this allocation (rated × efficiency ×
            the allocation's and the VM's factors × spine and zone factors).
        intra_bytes_per_s: the slowest link between the GPUs of one VM (efficiency included; ``inf`` with one
            GPU per VM).
        latency_factor: the allocation's factor on latency.
        extra_latency_s: per allreduce, added by spine hops and zone crossings.
    """

    n_nodes: int
    ranks: int
    gpus_per_node: int
    fabric: FabricFit
    node_fabric: FabricFit
    net_bytes_per_s: float
    intra_bytes_per_s: float
    latency_factor: float = 1.0
    extra_latency_s: float = 0.0

    def with_scale(self, factor: float) -> LinkSetup:
        """The same links with ``factor`` on the network bandwidth."""
        return replace(self, net_bytes_per_s=self.net_bytes_per_s * factor)


def bus_bandwidth_bytes_per_s(setup: LinkSetup) -> float:
    """The bus bandwidth Simple reaches on ``setup`` (see the module docstring)."""
    n, ranks = setup.n_nodes, setup.ranks
    if n >= 2:
        net = setup.fabric.efficiency * setup.net_bytes_per_s * n / (n - 1) * (ranks - 1) / ranks
        return min(net, setup.intra_bytes_per_s)
    return setup.intra_bytes_per_s


def base_latency_s(setup: LinkSetup) -> float:
    """``ℓ``: the latency the LL protocol pays (the others pay multiples of it)."""
    n, ranks, g = setup.n_nodes, setup.ranks, setup.gpus_per_node
    if n >= 2:
        hops = 2 * (n - 1) * setup.fabric.hop_latency_s + 2 * (ranks - n) * setup.node_fabric.hop_latency_s
        base = max(setup.fabric.base_latency_s, setup.node_fabric.base_latency_s)  # never below one VM's
        return setup.latency_factor * (base + hops) + setup.extra_latency_s
    return setup.latency_factor * (setup.node_fabric.base_latency_s + 2 * (g - 1) * setup.node_fabric.hop_latency_s)


def allreduce_phases_s(sizes_bytes: ArrayLike, setup: LinkSetup | None) -> tuple[FloatArray, FloatArray]:
    """``(latency_s, data_s)`` of one allreduce of each size, alone on the links, with the fastest protocol.

    Returns zeros for a single GPU (``setup`` ``None`` or one rank).
    """
    s = np.asarray(sizes_bytes, dtype=float)
    if setup is None or setup.ranks < 2:
        return np.zeros_like(s), np.zeros_like(s)
    fab = setup.fabric if setup.n_nodes >= 2 else setup.node_fabric
    bw = bus_bandwidth_bytes_per_s(setup)
    lat = base_latency_s(setup)
    moved = s * 2.0 * (setup.ranks - 1) / setup.ranks
    latencies = np.array([lat, fab.ll128_latency * lat, fab.simple_latency * lat])
    rates = np.array([min(fab.ll_efficiency * bw, fab.ll_cap_bytes_per_s), fab.ll128_efficiency * bw, bw])
    data = moved[None, :] / rates[:, None]
    total = latencies[:, None] + data
    pick = np.argmin(total, axis=0)
    columns = np.arange(s.size)
    return latencies[pick], data[pick, columns]


def predict_time_s(
    sizes_bytes: ArrayLike,
    n_nodes: int,
    gpus_per_node: int,
    fabric: FabricFit,
    node_fabric: FabricFit,
    net_bytes_per_s: float,
    intra_bytes_per_s: float,
) -> FloatArray:
    """Allreduce times of a table's machines (every VM alike, no allocation factors): what the fit compares
    with the published times."""
    setup = LinkSetup(
        n_nodes, n_nodes * gpus_per_node, gpus_per_node, fabric, node_fabric, net_bytes_per_s, intra_bytes_per_s
    )
    latency, data = allreduce_phases_s(sizes_bytes, setup)
    return latency + data


def family_factors(groups: Mapping[str, tuple[float, float]], group: str) -> tuple[float, float]:
    """``(δ_η, δ_a)`` of a family group (1, 1 for a group without tables)."""
    return groups.get(group, (1.0, 1.0))


def drain_time_s(arrival_s: ArrayLike, work_s: ArrayLike) -> FloatArray:
    """When the last of several transfers ends on a work-conserving shared link.

    ``arrival_s[..., k]`` is when transfer ``k``'s data part may start, ``work_s[..., k]`` how long it takes
    alone. For any work-conserving sharing (max-min fair included) the link empties at
    ``max_k (a_(k) + Σ_{j ≥ k} w_(j))`` over arrivals in ascending order. Vectorised over leading axes;
    an empty last axis gives 0.
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
