"""The per-GPU memory model of DDP, FSDP and HSDP (srifty.compute.sharding) and the plan's memory checks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.compute import MemoryModel
from srifty.compute.profile import ParamInfo
from srifty.compute.sharding import (
    MemoryInputs,
    MemoryOptions,
    backward_peak,
    forward_peak,
    gpu_options,
    max_batch_for,
    memory_inputs,
    memory_line,
    min_shard_size,
    peak_memory,
    sharding_units,
    step_peak,
    turn_anchored_line,
    unit_key,
    usable_bytes,
)
from srifty.errors import ProfileError
from tests.factories import synthetic_profile

GIB = 2**30


def test_units_are_the_numbered_blocks_then_the_root() -> None:
    assert unit_key("model.layers.3.mlp.up_proj.weight") == "model.layers.3"
    assert unit_key("layer1.0.conv1.weight") == "layer1.0"
    assert unit_key("lm_head.weight") == "" and unit_key("fc.3") == ""  # a trailing index is a tensor, not a block
    params = [
        ParamInfo("embed.weight", 100, 400, "float32", 1.0),
        ParamInfo("layers.0.w", 10, 40, "float32", 0.6),
        ParamInfo("layers.0.b", 1, 4, "float32", 0.55),
        ParamInfo("layers.1.w", 10, 40, "float32", 0.2),
        ParamInfo("head.weight", 100, 400, "float32", 0.0),
    ]
    units = sharding_units(params)
    assert [u.key for u in units] == ["layers.0", "layers.1", ""]
    assert [u.numel for u in units] == [11, 10, 200]
    assert units[0].bwd_start_frac == 0.55 and units[0].bwd_end_frac == 0.6
    assert units[-1].is_root and units[-1].params == (0, 4)


def _inputs(**changes: float) -> MemoryInputs:
    base = MemoryInputs(
        n_params=1_000_000_000,
        param_bytes=4e9,
        optimizer_bytes=8e9,
        compute_param_bytes_each=2.0,
        largest_tensor_bytes=5e8,
        root_numel=200_000_000,
        max_unit_numel=50_000_000,
        n_units=17,
        workspace_bytes=1e9,
        per_sample_bytes=2e9,
        checkpointed_per_sample_bytes=3e8,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_ddp_holds_the_whole_state_and_a_bucket_copy_of_the_gradients() -> None:
    inputs = _inputs()
    forward = forward_peak(inputs, MemoryOptions(), 2)
    assert forward.total_bytes == pytest.approx(4e9 + 8e9 + 4e9 + 1e9 + 2 * 2e9)
    assert forward.buffers_bytes == 4e9 and forward.phase == "forward"
    step = step_peak(inputs, gpu_options("ddp"))
    assert step.total_bytes == pytest.approx(4e9 + 4e9 + 8e9 + 4e9 + 4e9)  # params, grads, Adam, foreach, buckets
    assert peak_memory(inputs, gpu_options("ddp"), 0).phase == "step"


def test_fsdp_shards_the_state_and_gathers_the_root_and_two_blocks() -> None:
    inputs = _inputs()
    forward = forward_peak(inputs, gpu_options("fsdp", 8), 1)
    gathered = 2.0 * (200e6 + 50e6)
    assert forward.parameters_bytes == pytest.approx(4e9 / 8 + gathered)
    assert forward.gradients_bytes == pytest.approx(2.0 * 50e6)
    assert forward.optimizer_bytes == pytest.approx(8e9 / 8)
    assert step_peak(inputs, gpu_options("fsdp", 8)).total_bytes == pytest.approx((4e9 + 4e9 + 8e9 + 4e9) / 8)


def test_checkpointed_fsdp_peaks_in_backward_with_done_gradients_a_prefetch_and_a_reduce_scatter_buffer() -> None:
    # 16 blocks of 50 M parameters (fp32 kept, bf16 gathered), a 200 M root, sharded over 8, batch 1: at block
    # 1 of 16 the root and two blocks are gathered (block 1, block 0 ahead), block 2's fp32 gradient waits for
    # its reduce-scatter, block 1's own fp32 gradient accumulates, and 14 blocks' gradients are done (a shard each)
    inputs = _inputs()
    options = gpu_options("fsdp", 8, checkpointing=True)
    backward = backward_peak(inputs, options, 1)
    assert backward is not None and backward.phase == "backward"
    assert backward.parameters_bytes == pytest.approx(4e9 / 8 + 2.0 * (200e6 + 2 * 50e6))
    assert backward.gradients_bytes == pytest.approx(14 * 4.0 * 50e6 / 8 + 4.0 * 50e6)
    assert backward.buffers_bytes == pytest.approx(4.0 * 50e6)
    assert backward.activations_bytes == pytest.approx(3e8) and backward.workspace_bytes == pytest.approx(1e9)
    assert backward.total_bytes == pytest.approx(4.15e9)
    assert peak_memory(inputs, options, 1) == backward  # above the turn (3.4e9) and the step (2.5e9)
    assert forward_peak(inputs, options, 1).total_bytes == pytest.approx(3.4e9)
    # DDP holds every gradient at its first block (the 15 done, its own accumulating), the whole state, buckets
    ddp = backward_peak(inputs, MemoryOptions("ddp", 1, True), 1)
    assert ddp is not None and ddp.total_bytes == pytest.approx(4e9 + 16 * 2e8 + 8e9 + 4e9 + 3e8 + 1e9)
    # without checkpointing backward holds at least the checkpointed activations; the turn stays the peak
    plain = backward_peak(inputs, gpu_options("fsdp", 8), 2)
    assert plain is not None and plain.activations_bytes == pytest.approx(2 * 3e8)
    assert peak_memory(inputs, gpu_options("fsdp", 8), 2).phase == "forward"
    # two blocks: at block 0 nothing to prefetch, block 1's gradient reducing and its shard done, block 0's own
    # accumulating (3.725e9) beat block 1, which has no reduce-scatter waiting and nothing done (3.6e9)
    two = backward_peak(_inputs(n_units=3), options, 1)
    assert two is not None and two.total_bytes == pytest.approx(
        4e9 / 8 + 2.0 * (200e6 + 50e6) + 4.0 * 50e6 / 8 + 4.0 * 50e6 + 4.0 * 50e6 + 8e9 / 8 + 3e8 + 1e9
    )
    assert backward_peak(_inputs(n_units=1, max_unit_numel=0), options, 1) is None  # the root alone


def test_checkpointing_prices_the_turn_and_the_blocks_backward_each_with_its_own_activations() -> None:
    # a profile that measured them apart: 1.2 GB a sample at the turn (the head's logits), 0.3 GB in the blocks
    inputs = _inputs(checkpointed_turn_per_sample_bytes=1.2e9)
    options = gpu_options("fsdp", 8, checkpointing=True)
    assert forward_peak(inputs, options, 4).activations_bytes == pytest.approx(4 * 1.2e9)
    backward = backward_peak(inputs, options, 4)
    assert backward is not None and backward.activations_bytes == pytest.approx(4 * 3e8)
    assert peak_memory(inputs, options, 4).phase == "forward"  # 3.4e9 - 3e8 + 4.8e9 against 3.95e9 + 9e8
    # the largest batch is bounded by the turn's line now
    room = usable_bytes(24 * GIB)
    batch = max_batch_for(inputs, options, 24 * GIB)
    assert batch == int((room - forward_peak(inputs, options, 0).total_bytes) // 1.2e9)
    # never more than without checkpointing; a profile that did not measure it apart: one A for both
    assert forward_peak(_inputs(checkpointed_turn_per_sample_bytes=5e9), options, 1).activations_bytes == 2e9
    assert forward_peak(_inputs(), options, 4).activations_bytes == pytest.approx(4 * 3e8)


def test_the_largest_batch_is_bounded_by_the_backward_moment_under_checkpointing() -> None:
    inputs = _inputs()
    options = gpu_options("fsdp", 8, checkpointing=True)
    capacity = 24 * GIB
    batch = max_batch_for(inputs, options, capacity)
    room = usable_bytes(capacity)
    at_zero = backward_peak(inputs, options, 0)
    assert at_zero is not None
    assert batch == int((room - at_zero.total_bytes) // 3e8)  # the backward line binds, not the turn's
    assert peak_memory(inputs, options, batch).total_bytes <= room < peak_memory(inputs, options, batch + 1).total_bytes


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(1, 512),
    batch=st.integers(0, 64),
    per_sample=st.floats(1e6, 1e10),
    ckpt=st.booleans(),
)
def test_more_shards_never_need_more_memory_and_fsdp_never_more_than_ddp(
    d: int, batch: int, per_sample: float, ckpt: bool
) -> None:
    inputs = _inputs(per_sample_bytes=per_sample, checkpointed_per_sample_bytes=per_sample / 4)
    ddp = peak_memory(inputs, MemoryOptions("ddp", 1, ckpt), batch).total_bytes
    one = peak_memory(inputs, MemoryOptions("fsdp", d, ckpt), batch).total_bytes
    two = peak_memory(inputs, MemoryOptions("fsdp", d + 1, ckpt), batch).total_bytes
    assert two <= one + 1e-3
    # sharding over one GPU still gathers blocks, but never holds DDP's bucket copy
    assert one <= ddp + 2.0 * (inputs.root_numel + 2 * inputs.max_unit_numel)
    if ckpt:
        assert one <= peak_memory(inputs, MemoryOptions("fsdp", d, False), batch).total_bytes + 1e-3


@settings(max_examples=60, deadline=None)
@given(capacity_gib=st.floats(8, 300), strategy=st.sampled_from(["ddp", "fsdp", "hsdp"]), d=st.integers(1, 64))
def test_the_largest_batch_fits_and_one_more_does_not(capacity_gib: float, strategy: str, d: int) -> None:
    inputs = _inputs()
    options = gpu_options(strategy, d)  # type: ignore[arg-type]
    capacity = capacity_gib * GIB
    batch = max_batch_for(inputs, options, capacity)
    room = usable_bytes(capacity)
    if batch == 0:
        assert peak_memory(inputs, options, 0).total_bytes > room or peak_memory(inputs, options, 1).total_bytes > room
    else:
        assert peak_memory(inputs, options, batch).total_bytes <= room + 1
        assert peak_memory(inputs, options, batch + 1).total_bytes > room


def test_min_shard_size_is_the_fewest_gpus_that_hold_one_sample() -> None:
    inputs = _inputs()
    needed = min_shard_size(inputs, 16 * GIB)
    assert needed > 1
    assert max_batch_for(inputs, gpu_options("fsdp", needed), 16 * GIB) >= 1
    assert max_batch_for(inputs, gpu_options("fsdp", needed - 1), 16 * GIB) == 0
    # a block that alone overflows the GPU cannot be sharded into fitting
    assert min_shard_size(_inputs(max_unit_numel=20_000_000_000), 24 * GIB) == 0


def test_a_profile_gives_the_inputs_from_its_forward_peaks() -> None:
    profile = synthetic_profile(param_mib=(64.0, 64.0))
    # Adam: 8 bytes a parameter; forward peaks measured apart from the step: 2 GiB + 10 MiB a sample
    profile = profile.with_changes(
        optimizer="adam",
        extra={"forward_memory_points": [[1, 2 * GIB + 10 * 2**20], [4, 2 * GIB + 40 * 2**20]]},
    )
    inputs = memory_inputs(profile)
    assert inputs.per_sample_bytes == pytest.approx(10 * 2**20)
    assert inputs.workspace_bytes == pytest.approx(2 * GIB - 128 * 2**20 - 256 * 2**20)
    # an older profile: the whole iteration's line
    older = memory_inputs(profile.with_changes(extra={}, memory=MemoryModel(3 * GIB, 5 * 2**20)))
    assert older.per_sample_bytes == 5 * 2**20 and older.workspace_bytes == pytest.approx(3 * GIB - 384 * 2**20)


def test_the_forward_line_is_fitted_only_through_the_peaks_above_the_plateau() -> None:
    # 128 MiB of parameters with Adam: one process holds 512 MiB at the end of backward whatever the batch
    profile = synthetic_profile(param_mib=(64.0, 64.0)).with_changes(optimizer="adam")
    mib = 2**20
    plateau = (2 * 128 + 256) * mib
    turn = [[4, 384 * mib + 2 * mib + 4 * 50 * mib], [8, 384 * mib + 2 * mib + 8 * 50 * mib]]  # W 2 MiB, A 50
    on_plateau = [[1, plateau + 0.1 * mib], [2, plateau + 0.3 * mib]]  # the turn is below the plateau there
    inputs = memory_inputs(profile.with_changes(extra={"forward_memory_points": on_plateau + turn}))
    assert inputs.per_sample_bytes == pytest.approx(50 * mib)
    assert inputs.workspace_bytes == pytest.approx(2 * mib)
    assert inputs == memory_inputs(profile.with_changes(extra={"forward_memory_points": turn}))
    apart = {"checkpointed_per_sample_bytes": 3 * mib, "checkpointed_turn_per_sample_bytes": 7 * mib}
    checkpointed = memory_inputs(profile.with_changes(extra={"forward_memory_points": turn, **apart}))
    assert checkpointed.checkpointed_per_sample_bytes == 3 * mib
    assert checkpointed.checkpointed_turn_per_sample_bytes == 7 * mib
    # the line through every point, as before the plateau was known, flattens A and lifts W
    everything = memory_line(on_plateau + turn, 0.0)
    assert everything[1] < 45 * mib and everything[0] - 384 * mib > 20 * mib


def test_the_checkpointed_turn_anchors_the_intercept_where_plateau_points_would_lift_it() -> None:
    """res_mlp (issue 25's blind model): activations small against the state, so the turn leaves the plateau
    only at the largest batch, and a peak 1.4 % above it (batch 4: the end of backward with the loss) passed the
    plateau filter and lifted W by 12 MB. The checkpointed turn (no gradient yet) gives the intercept; the slope
    comes from the peaks the turn can reach above the plateau."""
    mib = 2**20
    state = 384.0 * mib  # parameters 128 MiB and Adam's 256 MiB
    plateau = state + 128 * mib
    a_per_sample = 30.0 * mib
    forward = [[1, plateau + 0.2 * mib], [2, plateau + 0.5 * mib], [4, plateau * 1.014], [8, state + 8 * a_per_sample]]
    turn = [[4, state + 4 * 2 * mib], [8, state + 8 * 2 * mib]]  # W 0, checkpointed A 2 MiB
    intercept, slope = turn_anchored_line(forward, turn, plateau)
    assert intercept == pytest.approx(state) and slope == pytest.approx(a_per_sample)
    assert memory_line(forward, plateau)[0] - state > 20 * mib  # the free line: batch 4's plateau point lifts W
    profile = synthetic_profile(param_mib=(64.0, 64.0)).with_changes(optimizer="adam")
    anchored = memory_inputs(
        profile.with_changes(extra={"forward_memory_points": forward, "checkpointed_turn_memory_points": turn})
    )
    assert anchored.workspace_bytes == pytest.approx(0.0, abs=1.0) and anchored.per_sample_bytes == pytest.approx(
        a_per_sample
    )
    # two peaks the turn reaches: the least-squares slope through the anchored intercept of both
    both = [[1, plateau], [6, state + 6 * 31 * mib], [8, state + 8 * 29 * mib]]
    assert turn_anchored_line(both, turn, plateau)[1] == pytest.approx((6 * 6 * 31 + 8 * 8 * 29) / 100 * mib)


def test_fewer_than_two_peaks_above_the_plateau_fall_back_to_the_line_through_every_point() -> None:
    mib = 2**20
    plateau = 512.0 * mib
    points = [[1, plateau + 0.1 * mib], [2, plateau + 0.2 * mib], [8, 700.0 * mib]]
    slope, intercept = np.polyfit([1.0, 2.0, 8.0], [v for _, v in points], 1)
    assert memory_line(points, plateau) == pytest.approx((intercept, slope))
    # a peak within PLATEAU_MARGIN (1 %) above the plateau is taken to be on it; one beyond it is not
    near = [[1, plateau + 0.1 * mib], [4, plateau * 1.009], [8, 700.0 * mib]]
    assert memory_line(near, plateau) == pytest.approx(
        tuple(np.polyfit([1.0, 4.0, 8.0], [v for _, v in near], 1))[::-1]
    )
    beyond = [[1, plateau + 0.1 * mib], [4, plateau * 1.02], [8, 700.0 * mib]]
    assert memory_line(beyond, plateau)[1] == pytest.approx((700.0 * mib - plateau * 1.02) / 4)
    # nothing above it: the flat line of the plateau (slope never negative)
    assert memory_line([[1, plateau + 0.2 * mib], [2, plateau]], plateau) == pytest.approx((plateau + 0.4 * mib, 0.0))
    with pytest.raises(ProfileError, match="two or more batch sizes"):
        memory_line([[4, 1.0], [4, 2.0]], 0.0)


def _big_profile(tmp_path: Path, gpu: str) -> Path:
    """A 2.1 B-parameter model of 24 blocks (fp32, Adam) as if measured on ``gpu``: 34 GiB of model state, DDP
    fits no GPU under 80 GB."""
    blocks = tuple(f"layers.{i}.w" for i in range(24))
    profile = synthetic_profile(param_mib=(300.0,) * 24 + (900.0,), gpu=gpu, model="tests.factories:big")
    names = (*blocks, "head.weight")
    params = tuple(dataclasses.replace(p, name=n) for p, n in zip(profile.params, names, strict=True))
    profile = profile.with_changes(
        params=params,
        optimizer="adam",
        memory=MemoryModel(40 * GIB, 200 * 2**20),
        extra={"forward_memory_points": [[1, 36 * GIB + 200 * 2**20], [2, 36 * GIB + 400 * 2**20]]},
    )
    return profile.save(tmp_path / f"big-{gpu}.json")


def test_a_ddp_spec_for_a_model_that_fits_no_gpu_exits_2_naming_the_memory_and_what_would_fit(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    _big_profile(tmp_path, "A10G")
    _big_profile(tmp_path, "T4")
    spec = {
        "model": {"name": "tests.factories:big", "profiles": ["big-A10G.json", "big-T4.json"]},
        "global_batch": 64,
        "iterations": 100,
        "goal": "min_cost",
        "region": "us-east-1",
        "parallelism": "ddp",
        "candidates": [
            {"instance_type": "g5.12xlarge", "market": "on_demand", "quota": 8},
            {"instance_type": "g4dn.12xlarge", "market": "on_demand", "quota": 8},
        ],
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, _, err = cli("plan", str(path))
    text = " ".join(err.split())
    assert code == 2, err
    assert "memory binds" in text and "does not fit one GPU with DDP" in text
    assert "GiB" in text and "A10G (g5.12xlarge)" in text  # the largest GPU on offer
    assert "`parallelism: fsdp` over at least" in text and "DDP on a GPU with at least" in text
    assert "Traceback" not in err


def test_spec_fields_for_strategies(tmp_path: Path) -> None:
    from srifty.errors import SpecError
    from srifty.spec import spec_from_mapping

    base = {"model": "resnet50", "global_batch": 64, "iterations": 10, "goal": "min_time"}
    spec = spec_from_mapping(base)
    assert spec.parallelism == "auto" and spec.activation_checkpointing == "auto"
    spec = spec_from_mapping({**base, "parallelism": "fsdp", "activation_checkpointing": True})
    assert spec.parallelism == "fsdp" and spec.activation_checkpointing == "on"
    with pytest.raises(SpecError, match="parallelism must be one of 'auto', 'ddp', 'fsdp', 'hsdp'"):
        spec_from_mapping({**base, "parallelism": "zero3"})


def test_auto_shards_a_model_ddp_cannot_hold_and_the_plan_names_the_strategy(tmp_path: Path) -> None:
    from srifty.plan.api import plan_spec

    _big_profile(tmp_path, "A10G")
    spec = {
        "model": {"name": "tests.factories:big", "profiles": ["big-A10G.json"]},
        "global_batch": 64,
        "iterations": 100,
        "goal": "min_cost",
        "region": "us-east-1",
        "candidates": [{"instance_type": "g5.12xlarge", "market": "on_demand", "quota": 8}],
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec))
    plan, _ = plan_spec(path)
    assert plan.best is not None and plan.best.config.parallelism in ("fsdp", "hsdp")
    best = plan.to_dict()["best"]
    assert best["parallelism"] == plan.best.config.parallelism and best["shard_group_size"] >= 4
    assert 0 < best["memory_peak_bytes"] <= best["memory_usable_bytes"]
    # what does not fit is never chosen nor on the Pareto front
    assert all("memory" not in s.violations for s in plan.pareto)
    ddp_only = [s for s in plan.evaluated if s.config.parallelism == "ddp"]
    assert all("memory" in s.violations for s in ddp_only)


def test_done_gradients_are_the_finished_blocks_own_sizes_never_more_than_the_parameters() -> None:
    """Blocks of unequal size (XLM's 48 units: feed-forward 33.6 M, attention and norms less): the gradients
    held when backward reaches block ``k`` are those of blocks ``k+1 …``, not ``n−1−k`` of the largest, which
    counted 2.3 times XLM's parameters and made DDP look out of memory on a T4."""
    blocks = (30, 10, 10, 10, 30, 10)  # millions of parameters; root 100 M
    n_params = (sum(blocks) + 100) * 1_000_000
    inputs = dataclasses.replace(
        _inputs(),
        n_params=n_params,
        param_bytes=4.0 * n_params,
        root_numel=100_000_000,
        max_unit_numel=30_000_000,
        n_units=len(blocks) + 1,
        block_numels=tuple(b * 1_000_000 for b in blocks),
    )
    walk = backward_peak(inputs, gpu_options("ddp"), batch=1)
    assert walk is not None
    # at block 0, every later one is done and block 0's own accumulates
    assert walk.gradients_bytes == pytest.approx(4.0 * sum(blocks) * 1e6)
    assert walk.gradients_bytes < inputs.param_bytes
    unknown = dataclasses.replace(inputs, block_numels=())
    old = backward_peak(unknown, gpu_options("ddp"), batch=1)
    assert old is not None and old.gradients_bytes == pytest.approx(4.0 * 6 * 30e6)  # the largest, six times


def test_the_checkpointed_walk_bounds_the_activations_held_beside_more_gradients_than_it_held() -> None:
    """issue 25's blind conv_tower: the one process's checkpointed blocks'-backward peak came at the first block
    backward (every block's input still held, no gradient yet), so beside more gradients the activations are
    what that peak leaves: ``A·b − (G_k − G*)``."""
    options = gpu_options("fsdp", 8, checkpointing=True)
    unknown = backward_peak(_inputs(), options, 1)
    assert unknown is not None and unknown.total_bytes == pytest.approx(4.15e9)  # block 1, with A·b = 3e8
    # G* = every gradient: the walk peaked at the first block, nothing to bound
    every = backward_peak(_inputs(checkpointed_walk_gradient_bytes=16 * 2e8), options, 1)
    assert every == unknown
    # G* = 0: at block 1, 15 blocks' gradients (3e9) exceed it, so no activation is left beside them
    none = backward_peak(_inputs(checkpointed_walk_gradient_bytes=0.0), options, 1)
    assert none is not None and none.activations_bytes == 0.0
    assert none.total_bytes == pytest.approx(4.15e9 - 3e8)
    ddp = backward_peak(_inputs(checkpointed_walk_gradient_bytes=0.0), MemoryOptions("ddp", 1, True), 1)
    assert ddp is not None and ddp.total_bytes == pytest.approx(4e9 + 16 * 2e8 + 8e9 + 4e9 + 1e9)
    # without checkpointing the walk says nothing
    plain = backward_peak(_inputs(checkpointed_walk_gradient_bytes=0.0), gpu_options("fsdp", 8), 1)
    assert plain == backward_peak(_inputs(), gpu_options("fsdp", 8), 1)


def test_the_walk_gradients_are_read_off_the_walk_line() -> None:
    mib = 2**20
    profile = synthetic_profile(param_mib=(64.0, 64.0)).with_changes(optimizer="adam")
    state = 384.0 * mib
    forward = [[4, state + 4 * 30 * mib], [8, state + 8 * 30 * mib]]
    turn = [[4, state + 4 * 2 * mib], [8, state + 8 * 2 * mib]]
    walk = [[4, state + 10 * mib + 4 * 130 * mib], [8, state + 10 * mib + 8 * 130 * mib]]  # 10 MiB of gradients
    extra = {"forward_memory_points": forward, "checkpointed_turn_memory_points": turn}
    inputs = memory_inputs(profile.with_changes(extra={**extra, "checkpointed_blocks_memory_points": walk}))
    assert inputs.checkpointed_walk_gradient_bytes == pytest.approx(10 * mib)
    assert memory_inputs(profile.with_changes(extra=extra)).checkpointed_walk_gradient_bytes is None
