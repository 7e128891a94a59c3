"""Paleo's allreduce estimate as a bus-bandwidth model, for the planner's Paleo baseline.

Paleo (``TalwalkarLab/paleo``, ``paleo/comm.py``) does not model NCCL; it prices individual allreduce
schemes over one link of bandwidth ``B``, each message of ``s`` bytes taking ``s / (B · ppp_comm)``:

* tree: ``2 · ceil(log2 n)`` link transfers (reduce up the tree, broadcast down);
* butterfly: ``ceil(log2 n)``; butterfly mixing: 1; one-to-all: ``2 · (n − 1)``.

Paleo has no ring scheme; ``ring`` here is the textbook bandwidth-optimal ring, ``2 · (n − 1) / n``
transfers, which is what NCCL's ring achieves. The Srifty paper reports "the average" of Paleo's
estimates, and the project's issue asks for tree and ring: by default the *times* of those two are
averaged, and the average time is turned into bus bandwidth, ``busbw = 2·s·(n−1) / (n·t)``.

The link is the VMs' network when the allreduce spans several VMs (``n_nodes > 1``): the rated
bandwidth in the row (``rated_network_gbps``) or ``default_network_gbps`` (Paleo's 10 Gbit Ethernet)
where it is missing; within one VM, the GPUs' link from the datasheet (NVLink figures are bidirectional,
so half is used per direction), or PCIe 3 x16 (16 GB/s, Paleo's ``PCIe_3``) where the GPU is unknown.
Pure numpy; the frame is anything indexable by column name (a pandas ``DataFrame`` or a dict of arrays).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from srifty.catalog import Catalog, load_catalog
from srifty.errors import SriftyError
from srifty.units import gbps_to_bytes_per_s

SCHEMES = ("tree", "ring", "butterfly", "butterfly_mixing", "one_to_all")
PCIE3_X16_BYTES_PER_S = 16e9


def link_transfers(scheme: str, n: NDArray[np.float64]) -> NDArray[np.float64]:
    """How many times a whole message crosses one link in ``scheme`` among ``n`` workers."""
    height = np.ceil(np.log2(np.maximum(n, 1.0)))
    if scheme == "tree":
        return 2.0 * height
    if scheme == "ring":
        return 2.0 * (n - 1.0) / n
    if scheme == "butterfly":
        return height
    if scheme == "butterfly_mixing":
        return np.ones_like(n)
    if scheme == "one_to_all":
        return 2.0 * (n - 1.0)
    raise SriftyError(f"unknown Paleo allreduce scheme '{scheme}'; use one of {', '.join(SCHEMES)}.")


class PaleoBandwidthModel:
    """Paleo's allreduce time, averaged over ``schemes``, as bus bandwidth (bytes/s) per row.

    Args:
        schemes: which of :data:`SCHEMES` to average (by time).
        default_network_gbps: link bandwidth between VMs where the row has no rating.
        ppp_comm: Paleo's platform percent of peak for communication (1.0 in its defaults).
        catalog: where the GPUs' intra-VM link bandwidths come from (default: the bundled catalog).
    """

    def __init__(
        self,
        schemes: Sequence[str] = ("tree", "ring"),
        default_network_gbps: float = 10.0,
        ppp_comm: float = 1.0,
        catalog: Catalog | None = None,
    ) -> None:
        for scheme in schemes:
            link_transfers(scheme, np.ones(1))
        if not schemes:
            raise SriftyError("PaleoBandwidthModel needs at least one scheme")
        if default_network_gbps <= 0 or not 0 < ppp_comm <= 1:
            raise SriftyError("default_network_gbps must be positive and ppp_comm in (0, 1]")
        self.schemes = tuple(schemes)
        self.default_network_gbps = default_network_gbps
        self.ppp_comm = ppp_comm
        self.catalog = catalog

    def _intra_node_bytes_per_s(self, gpu: Any) -> float:
        specs = (self.catalog or load_catalog()).gpu_specs
        spec = specs.get(str(gpu)) if gpu is not None else None
        if spec is None:
            return PCIE3_X16_BYTES_PER_S
        per_gpu = spec.link_bytes_per_s_per_gpu
        return per_gpu / 2.0 if spec.intra_node_link.startswith("nvlink") else per_gpu

    def link_bytes_per_s(self, frame: Any) -> NDArray[np.float64]:
        """Per row, the bandwidth of the link the allreduce crosses (network between VMs, else the GPU link)."""
        world = np.asarray(frame["world_size"], dtype=float)
        rows = len(world)
        per_node = _column(frame, "gpus_per_node", rows)
        nodes = _column(frame, "n_nodes", rows)
        nodes = np.where(np.isnan(nodes), np.ceil(world / np.where(np.isnan(per_node), 1.0, per_node)), nodes)
        rated = _column(frame, "rated_network_gbps", rows)
        network = gbps_to_bytes_per_s(1.0) * np.where(np.isnan(rated), self.default_network_gbps, rated)
        gpus = list(frame["gpu"]) if _has(frame, "gpu") else [None] * rows
        intra = np.asarray([self._intra_node_bytes_per_s(g) for g in gpus], dtype=float)
        return np.where(nodes > 1, network, intra)

    def predict_time_s(self, frame: Any) -> NDArray[np.float64]:
        """Paleo's allreduce time per row: the mean over ``schemes`` of ``transfers · s / (B · ppp_comm)``."""
        size = np.asarray(frame["size_bytes"], dtype=float)
        world = np.asarray(frame["world_size"], dtype=float)
        if np.any(size < 0) or np.any(world < 1):
            raise SriftyError("allreduce rows need size_bytes >= 0 and world_size >= 1")
        one_link_s = size / (self.link_bytes_per_s(frame) * self.ppp_comm)
        return np.mean([link_transfers(s, world) * one_link_s for s in self.schemes], axis=0)

    def predict_busbw_bytes_per_s(self, frame: Any) -> NDArray[np.float64]:
        """Bus bandwidth ``2·s·(n−1)/(n·t)`` of Paleo's averaged time; a single worker gets its link bandwidth."""
        size = np.asarray(frame["size_bytes"], dtype=float)
        world = np.asarray(frame["world_size"], dtype=float)
        time_s = self.predict_time_s(frame)
        link = self.link_bytes_per_s(frame)
        ok = (world > 1) & (time_s > 0)
        busbw = np.divide(2.0 * size * (world - 1.0), world * time_s, out=np.zeros_like(size), where=ok)
        return np.where(ok, busbw, link)


def _has(frame: Any, column: str) -> bool:
    try:
        frame[column]
    except (KeyError, IndexError):
        return False
    return True


def _column(frame: Any, column: str, rows: int) -> NDArray[np.float64]:
    if not _has(frame, column):
        return np.full(rows, math.nan)
    return np.asarray(frame[column], dtype=float)
