"""FSDP/HSDP simulation: the per-unit timeline, the unit shares, and sharded configurations end to end."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.compute.profile import ParamInfo
from srifty.errors import SpecError
from srifty.sim import SimOptions, Simulator
from srifty.sim.fsdp import unit_shares
from srifty.sim.timeline import Transfer, UnitSteps, run_timeline
from srifty.vocab import Config, ConfigGroup
from tests.factories import ConstantBusBandwidth, instance, synthetic_profile


def _units(n: int, fw: float, bwd: float, size: float, busbw: float) -> list[UnitSteps]:
    move = Transfer(size, busbw)
    root = UnitSteps(fw, bwd, move, None, (move,))
    return [root] + [UnitSteps(fw, bwd, move, move, (move,)) for _ in range(n - 1)]


def test_without_transfers_the_iteration_is_the_compute() -> None:
    units = [UnitSteps(0.01, 0.02, None, None, ()) for _ in range(4)]
    result = run_timeline(units, 0.005, [1e9])
    assert result.end_s == pytest.approx(4 * 0.03 + 0.005)
    assert result.forward_end_s == pytest.approx(0.04) and result.comm_end_s == 0.0


def test_the_first_gather_is_exposed_and_the_rest_overlap_compute() -> None:
    # gathers take 1 ms against 10 ms of compute per unit: only the very first gather waits
    units = _units(5, 0.01, 0.02, 1e6, 1e9)
    result = run_timeline(units, 0.0, [1e12])
    assert result.forward_end_s == pytest.approx(0.001 + 5 * 0.01)
    # the last reduce-scatter (1 ms) follows the last backward
    assert result.end_s == pytest.approx(0.001 + 5 * 0.03 + 0.001, rel=1e-6)


def test_a_communication_bound_iteration_is_at_least_every_gather_in_a_row() -> None:
    units = _units(6, 0.001, 0.002, 1e8, 1e9)  # 100 ms per transfer against 1-2 ms of compute
    result = run_timeline(units, 0.0, [1e12])
    gathers = 6 + 5  # forward, and again for every block but the root in backward
    assert result.end_s >= gathers * 0.1 - 1e-9
    assert result.end_s >= 6 * 0.1  # the reduce-scatters
    assert result.end_s <= (gathers + 6) * 0.1 + 6 * 0.003 + 1e-9


def test_two_transfers_on_one_link_share_its_cap() -> None:
    # with a cap of one transfer's rate, gathers and reduce-scatters in backward cannot overlap for free
    units = _units(6, 0.001, 0.002, 1e8, 1e9)
    shared = run_timeline(units, 0.0, [1e9]).end_s
    free = run_timeline(units, 0.0, [1e12]).end_s
    assert shared > free
    # on different links (HSDP's gathers inside a VM, its allreduces between VMs) they do not share
    split = [dataclasses.replace(u, reduce=tuple(dataclasses.replace(t, link=1) for t in u.reduce)) for u in units]
    assert run_timeline(split, 0.0, [1e9, 1e9]).end_s == pytest.approx(free)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 12),
    fw_ms=st.floats(0.1, 50),
    mib=st.floats(0.01, 200),
    gbps=st.floats(0.5, 400),
    faster=st.floats(1.0, 10.0),
)
def test_more_bandwidth_is_never_slower_and_never_below_the_compute(
    n: int, fw_ms: float, mib: float, gbps: float, faster: float
) -> None:
    slow = _units(n, fw_ms / 1e3, 2 * fw_ms / 1e3, mib * 2**20, gbps * 1.25e8)
    fast = _units(n, fw_ms / 1e3, 2 * fw_ms / 1e3, mib * 2**20, gbps * 1.25e8 * faster)
    a = run_timeline(slow, 0.001, [gbps * 1.25e8 * 1.5])
    b = run_timeline(fast, 0.001, [gbps * 1.25e8 * faster * 1.5])
    assert b.end_s <= a.end_s * (1 + 1e-9)
    assert a.end_s >= a.compute_s - 1e-12 and b.end_s >= b.compute_s - 1e-12


def _block_profile(blocks: int = 8, block_mib: float = 16.0, root_mib: float = 32.0, **phases):  # type: ignore[no-untyped-def]
    profile = synthetic_profile(param_mib=(root_mib,) + (block_mib,) * blocks, **phases)
    n = blocks + 1
    params = [ParamInfo("embed.weight", int(root_mib * 2**18), int(root_mib * 2**20), "float32", 1.0)]
    for i in range(blocks):  # the last block's gradient is ready first
        frac = (blocks - i) / (blocks + 1)
        params.append(ParamInfo(f"layers.{i}.w", int(block_mib * 2**18), int(block_mib * 2**20), "float32", frac))
    return profile.with_changes(params=tuple(params), ready_order=tuple(range(n - 1, -1, -1)))


def test_unit_shares_follow_the_gradient_timeline() -> None:
    shares = unit_shares(_block_profile())
    assert shares.units[0].is_root and [u.key for u in shares.units[1:]] == [f"layers.{i}" for i in range(8)]
    assert sum(shares.fw) == pytest.approx(1.0) and sum(shares.bwd) == pytest.approx(1.0)
    assert all(s > 0 for s in shares.bwd)


def _config(count: int, gpus: int, batch: int, parallelism: str, gbps: float = 25.0) -> Config:
    vm = instance(name=f"test.{gpus}gpu", gpus=gpus, gbps=gbps)
    return Config((ConfigGroup(vm, count, batch),), parallelism=parallelism)  # type: ignore[arg-type]


def test_sharded_configurations_simulate_and_sharding_costs_communication() -> None:
    profile = _block_profile()
    sim = Simulator({"T4": profile}, ConstantBusBandwidth(2e9), SimOptions(iters=50))
    rng = np.random.default_rng(0)
    ddp = sim.simulate(_config(4, 1, 8, "ddp"), rng)
    fsdp = sim.simulate(_config(4, 1, 8, "fsdp"), rng)
    assert fsdp.parallelism == "fsdp" and ddp.parallelism == "ddp"
    assert fsdp.n_transfers == 2 * 9  # a gather and a reduce-scatter per unit
    assert fsdp.iter_mean_s >= fsdp.fw_mean_s + fsdp.bwd_mean_s
    hsdp = sim.simulate(_config(2, 4, 8, "hsdp"), rng)
    assert hsdp.n_transfers == 3 * 9  # and an allreduce of each shard between the VMs
    # faster links never slow a sharded configuration down
    quick = Simulator({"T4": profile}, ConstantBusBandwidth(2e10), SimOptions(iters=50))
    assert quick.simulate(_config(4, 1, 8, "fsdp"), np.random.default_rng(0)).iter_mean_s <= fsdp.iter_mean_s


def test_one_gpu_sharded_over_itself_moves_nothing() -> None:
    profile = _block_profile()
    sim = Simulator({"T4": profile}, ConstantBusBandwidth(1e9), SimOptions(iters=20, spread_scale=0.0))
    result = sim.simulate(_config(1, 1, 8, "fsdp"), np.random.default_rng(0))
    compute = result.fw_mean_s + result.bwd_mean_s + result.step_mean_s
    assert result.iter_mean_s == pytest.approx(compute, rel=1e-6)


def test_config_carries_its_sharding() -> None:
    config = _config(2, 4, 8, "ddp")
    assert config.shard_size == 1 and config.sharding_env() == {}
    fsdp = config.sharded("fsdp", checkpointing=True)
    assert fsdp.shard_size == 8 and fsdp.notation() == config.notation()
    assert fsdp.sharding_env() == {
        "SRIFTY_PARALLELISM": "fsdp",
        "SRIFTY_SHARD_GROUP_SIZE": "8",
        "SRIFTY_ACTIVATION_CHECKPOINTING": "1",
    }
    assert "fsdp over 8 GPUs, activation checkpointing" in fsdp.describe()
    assert config.sharded("hsdp").shard_size == 4 and fsdp.placed("test-1a").parallelism == "fsdp"
    mixed = (ConfigGroup(instance(name="a", gpus=4), 1, 8), ConfigGroup(instance(name="b", gpus=8), 1, 8))
    with pytest.raises(SpecError, match="same number of GPUs"):
        Config(mixed, parallelism="hsdp")


def test_a_heterogeneous_sharded_iteration_waits_for_the_type_its_own_compute_slows_most() -> None:
    """As for DDP (test_interference): a type with less compute whose collectives its compute slows x4 finishes
    after the slowest-compute type, which measured no slowdown, and the iteration waits for it."""
    from tests.test_interference import CAPPED, measurement

    none = measurement(dataclasses.replace(CAPPED, bwd_with_comm_ms=300.0, comm_with_compute_ms=100.0))
    strong = measurement(dataclasses.replace(CAPPED, bwd_with_comm_ms=300.0, comm_with_compute_ms=400.0))
    base = _block_profile(cv=0.0, fw=(0.0, 20.0), bwd=(0.0, 200.0), gpu=None)
    big, small = instance("big.vm", gpu="cpu"), instance("small.vm", gpu="cpu")
    config = Config((ConfigGroup(big, 1, 32), ConfigGroup(small, 1, 16)), parallelism="fsdp")  # type: ignore[arg-type]

    def simulate(small_record):  # type: ignore[no-untyped-def]
        profiles = {
            "big.vm": base.with_changes(interference=none),
            "small.vm": base.with_changes(interference=small_record),
        }
        return Simulator(profiles, ConstantBusBandwidth(1e9), SimOptions(iters=20)).simulate(
            config, np.random.default_rng(0)
        )

    slowest_only, both = simulate(None), simulate(strong)
    assert slowest_only.slowest_group == both.slowest_group == "1xbig.vm@32"
    assert "wait for every type" not in slowest_only.iteration_model
    assert "wait for every type" in both.iteration_model and "1xsmall.vm@16: backward x1.00" in both.iteration_model
    assert both.iter_mean_s > slowest_only.iter_mean_s * 1.2
