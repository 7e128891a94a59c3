"""A bus-bandwidth model for one allocation, corrected by a probe of its links.

A plan is made before any VM exists, so its bandwidth is the model's: what the configuration's types give
over the allocations the model learned from. One allocation differs from that by where its VMs landed: on
EC2 up to 1.8x on large buffers (the paper's Figure 1), on the testbed a noise floor of 20.5 % MAPE above the
MTU between allocations of the same configuration (BENCHMARKS.md, "Testbed: held-out allocations"). A
prediction made before the VMs exist cannot know which allocation it will get; the paper names this as the
first source of its own error. Once the VMs are up, a short ``srifty probe`` on them (large messages, one
transfer at a time, a few repeats: seconds) measures this allocation, and :func:`probe_allocation` reduces it
to three things:

* its **ratio to the model at each probed size** above the MTU: ``measured / predicted`` bus bandwidth,
  *measured* the median of the size's repeats, *predicted* what the simulator asks the model for this
  configuration (:func:`~srifty.sim.netquery.config_busbw_bytes_per_s`); its **level**, the median of those
  ratios in log, is the one-number summary;
* its **saturated bus bandwidth**: the largest of those per-size medians, the allocation's ``b_cap`` (the
  paper's "each VM instance has a limited total bus bandwidth");
* its **spread**: quantiles of ``log(repeat / its size's median)``, the allocation's own variation from one
  transfer to the next.

:class:`AllocationModel` predicts the model's bus bandwidth times the allocation's ratio at that size, never
above the saturated one: between probed sizes the ratio is interpolated in log size, beyond them it is the
nearest probed size's (a 90 MB bucket takes the ratio measured at 16 MiB, not the median over 1-16 MiB, which
small messages pull down where an allocation's ring is still latency-bound).
The ceiling matters for ``b_cap``, which the simulator takes as the largest prediction over message sizes: a
learned curve can peak above anything measured (the embedded default's g4dn.2xlarge curve does, at 128 KiB,
where the testbed's token bucket lets short bursts through). The model's spread between allocations is
replaced by the probe's spread within this one.

Assumed: the ratio to the model changes smoothly with size and stays beyond the probed sizes at the nearest
one's; the allocation is the same at the world size probed; the probe ran on the job's VMs (ideally under the
job's CPU budget, which can slow gloo's side of a transfer).

Pure: numpy, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.catalog import InstanceType
from srifty.errors import SriftyError
from srifty.sim.netquery import SPREAD_LEVELS, BusBandwidthModel, config_busbw_bytes_per_s
from srifty.vocab import DEFAULT_MTU_BYTES

#: What to run on the VMs when a probe set has nothing usable (sizes above the MTU, one transfer at a time).
PROBE_HINT = "torchrun … -m srifty.cli.main probe --min-size 1MiB --max-size 16MiB --concurrency 1 --repeats 5"


@dataclass(frozen=True)
class AllocationProbe:
    """One allocation's links as a probe measured them, against the model's prediction for them.

    Attributes:
        level: measured over predicted bus bandwidth above the MTU (median over sizes of the log ratio).
        saturated_busbw_bytes_per_s: the largest per-size median bus bandwidth measured (bytes/s).
        spread_log: quantiles at :data:`~srifty.sim.netquery.SPREAD_LEVELS` of ``log(repeat / its size's
            median)`` over every repeat above the MTU (all zero when no size was repeated).
        sizes_bytes: the probed sizes used (bytes), ascending.
        log_ratio_by_size: ``log(measured / predicted)`` at each of ``sizes_bytes`` (the median repeat).
        rows: probe rows used.
        world_size: the world size probed.
        n_nodes: the VMs probed.
    """

    level: float
    saturated_busbw_bytes_per_s: float
    spread_log: tuple[float, ...]
    sizes_bytes: tuple[float, ...]
    log_ratio_by_size: tuple[float, ...]
    rows: int
    world_size: int
    n_nodes: int

    def summary(self) -> str:
        """One line for a person: the level, the ceiling and what they came from."""
        low, high = (math.exp(f(self.log_ratio_by_size)) for f in (min, max))
        return (
            f"allocation probed: bus bandwidth x{self.level:.2f} the model's (x{low:.2f}-{high:.2f} by size), at most "
            f"{self.saturated_busbw_bytes_per_s * 8 / 1e9:.3g} Gbps ({self.rows} rows, {len(self.sizes_bytes)} sizes "
            f"above the MTU, world size {self.world_size} on {self.n_nodes} VMs)"
        )


def _column(probes: Any, name: str) -> NDArray[Any] | None:
    return np.asarray(probes[name]) if name in getattr(probes, "columns", ()) else None


def probe_allocation(
    model: BusBandwidthModel,
    probes: Any,
    instances: Sequence[InstanceType],
    mtu_bytes: int = DEFAULT_MTU_BYTES,
) -> AllocationProbe:
    """Compare a probe of one allocation with what ``model`` predicts for its configuration.

    Args:
        model: the bus-bandwidth model the simulator would use (its units are the probe's: bytes/s).
        probes: a probe set (``srifty probe`` rows, e.g. from :func:`srifty.network.read_probes`) of the
            allocation: ``size_bytes``, ``busbw_bytes_per_s``, ``world_size``, ``n_nodes`` and, where present,
            ``collective`` and ``n_concurrent``. Allreduce rows above the MTU with one transfer at a time
            are used.
        instances: the configuration's instance types, as the simulator will ask the model about them.
        mtu_bytes: the MTU (bytes); smaller messages are left out (their time is latency, not the link).

    Raises:
        SriftyError: no usable row, rows of several world sizes, or non-positive bandwidths.
    """
    if not instances:
        raise SriftyError("no instance types to compare the allocation probe with")
    for name in ("size_bytes", "busbw_bytes_per_s", "world_size", "n_nodes"):
        if _column(probes, name) is None:
            raise SriftyError(f"the allocation probe has no '{name}' column; pass a probe set written by srifty probe")
    sizes = np.asarray(probes["size_bytes"], dtype=float)
    busbw = np.asarray(probes["busbw_bytes_per_s"], dtype=float)
    keep = (sizes > mtu_bytes) & np.isfinite(busbw) & (busbw > 0)
    collective = _column(probes, "collective")
    if collective is not None:
        keep &= collective.astype(str) == "allreduce"
    concurrent = _column(probes, "n_concurrent")
    if concurrent is not None:
        keep &= np.asarray(concurrent, dtype=float) == 1
    if not keep.any():
        raise SriftyError(
            f"the allocation probe has no allreduce row above the MTU ({mtu_bytes} B) with one transfer at a time; "
            f"probe the VMs with: {PROBE_HINT}"
        )
    worlds = {
        (int(w), int(n))
        for w, n in zip(np.asarray(probes["world_size"])[keep], np.asarray(probes["n_nodes"])[keep], strict=True)
    }
    if len(worlds) > 1:
        listed = ", ".join(f"{w} ranks on {n} VMs" for w, n in sorted(worlds))
        raise SriftyError(
            f"the allocation probe spans several world sizes ({listed}); pass the rows of the job's own world size"
        )
    ((world_size, n_nodes),) = worlds
    sizes, busbw = sizes[keep], busbw[keep]
    unique = np.unique(sizes)
    medians = np.array([np.median(busbw[sizes == s]) for s in unique])
    predicted = config_busbw_bytes_per_s(model, unique, world_size, n_nodes, instances)
    log_ratios = np.log(medians / predicted)
    level = math.exp(float(np.median(log_ratios)))
    residuals = np.log(busbw / medians[np.searchsorted(unique, sizes)])
    spread = np.quantile(residuals, SPREAD_LEVELS) if len(residuals) > len(unique) else np.zeros(len(SPREAD_LEVELS))
    return AllocationProbe(
        level=level,
        saturated_busbw_bytes_per_s=float(medians.max()),
        spread_log=tuple(float(q) for q in spread),
        sizes_bytes=tuple(float(s) for s in unique),
        log_ratio_by_size=tuple(float(r) for r in log_ratios),
        rows=len(sizes),
        world_size=world_size,
        n_nodes=n_nodes,
    )


class AllocationModel:
    """``base``'s bus bandwidth on one probed allocation: times its ratio at the size (interpolated in log size
    between probed sizes, the nearest one's beyond them), at most its saturated value.

    Offers what the simulator asks a bus-bandwidth model for: :meth:`predict_busbw_bytes_per_s` and
    :meth:`residual_quantiles` (the probe's spread, the same for every transfer).
    """

    def __init__(self, base: BusBandwidthModel, probe: AllocationProbe) -> None:
        self.base = base
        self.probe = probe
        self.predicts_intra_node = bool(getattr(base, "predicts_intra_node", False))

    def predict_busbw_bytes_per_s(self, frame: Any) -> NDArray[np.float64]:
        """Bus bandwidth (bytes/s) per row: the base model's times the allocation's ratio at the row's size,
        capped at the saturated value."""
        base = np.asarray(self.base.predict_busbw_bytes_per_s(frame), dtype=float)
        base, sizes = np.broadcast_arrays(base, np.asarray(frame["size_bytes"], dtype=float))
        probed = np.log(self.probe.sizes_bytes)
        log_ratio = np.interp(np.log(np.maximum(sizes, 1.0)), probed, self.probe.log_ratio_by_size)
        return np.minimum(base * np.exp(log_ratio), self.probe.saturated_busbw_bytes_per_s)

    def residual_quantiles(self, frame: Any, levels: ArrayLike) -> NDArray[np.float64]:
        """Quantiles of ``log(measured / predicted)`` at ``levels`` for each row: the probe's spread."""
        wanted = np.atleast_1d(np.asarray(levels, dtype=float))
        row = np.interp(wanted, SPREAD_LEVELS, self.probe.spread_log)
        return np.tile(row, (np.atleast_1d(np.asarray(frame["size_bytes"])).size, 1))
