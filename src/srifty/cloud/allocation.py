"""One allocation: a draw of VM placement for a configuration (EMULATED).

Renting VMs puts them on hosts and racks the user does not see. An :class:`Allocation` stands for one such
draw: an allocation-wide network bandwidth factor and per-hop latency, and for each VM a compute speed
factor (spatial variance) and a link factor (its host's share of the network). Factors are drawn from
per-group streams keyed by the instance type and market, so a configuration with more VMs of a type sees
the same first VMs as one with fewer (common random numbers across configurations).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from srifty.cloud.params import CloudParams
from srifty.vocab import Config, ConfigGroup


@dataclass(frozen=True)
class GroupDraw:
    """The VMs of one configuration group in one allocation.

    Attributes:
        key: ``"<instance type>/<market>"``.
        spatial_factor: per VM, multiplier on every compute latency (1 = as the truth's mean).
        link_factor: per VM, fraction of the family's achievable network bandwidth its host gives it (≤ 1).
    """

    key: str
    spatial_factor: NDArray[np.float64]
    link_factor: NDArray[np.float64]


@dataclass(frozen=True)
class Allocation:
    """One emulated placement of a configuration's VMs.

    Attributes:
        allocation_id: a label, unique per draw.
        stream_seed: the seed the per-group draws came from (the iteration noise of a run derives from
            the caller's generator, not from this).
        bandwidth_factor: allocation-wide multiplier on every VM's achievable bandwidth (≤ 1).
        hop_latency_s: one network hop's latency in this allocation.
        groups: one draw per configuration group, in the configuration's order.
    """

    allocation_id: str
    stream_seed: int
    bandwidth_factor: float
    hop_latency_s: float
    groups: tuple[GroupDraw, ...]

    def group(self, key: str) -> GroupDraw:
        """The draw of the group ``key`` (``"type/market"``)."""
        for g in self.groups:
            if g.key == key:
                return g
        raise KeyError(key)


def group_key(group: ConfigGroup) -> str:
    """``"<instance type>/<market>"``: how a group's VMs are found in an allocation."""
    return f"{group.instance.name}/{group.market}"


def _stream(seed: int, key: str, part: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(key.encode()), part])


def draw_group(seed: int, key: str, count: int, params: CloudParams) -> GroupDraw:
    """Per-VM factors of ``count`` VMs of group ``key``; the first ``k`` VMs do not depend on ``count``."""
    clip = params.compute_clip
    spatial = _stream(seed, key, 0).normal(1.0, params.compute_spatial_sigma, size=count)
    link = 1.0 - _stream(seed, key, 1).exponential(params.host_link_exp_scale, size=count)
    return GroupDraw(
        key=key,
        spatial_factor=np.clip(spatial, 1.0 - clip, 1.0 + clip),
        link_factor=np.maximum(link, params.host_link_min),
    )


def draw_allocation(config: Config, rng: np.random.Generator, params: CloudParams) -> Allocation:
    """A new placement draw for every VM of ``config``.

    The allocation-wide bandwidth factor is ``min + (1 − min)·Beta(a, b)``, the per-hop latency is the
    median latency times ``LogNormal(0, σ)`` (see :class:`~srifty.cloud.params.CloudParams`).
    """
    seed = int(rng.integers(0, 2**63 - 1))
    a, b = params.allocation_bandwidth_beta
    bandwidth = params.allocation_bandwidth_min + (1.0 - params.allocation_bandwidth_min) * float(rng.beta(a, b))
    latency = params.hop_latency_s * float(rng.lognormal(0.0, params.allocation_latency_sigma))
    groups = tuple(draw_group(seed, group_key(g), g.count, params) for g in config.groups)
    return Allocation(f"emu-{seed:016x}", seed, bandwidth, latency, groups)
