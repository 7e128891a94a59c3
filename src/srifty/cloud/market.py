"""VM launch times and spot preemptions in the emulated cloud (EMULATED; assumptions in
:mod:`srifty.cloud.params`).

* Launch: ``offset + LogNormal(ln median, σ)`` seconds, by default 70 + 50·e^N(0, 0.35): median 120 s,
  mean about 123 s, 90% between about 98 and 159 s. The paper planned with 150 s and saw 95–138 s.
* Preemption: each spot VM is preempted at the first event of a Poisson process whose rate per VM-hour
  depends on its family; on-demand VMs are never preempted. A VM is preempted at most once (it is gone).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from srifty.cloud.params import CloudParams
from srifty.units import SECONDS_PER_HOUR
from srifty.vocab import Config


@dataclass(frozen=True)
class Preemption:
    """One spot VM taken back.

    Attributes:
        time_s: seconds after the configuration started.
        group_index: which group of the configuration.
        vm_index: which VM of that group (0-based).
        instance_type: its type.
    """

    time_s: float
    group_index: int
    vm_index: int
    instance_type: str


def launch_time_s(rng: np.random.Generator, params: CloudParams) -> float:
    """One VM launch, from request to ready (s)."""
    return params.launch_offset_s + params.launch_median_s * float(rng.lognormal(0.0, params.launch_sigma))


def preemption_times(
    config: Config, horizon_s: float, rng: np.random.Generator, params: CloudParams
) -> tuple[Preemption, ...]:
    """Preemptions of ``config``'s spot VMs within ``horizon_s`` seconds, earliest first."""
    events: list[Preemption] = []
    for gi, group in enumerate(config.groups):
        if group.market != "spot":
            continue
        rate_per_s = params.preemption_rate_per_vm_hour(group.instance.name) / SECONDS_PER_HOUR
        if rate_per_s <= 0:
            continue
        first = rng.exponential(1.0 / rate_per_s, size=group.count)
        events.extend(Preemption(float(t), gi, vi, group.instance.name) for vi, t in enumerate(first) if t <= horizon_s)
    return tuple(sorted(events, key=lambda e: (e.time_s, e.group_index, e.vm_index)))
