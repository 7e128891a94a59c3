"""One allocation: a draw of VM placement for a configuration (EMULATED).

Renting VMs puts them on hosts, racks and zones the user does not see. An :class:`Allocation` stands for one
such draw: an allocation-wide network bandwidth factor (median 1: the tables' allocation) and latency factor,
whether the cloud spread it over racks, and for each VM a compute speed factor (spatial variance) and a link
factor (its host's share of the network). Factors are drawn from per-group streams keyed by the instance type
and market, so a configuration with more VMs of a type sees
the same first VMs as one with fewer (common random numbers across configurations). A configuration may
hold several groups of one type and market (an uneven split: some VMs at one local batch, the rest at
another); they are consecutive VMs of that type's draw (:func:`group_offsets`).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
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
        bandwidth_factor: allocation-wide multiplier on every VM's network bandwidth (median 1).
        latency_factor: allocation-wide multiplier on the network's latency (median 1).
        spread_draw: uniform draw; the allocation is spread over racks when it is below its fabric's
            ``spread_probability``.
        groups: one draw per type and market of the configuration, in the order they first appear.
    """

    allocation_id: str
    stream_seed: int
    bandwidth_factor: float
    latency_factor: float
    spread_draw: float
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


def group_offsets(config: Config) -> list[int]:
    """Where each group's VMs start within its type and market's draw (0 unless an earlier group of
    ``config`` has the same type and market)."""
    seen: dict[str, int] = {}
    out = []
    for g in config.groups:
        key = group_key(g)
        out.append(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + g.count
    return out


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


@dataclass(frozen=True)
class PlacementDraw:
    """The allocation-wide part of a placement draw (see :class:`Allocation`)."""

    seed: int
    bandwidth_factor: float
    latency_factor: float
    spread_draw: float


def _median_bandwidth(params: CloudParams) -> float:
    from scipy import stats

    a, b = params.allocation_bandwidth_beta
    low = params.allocation_bandwidth_min
    return low + (1.0 - low) * float(stats.beta.median(a, b))


def draw_placement(rng: np.random.Generator, params: CloudParams) -> PlacementDraw:
    """The allocation-wide factors: bandwidth ``min + (1 − min)·Beta(a, b)`` over its median, latency
    ``LogNormal(0, σ)``, and the uniform draw that decides spreading (see
    :class:`~srifty.cloud.params.CloudParams`)."""
    seed = int(rng.integers(0, 2**63 - 1))
    a, b = params.allocation_bandwidth_beta
    low = params.allocation_bandwidth_min
    bandwidth = (low + (1.0 - low) * float(rng.beta(a, b))) / _median_bandwidth(params)
    latency = float(rng.lognormal(0.0, params.allocation_latency_sigma))
    spread = float(rng.random())
    return PlacementDraw(seed, bandwidth, latency, spread)


GroupDrawer = Callable[[int, str, int], GroupDraw]


def allocation_for(
    config: Config, placement: PlacementDraw, params: CloudParams, drawer: GroupDrawer | None = None
) -> Allocation:
    """``config``'s VMs in ``placement``; ``drawer(seed, key, count)`` draws a type's VMs (default
    :func:`draw_group`; a cache may stand in, since the first ``k`` VMs never depend on ``count``)."""
    draw = drawer or (lambda seed, key, count: draw_group(seed, key, count, params))
    counts: dict[str, int] = {}
    for g in config.groups:
        counts[group_key(g)] = counts.get(group_key(g), 0) + g.count
    groups = tuple(draw(placement.seed, key, count) for key, count in counts.items())
    return Allocation(
        f"emu-{placement.seed:016x}",
        placement.seed,
        placement.bandwidth_factor,
        placement.latency_factor,
        placement.spread_draw,
        groups,
    )


def draw_allocation(config: Config, rng: np.random.Generator, params: CloudParams) -> Allocation:
    """A new placement draw for every VM of ``config``."""
    return allocation_for(config, draw_placement(rng, params), params)
