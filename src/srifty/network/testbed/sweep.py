"""Collect a probe set on the testbed: for each instance family and each allocation, bring a testbed up
(a fresh placement draw), probe every requested world size, and take it down again.

World sizes map to hosts through the family's GPUs per VM: a 4-GPU family runs 4 processes per host,
so world size 8 is 2 hosts. World sizes that are not a multiple of the GPUs per VM are skipped.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from srifty.network.dataset import exclusive_lock
from srifty.network.errors import TestbedError
from srifty.network.testbed.launch import RateVariation, launch
from srifty.network.testbed.namespaces import DEFAULT_SCALE, Family, down, up
from srifty.network.testbed.state import STATE_DIR


@dataclass(frozen=True)
class SweepPlan:
    """What to collect.

    Attributes:
        families: the instance families to represent.
        allocations: testbed draws (placements) per family.
        world_sizes: world sizes to probe in each allocation.
        probe_args: extra ``srifty probe`` options (sizes, repeats, concurrency …).
        out: the Parquet file every probe appends to.
        scale: emulation scale (links run at rating / scale).
        seed: base seed; each (family, allocation) draws from its own seed derived from it.
        variation: temporal rate variation during each probe, or ``None``.
        name: the testbed name to use (it must not be up already).
        timeout_s: limit of each probe launch.
        lock_file: if given, each probe launch holds an exclusive ``flock`` on this file, so that it
            never overlaps other timing runs on a shared machine that take the same lock.
        first_allocation: index of the first allocation (to resume an interrupted sweep with the same
            placement seeds).
    """

    families: tuple[Family, ...]
    allocations: int
    world_sizes: tuple[int, ...]
    probe_args: tuple[str, ...]
    out: Path
    scale: float = DEFAULT_SCALE
    seed: int = 0
    variation: RateVariation | None = None
    name: str = "sweep"
    timeout_s: float = 3600.0
    lock_file: Path | None = None
    first_allocation: int = 0


def hosts_for(world_sizes: Sequence[int], gpus_per_host: int) -> list[int]:
    """Host counts that give the requested world sizes with ``gpus_per_host`` processes each."""
    return sorted({w // gpus_per_host for w in world_sizes if w % gpus_per_host == 0 and w >= gpus_per_host})


def allocation_seed(base: int, family: str, index: int) -> int:
    """A stable seed per (family, allocation), independent of the order families are listed in."""
    return (base * 1_000_003 + zlib.crc32(family.encode()) * 101 + index) % (2**32)


def run_sweep(plan: SweepPlan, on_step: Callable[[str], None] = lambda _: None, state_dir: Path = STATE_DIR) -> int:
    """Run the plan; returns the number of probe launches. ``on_step`` receives progress lines.

    Raises:
        TestbedError: a family fits no requested world size, or a launch failed (the testbed is taken
            down first; rows already appended stay in ``plan.out``).
    """
    launches = 0
    for family in plan.families:
        counts = [c for c in hosts_for(plan.world_sizes, family.gpus_per_host) if c * family.gpus_per_host >= 2]
        if not counts:
            raise TestbedError(
                f"no requested world size ({list(plan.world_sizes)}) fits {family.instance_type} with "
                f"{family.gpus_per_host} GPUs per VM; ask for multiples of {family.gpus_per_host} "
                "(at least 2)."
            )
        for index in range(plan.first_allocation, plan.first_allocation + plan.allocations):
            seed = allocation_seed(plan.seed, family.instance_type, index)
            state = up(plan.name, max(counts), family, plan.scale, seed, state_dir=state_dir)
            rates = ", ".join(f"{h.shaped_gbps * 1000:.0f}" for h in state.hosts)
            on_step(f"{family.instance_type} allocation #{index}: host Mbit/s {rates}")
            try:
                for n_hosts in counts:
                    on_step(f"  world size {n_hosts * family.gpus_per_host} on {n_hosts} host(s)")
                    with exclusive_lock(plan.lock_file) if plan.lock_file else nullcontext():
                        launch(
                            plan.name,
                            ["probe", "--out", str(plan.out), *plan.probe_args],
                            n_hosts=n_hosts,
                            timeout_s=plan.timeout_s,
                            variation=None
                            if plan.variation is None
                            else replace(plan.variation, seed=plan.variation.seed + seed + n_hosts),
                            state_dir=state_dir,
                        )
                    launches += 1
            finally:
                down(plan.name, state_dir=state_dir)
    return launches
