"""Per-GPU memory of each data-parallel strategy, and the sharding units FSDP wraps.

**Units.** FSDP (``fully_shard``) is applied to each repeated block of a model (a transformer layer, a
ResNet bottleneck) and then to the model itself, whose own parameters (embeddings, the head, norms outside
the blocks) form the *root* unit. A block is found from parameter names alone: the prefix up to the first
all-digit path component (``model.layers.3.mlp.up_proj.weight`` belongs to ``model.layers.3``); a name
without one belongs to the root. :mod:`srifty.torch.fsdp` wraps exactly these units, so what is planned is
what runs.

**Memory.** Bytes per GPU at local batch ``b``, with ``P`` parameters of ``p`` bytes each (the profile's
``param_bytes``), an optimizer keeping ``o`` bytes per parameter (Adam 8, SGD with momentum 4), activations ``A·b``
and a workspace ``W``, from the line through the forward-and-backward peaks the profiler measured apart from the
optimizer step (:func:`forward_line`): ``A`` is its slope (or the slope measured with every block checkpointed: at
the turn, and apart while backward runs the blocks, where the profile measured them apart), ``W`` its intercept less
the parameters, the optimizer state and, under autocast, the cast copy of the weights (what else lives at the peak:
inputs, workspace, allocator slack). Where the profile measured the checkpointed turn apart, the intercept is that
turn's and the slope is fitted through it (:func:`turn_anchored_line`). The line is fitted only through the peaks
above the *plateau* ``2·P·p + P·o`` (:func:`memory_line`): one process holds every gradient with its parameters and
optimizer state at the end of backward, so at small batches (and under checkpointing) its forward-and-backward peak
is that moment, not the turn the line stands for, and such points would lift ``W`` and flatten ``A``. ``d`` is the
sharding group (``fsdp``: every GPU; ``hsdp``: the GPUs of one VM); ``c`` the bytes of a parameter as the forward
computes with it (2 under bf16/fp16 mixed precision, else ``p``); ``U_root`` and ``U_max`` the root's and the
largest block's parameter counts. Two moments of the iteration can be the peak:
* ``ddp``: forward/backward ``P·p + P·o + G + W + A·b`` and step ``P·p + P·o + 2·G + t``, where ``G = P·p``
  is both the gradients and DDP's communication buckets (``gradient_as_bucket_view=False``, DDP's default,
  keeps a copy of every gradient in its buckets) and ``t`` the optimizer's temporaries;
* ``fsdp`` / ``hsdp``: forward/backward ``(P·p + P·o)/d + c·(U_root + 2·U_max) + W + A·b`` (the root's
  parameters stay gathered through forward and backward; at the turn from forward to backward one block is
  gathered, and the first block's unsharded gradient waits for its reduce-scatter, as ``FSDPMemTracker``
  sees FSDP2 hold them) and step ``(P·p + P·o + G)/d + t/d``.

A third moment, later in backward (:func:`backward_peak`), is the peak under activation checkpointing, where ``A``
is small (there the blocks' own checkpointed ``A``: the inputs not yet consumed and one recomputed block's
activations; at the turn the turn's: every checkpointed input and the head's activations, which a wide vocabulary
makes the larger). Backward runs the ``n`` blocks from last to first; while block ``k`` (``0`` the first) is
recomputed and differentiated, FSDP holds, besides its shard and ``W + A·b``: the root and block ``k`` gathered,
block ``k−1`` gathered ahead (the backward prefetch, for ``k ≥ 1``), block ``k+1``'s gradient as the input of its
reduce-scatter (``p`` bytes a parameter: fp32, for ``k ≤ n−2``; FSDP2 keeps it until the next reduce-scatter is
issued), block ``k``'s own unsharded gradient as it accumulates (``p·U_max``) and the sharded gradients of the
``n−1−k`` blocks done, ``p·U_max/d`` each: ``(P·p + P·o)/d + c·(U_root + U_max + [k≥1]·U_max) + [k≤n−2]·p·U_max +
p·U_max + (n−1−k)·p·U_max/d + W + A·b``. DDP holds the whole state, its buckets, block ``k``'s gradient and the
gradients of the blocks done: ``2·P·p + P·o + (n−k)·p·U_max + W + A·b``. The largest over ``k`` is taken (the
expression is linear in ``k`` between its edges, so ``k`` in {0, 1, n−2, n−1} suffices). Block ``k``'s own gradient
was left out until two blind models (issue 25) showed the small-batch FSDP peaks under-predicted by about one
block's gradient. Where the profile lists every block's size (blocks of unequal size: a ResNet's stages), the
gathered, prefetched and reducing blocks are the blocks themselves, not the largest, and every ``k`` is weighed.
Where the profile measured the one process's peak while backward ran each block
(``extra["checkpointed_block_walk_points"]``), the activations at block ``k`` are that block's own line through the
batches: what the process held beyond its state, ``W`` and the gradients of blocks ``k …`` (:func:`_block_lines`;
issue 25's blind round 3, a staged ResNet whose early blocks hold the most activations and whose last block is the
largest). Otherwise, under checkpointing, the profile's line through the one process's blocks'-backward peaks
(``extra["checkpointed_blocks_memory_points"]``) also tells which moment it measured: its intercept less the state
and ``W`` is the gradients held then, ``G*`` (``checkpointed_walk_gradient_bytes``). At a block whose gradients
exceed ``G*`` the activations are bounded by that peak: ``A·b − (G_k − G*)``; the block nearest ``G*`` joins the
moments weighed. Without it, a model whose checkpointed inputs are a large share of its activations (a convolutional
tower, issue 25's blind round 2: every block's input still held when the first block backward runs, few gradients
yet) was priced with its largest activations beside every gradient. Not counted: the root's gradients made before
the blocks' (the head's), (``W`` is measured at the turn, before any gradient). Without checkpointing the same
moments are priced with the checkpointed ``A`` (what backward holds at least: checkpointing only frees activations),
or with ``W`` alone where that was not measured; there the turn from forward to backward, every activation held, is
the peak.

``t`` is Adam's temporaries (SGD with momentum updates in place, ``t = 0``): two copies of the largest
parameter tensor in the single-tensor step torch runs on a CPU; one copy of the (sharded) parameters in the
``foreach`` step torch runs on a GPU, which plans for GPUs take (:func:`gpu_options`). A GPU also loses memory
to the CUDA context and fragmentation (:data:`~srifty.compute.memory.DEFAULT_USABLE_FRACTION`,
``DEFAULT_GPU_RESERVE_BYTES``).

Assumptions: every parameter is trained; the optimizer's state is fp32 (``o`` does not shrink under mixed
precision, PyTorch's defaults); FSDP keeps fp32 master parameters and gradients, and reduces in fp32
(``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``); activations per sample are the same under
every strategy (their dtype is the profile's precision). Pure: no torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from srifty.compute.memory import DEFAULT_GPU_RESERVE_BYTES, DEFAULT_USABLE_FRACTION
from srifty.compute.profile import ParamInfo, Profile
from srifty.errors import ProfileError

Strategy = Literal["ddp", "fsdp", "hsdp"]
STRATEGIES: tuple[Strategy, ...] = ("ddp", "fsdp", "hsdp")
#: Bytes of optimizer state per parameter (fp32): Adam's two moments, SGD's momentum buffer.
OPTIMIZER_STATE_BYTES: dict[str, float] = {"adam": 8.0, "adamw": 8.0, "sgd": 4.0}
#: Bytes per parameter of the copy the forward computes with under mixed precision.
HALF_BYTES = 2.0
HALF_PRECISIONS = frozenset({"bf16", "fp16"})
_INDEX = re.compile(r"^\d+$")
#: A forward-and-backward peak less than this fraction above the plateau (:func:`plateau_bytes`) is taken to
#: be on it (the end of backward plus the loss and the batch: 0.1-0.2 % above it on the CPU profiles measured).
PLATEAU_MARGIN = 0.01
#: What :func:`max_batch_for` answers when memory does not bound the batch.
UNBOUNDED_BATCH = 1 << 30


@dataclass(frozen=True)
class Unit:
    """One FSDP unit: a repeated block (``key`` is its module path) or the root (``key == ""``).

    Attributes:
        params: indices of its parameters in the profile's parameter list.
        numel: its parameters' elements.
        size_bytes: its parameters' bytes.
        bwd_start_frac: when its first gradient is ready, as a fraction of backward.
        bwd_end_frac: when its last gradient is ready (the unit's backward is done).
    """

    key: str
    params: tuple[int, ...]
    numel: int
    size_bytes: int
    bwd_start_frac: float
    bwd_end_frac: float

    @property
    def is_root(self) -> bool:
        """Whether this is the model's own (root) unit."""
        return self.key == ""


def unit_key(name: str) -> str:
    """The block a parameter belongs to: its name up to the first all-digit component (``""``: the root)."""
    parts = name.split(".")
    for i, part in enumerate(parts[:-1]):
        if _INDEX.match(part):
            return ".".join(parts[: i + 1])
    return ""


def sharding_units(params: Sequence[ParamInfo]) -> tuple[Unit, ...]:
    """The FSDP units of a model, blocks in the order their first parameter appears (forward order), then the
    root (empty when every parameter lies in a block)."""
    members: dict[str, list[int]] = {}
    for i, param in enumerate(params):
        members.setdefault(unit_key(param.name), []).append(i)
    blocks = [k for k in members if k]
    units = []
    for key in [*blocks, ""] if "" in members else blocks:
        idx = tuple(members[key])
        fracs = [params[i].ready_frac for i in idx]
        units.append(
            Unit(
                key,
                idx,
                sum(params[i].numel for i in idx),
                sum(params[i].size_bytes for i in idx),
                min(fracs),
                max(fracs),
            )
        )
    return tuple(units)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Predicted bytes per GPU at its peak, by what holds them.

    Attributes:
        parameters_bytes: parameters held (a shard, plus gathered units for FSDP).
        gradients_bytes: gradients held at the peak (at the turn from forward to backward: 0 under DDP,
            FSDP's unsharded gradient of the computing block; in a block's backward: its own gradient as it
            accumulates and the gradients of the blocks done, a shard of each under FSDP).
        optimizer_bytes: optimizer state (a shard under FSDP) plus the step's temporaries at a step peak.
        activations_bytes: activations kept for backward.
        buffers_bytes: communication buffers (DDP's gradient buckets; in a block's backward under FSDP, the
            previous block's gradient waiting as the input of its reduce-scatter).
        workspace_bytes: the measured rest (inputs, workspace, allocator slack).
        phase: ``"forward"`` (the turn from forward to backward), ``"backward"`` (a block's backward, see
            :func:`backward_peak`) or ``"step"``: which moment is the peak.
    """

    parameters_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    buffers_bytes: float
    workspace_bytes: float
    phase: str

    @property
    def total_bytes(self) -> float:
        """The peak: the sum of the parts."""
        return (
            self.parameters_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.buffers_bytes
            + self.workspace_bytes
        )

    def describe(self) -> str:
        """``"18.4 GiB (parameters 4.6, gradients 0, optimizer 9.2, activations 3.1, buffers 0, other 1.5)"``."""
        gib = 2.0**30
        parts = [
            ("parameters", self.parameters_bytes),
            ("gradients", self.gradients_bytes),
            ("optimizer", self.optimizer_bytes),
            ("activations", self.activations_bytes),
            ("buffers", self.buffers_bytes),
            ("other", self.workspace_bytes),
        ]
        inner = ", ".join(f"{name} {value / gib:.1f}" for name, value in parts)
        return f"{self.total_bytes / gib:.1f} GiB ({inner} GiB)"


@dataclass(frozen=True)
class MemoryInputs:
    """What the memory model needs of a profile (see the module docstring for the symbols).

    Attributes:
        n_params: ``P``.
        param_bytes: ``P·p``.
        optimizer_bytes: ``P·o``.
        compute_param_bytes_each: ``c``.
        largest_tensor_bytes: the largest parameter tensor (the CPU step's temporaries).
        root_numel: ``U_root``.
        max_unit_numel: ``U_max``.
        n_units: FSDP units (blocks and root).
        workspace_bytes: ``W``.
        per_sample_bytes: ``A`` without checkpointing.
        checkpointed_per_sample_bytes: ``A`` with each block checkpointed, where measured: while backward
            runs the blocks (in profiles that measured the turn apart; else the larger of both moments).
        checkpointed_turn_per_sample_bytes: ``A`` with each block checkpointed at the turn from forward to
            backward, where the profile measured it apart.
        checkpointed_walk_gradient_bytes: ``G*``, the gradients the one process held at its checkpointed
            blocks'-backward peak (that line's intercept less parameters, optimizer state, cast copy and ``W``),
            where the profile measured the walk apart.
        checkpointed_block_lines: per block (model order), ``(intercept, slope)`` in bytes and bytes a sample
            of what the one process held while backward ran that block, beyond its parameters, optimizer state,
            cast copy, ``W`` and the gradients of that block and those done (recomputed and checkpointed
            activations, the root's gradients, temporaries), where the profile measured every block's walk.
        step_makes_temporaries: the optimizer's step allocates temporaries (Adam's ``sqrt`` of its second
            moment); SGD with momentum updates in place.
        block_numels: each block's parameters, in model order (backward runs them last to first); empty where
            not known, and then every block counts as the largest.
    """

    n_params: int
    param_bytes: float
    optimizer_bytes: float
    compute_param_bytes_each: float
    largest_tensor_bytes: float
    root_numel: int
    max_unit_numel: int
    n_units: int
    workspace_bytes: float
    per_sample_bytes: float
    checkpointed_per_sample_bytes: float | None = None
    step_makes_temporaries: bool = True
    block_numels: tuple[int, ...] = ()
    checkpointed_turn_per_sample_bytes: float | None = None
    checkpointed_walk_gradient_bytes: float | None = None
    checkpointed_block_lines: tuple[tuple[float, float], ...] = ()

    @property
    def n_blocks(self) -> int:
        """The repeated blocks among the units (every unit but the root)."""
        return self.n_units - (1 if self.root_numel > 0 else 0)

    @property
    def param_bytes_each(self) -> float:
        """``p``: bytes of one parameter as kept (and, under FSDP, of one gradient as reduced)."""
        return self.param_bytes / max(self.n_params, 1)


def optimizer_state_bytes(optimizer: str) -> float:
    """Bytes of state per parameter that ``optimizer`` keeps.

    Raises:
        ProfileError: an optimizer the model does not know.
    """
    try:
        return OPTIMIZER_STATE_BYTES[optimizer]
    except KeyError:
        known = ", ".join(sorted(OPTIMIZER_STATE_BYTES))
        raise ProfileError(f"no memory model for optimizer '{optimizer}'; profile with one of {known}") from None


def plateau_bytes(param_bytes: float, optimizer_bytes: float) -> float:
    """``2·P·p + P·o``: what one process holds at the end of backward (parameters, every gradient, the
    optimizer's state), a floor under its forward-and-backward peak at every batch."""
    return 2.0 * param_bytes + optimizer_bytes


def above_plateau(points: Sequence[Sequence[float]], plateau: float) -> list[tuple[float, float]]:
    """The ``(batch, peak bytes)`` points above ``plateau`` by more than :data:`PLATEAU_MARGIN`."""
    return [(float(b), float(v)) for b, v in points if float(v) > plateau * (1.0 + PLATEAU_MARGIN)]


def memory_line(points: Sequence[Sequence[float]], plateau: float) -> tuple[float, float]:
    """``(intercept, slope)`` in bytes of the least-squares line through the ``(batch, peak bytes)`` points
    above ``plateau`` by more than :data:`PLATEAU_MARGIN` (the points on it measure the end of backward, not
    the moment the line stands for). Where fewer than two batches lie above it, the line through every point:
    the plateau lifts its intercept, so it errs high at small batches (a model the profile cannot tell more
    of; profile larger batches to leave the plateau). The slope is never negative.

    Raises:
        ProfileError: fewer than two distinct batches.
    """
    if len({float(b) for b, _ in points}) < 2:
        raise ProfileError("a memory line needs peak memory at two or more batch sizes")
    above = above_plateau(points, plateau)
    used = above if len({b for b, _ in above}) >= 2 else [(float(b), float(v)) for b, v in points]
    slope, intercept = np.polyfit([b for b, _ in used], [v for _, v in used], 1)
    return float(intercept), max(float(slope), 0.0)


def forward_line(profile: Profile) -> tuple[float, float]:
    """``(intercept, slope)`` in bytes of the forward-and-backward peak against the batch: :func:`memory_line`
    through the forward peaks the profiler measured apart from the optimizer step
    (``extra["forward_memory_points"]``), or, in profiles made before it did, the whole iteration's memory
    model (whose intercept then also holds what the step adds at small batches). Where the profile measured the
    checkpointed turn apart, the intercept is that turn's (:func:`turn_anchored_line`)."""
    points = profile.extra.get("forward_memory_points") if profile.extra else None
    if points and len({int(b) for b, _ in points}) >= 2:
        optimizer = optimizer_state_bytes(profile.optimizer) * profile.n_params
        plateau = plateau_bytes(float(profile.param_bytes), optimizer)
        turn = profile.extra.get("checkpointed_turn_memory_points")
        if turn and len({int(b) for b, _ in turn}) >= 2:
            return turn_anchored_line(points, turn, plateau)
        return memory_line(points, plateau)
    return profile.memory.base_bytes, profile.memory.per_sample_bytes


def turn_anchored_line(
    points: Sequence[Sequence[float]], turn_points: Sequence[Sequence[float]], plateau: float
) -> tuple[float, float]:
    """``(intercept, slope)`` of the forward-and-backward peak with the intercept measured at the checkpointed
    turn: the line through ``turn_points`` (the peak at the turn from forward to backward with every block
    checkpointed, which no gradient exists yet to lift onto the plateau) has the same intercept as the turn
    without checkpointing (parameters, optimizer state, ``W``); only the activations differ. The slope is then
    the least-squares slope through that intercept of the forward peaks the turn reaches above the plateau:
    starting from the largest batch's, a point counts where the line so far puts the turn above the plateau
    (a peak below it is the end of backward, whatever it measured). A model whose activations are small
    against its state (a residual MLP tower: the turn leaves the plateau only past batch 4) had its plateau
    points lift the free line's intercept by about 12 MB, every prediction with it."""
    intercept, _ = memory_line(turn_points, 0.0)
    pts = sorted((float(b), float(v)) for b, v in points)
    used = [pts[-1]]
    for _ in range(len(pts)):
        slope = sum(b * (v - intercept) for b, v in used) / sum(b * b for b, _ in used)
        reach = [(b, v) for b, v in pts if intercept + slope * b > plateau * (1.0 + PLATEAU_MARGIN)]
        if not reach or reach == used:
            break
        used = reach
    return intercept, max(slope, 0.0)


def memory_inputs(profile: Profile) -> MemoryInputs:
    """The memory model's inputs from a profile (its parameters, optimizer, precision and memory fit)."""
    units = sharding_units(profile.params)
    root = next((u.numel for u in units if u.is_root), 0)
    blocks = [u.numel for u in units if not u.is_root]
    param_bytes = float(profile.param_bytes)
    optimizer = optimizer_state_bytes(profile.optimizer) * profile.n_params
    half = profile.precision in HALF_PRECISIONS
    each = param_bytes / max(profile.n_params, 1)
    # Autocast keeps a half-precision copy of the weights through the forward: in the measured intercept,
    # but not under FSDP's mixed precision, which gathers half-precision parameters instead.
    cast_cache = HALF_BYTES * profile.n_params if half else 0.0
    intercept, per_sample = forward_line(profile)
    workspace = max(intercept - param_bytes - optimizer - cast_cache, 0.0)
    ckpt = profile.extra.get("checkpointed_per_sample_bytes") if profile.extra else None
    turn = profile.extra.get("checkpointed_turn_per_sample_bytes") if profile.extra else None
    walk = profile.extra.get("checkpointed_blocks_memory_points") if profile.extra else None
    walk_gradients = None
    if walk and len({int(b) for b, _ in walk}) >= 2:
        walk_intercept = memory_line(walk, plateau_bytes(param_bytes, optimizer))[0]
        walk_gradients = min(max(walk_intercept - param_bytes - optimizer - cast_cache - workspace, 0.0), param_bytes)
    block_lines = _block_lines(profile, blocks, param_bytes + optimizer + cast_cache + workspace, each)
    return MemoryInputs(
        n_params=profile.n_params,
        param_bytes=param_bytes,
        optimizer_bytes=optimizer,
        compute_param_bytes_each=HALF_BYTES if half else each,
        largest_tensor_bytes=float(max((p.size_bytes for p in profile.params), default=0)),
        root_numel=root,
        max_unit_numel=max(blocks, default=0),
        n_units=len(units),
        workspace_bytes=workspace,
        per_sample_bytes=per_sample,
        checkpointed_per_sample_bytes=None if ckpt is None else float(ckpt),
        step_makes_temporaries=profile.optimizer != "sgd",
        block_numels=tuple(blocks),
        checkpointed_turn_per_sample_bytes=None if turn is None else float(turn),
        checkpointed_walk_gradient_bytes=walk_gradients,
        checkpointed_block_lines=block_lines,
    )


def _block_lines(
    profile: Profile, blocks: Sequence[int], state_bytes: float, param_bytes_each: float
) -> tuple[tuple[float, float], ...]:
    """Per block, the line through what the one process held beyond its state (``state_bytes``) and the
    gradients of that block and those done, while backward ran it (``extra["checkpointed_block_walk_points"]``);
    empty where not measured at two batches or not for every block."""
    points = profile.extra.get("checkpointed_block_walk_points") if profile.extra else None
    if not points or len({int(b) for b, _ in points}) < 2 or any(len(peaks) != len(blocks) for _, peaks in points):
        return ()
    lines = []
    for k in range(len(blocks)):
        held = param_bytes_each * float(sum(blocks[k:]))
        xs = [float(b) for b, _ in points]
        ys = [float(peaks[k]) - state_bytes - held for _, peaks in points]
        slope, intercept = np.polyfit(xs, ys, 1)
        lines.append((float(intercept), max(float(slope), 0.0)))
    return tuple(lines)


@dataclass(frozen=True)
class MemoryOptions:
    """How the job runs, as far as memory goes.

    Attributes:
        strategy: ``ddp``, ``fsdp`` or ``hsdp``.
        shard_size: GPUs one copy of the model state is sharded over (1 for ``ddp``).
        checkpointing: activation checkpointing of every block.
        step_temporaries: ``"tensor"`` (the CPU's single-tensor step: two copies of the largest tensor) or
            ``"foreach"`` (a GPU's: one copy of the parameters it steps).
    """

    strategy: Strategy = "ddp"
    shard_size: int = 1
    checkpointing: bool = False
    step_temporaries: Literal["tensor", "foreach"] = "tensor"

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ProfileError(f"unknown strategy '{self.strategy}'; use one of {', '.join(STRATEGIES)}")
        if self.shard_size < 1 or (self.strategy == "ddp" and self.shard_size != 1):
            raise ProfileError(f"shard size {self.shard_size} does not fit strategy {self.strategy}")


def _checkpointed_per_sample(inputs: MemoryInputs) -> float:
    if inputs.checkpointed_per_sample_bytes is None:
        raise ProfileError(
            "this profile has no memory measured with activation checkpointing; profile again with "
            "`srifty profile --checkpointing` or turn checkpointing off"
        )
    return inputs.checkpointed_per_sample_bytes


def _per_sample(inputs: MemoryInputs, options: MemoryOptions) -> float:
    """Activation bytes a sample adds at the turn from forward to backward: ``A``; under checkpointing the
    turn's own checkpointed ``A`` where the profile measured it apart (never more than ``A``), else the one
    checkpointed ``A``."""
    if not options.checkpointing:
        return inputs.per_sample_bytes
    blocks = _checkpointed_per_sample(inputs)
    turn = inputs.checkpointed_turn_per_sample_bytes
    return blocks if turn is None else min(turn, inputs.per_sample_bytes)


def _backward_per_sample(inputs: MemoryInputs, options: MemoryOptions) -> float:
    """Activation bytes a sample adds while backward runs the blocks: the checkpointed ``A``; without
    checkpointing, at least that (where measured), as checkpointing only frees activations."""
    if options.checkpointing:
        return _checkpointed_per_sample(inputs)
    return min(inputs.checkpointed_per_sample_bytes or 0.0, inputs.per_sample_bytes)


def forward_peak(inputs: MemoryInputs, options: MemoryOptions, batch: float) -> MemoryBreakdown:
    """The peak around the end of forward and the start of backward, at local ``batch``.

    Raises:
        ProfileError: checkpointing asked for where the profile did not measure it.
    """
    activations = _per_sample(inputs, options) * batch
    if options.strategy == "ddp":
        return MemoryBreakdown(
            inputs.param_bytes,
            0.0,
            inputs.optimizer_bytes,
            activations,
            inputs.param_bytes,  # DDP's buckets: a copy of every gradient
            inputs.workspace_bytes,
            "forward",
        )
    d = float(options.shard_size)
    c = inputs.compute_param_bytes_each
    return MemoryBreakdown(
        inputs.param_bytes / d + c * (inputs.root_numel + inputs.max_unit_numel),
        c * inputs.max_unit_numel,
        inputs.optimizer_bytes / d,
        activations,
        0.0,
        inputs.workspace_bytes,
        "forward",
    )


def backward_peak(inputs: MemoryInputs, options: MemoryOptions, batch: float) -> MemoryBreakdown | None:
    """The peak while backward runs the blocks, at local ``batch`` (see the module docstring): the largest over
    the block ``k`` being differentiated. ``None`` for a model without blocks.

    Raises:
        ProfileError: checkpointing asked for where the profile did not measure it.
    """
    n = inputs.n_blocks
    if n < 1:
        return None
    per_sample = _backward_per_sample(inputs, options)
    block = inputs.param_bytes_each * inputs.max_unit_numel
    best: MemoryBreakdown | None = None
    # blocks of unequal sizes: any block can be the peak; equal ones: the expression is linear in k
    unequal = len(inputs.block_numels) == n and len(set(inputs.block_numels)) > 1
    moments = set(range(n)) if unequal else {0, 1, n - 2, n - 1} & set(range(n))
    lines = (
        inputs.checkpointed_block_lines if options.checkpointing and len(inputs.checkpointed_block_lines) == n else ()
    )
    walk_gradients = inputs.checkpointed_walk_gradient_bytes if options.checkpointing and not lines else None
    if lines:
        moments = set(range(n))
    if walk_gradients is not None:
        moments.add(_walk_moment(inputs, block))
    for k in sorted(moments):
        done, own = _done_bytes(inputs, k, block), _own_bytes(inputs, k)
        activations = per_sample * batch
        if lines:  # measured at this very block
            activations = max(lines[k][0] + lines[k][1] * batch, 0.0)
        elif walk_gradients is not None:  # the one process's walk peak bounds what else it held with more gradients
            activations = max(activations - max(done + own - walk_gradients, 0.0), 0.0)
        if options.strategy == "ddp":
            parts = (inputs.param_bytes, done + own, inputs.optimizer_bytes, inputs.param_bytes)
        else:
            d = float(options.shard_size)
            gathered = inputs.compute_param_bytes_each * (inputs.root_numel + _numel(inputs, k))
            if k >= 1:
                gathered += inputs.compute_param_bytes_each * _numel(inputs, k - 1)
            reducing = inputs.param_bytes_each * _numel(inputs, k + 1) if k <= n - 2 else 0.0
            parts = (inputs.param_bytes / d + gathered, done / d + own, inputs.optimizer_bytes / d, reducing)
        params, grads, optimizer, buffers = parts
        here = MemoryBreakdown(params, grads, optimizer, activations, buffers, inputs.workspace_bytes, "backward")
        if best is None or here.total_bytes > best.total_bytes:
            best = here
    return best


def _numel(inputs: MemoryInputs, k: int) -> int:
    """Block ``k``'s parameters where the profile lists the blocks, else the largest block's."""
    return inputs.block_numels[k] if len(inputs.block_numels) == inputs.n_blocks else inputs.max_unit_numel


def _walk_moment(inputs: MemoryInputs, block: float) -> int:
    """The block ``k`` at whose backward the profile's checkpointed walk peaked: the one whose gradients (those
    done and its own) come nearest those the walk's line holds at its intercept."""
    held = inputs.checkpointed_walk_gradient_bytes or 0.0
    return min(
        range(inputs.n_blocks),
        key=lambda k: abs(_done_bytes(inputs, k, block) + _own_bytes(inputs, k) - held),
    )


def _own_bytes(inputs: MemoryInputs, k: int) -> float:
    """Block ``k``'s own gradient as backward accumulates it, unsharded (:func:`_numel`'s parameters)."""
    return inputs.param_bytes_each * _numel(inputs, k)


def _done_bytes(inputs: MemoryInputs, k: int, block: float) -> float:
    """Gradient bytes of the blocks backward has finished when it differentiates block ``k`` (blocks ``k+1 …
    n−1``): their own sizes where the profile lists them (blocks of unequal size: an embedding, attention and
    feed-forward units), else ``n−1−k`` of the largest."""
    if len(inputs.block_numels) == inputs.n_blocks:
        return inputs.param_bytes_each * float(sum(inputs.block_numels[k + 1 :]))
    return (inputs.n_blocks - 1 - k) * block


def step_peak(inputs: MemoryInputs, options: MemoryOptions) -> MemoryBreakdown:
    """The peak during the optimizer step (it does not depend on the batch)."""
    grads = inputs.param_bytes
    temporaries = 0.0
    if inputs.step_makes_temporaries:
        temporaries = grads if options.step_temporaries == "foreach" else 2.0 * inputs.largest_tensor_bytes
    if options.strategy == "ddp":
        return MemoryBreakdown(inputs.param_bytes, grads, inputs.optimizer_bytes + temporaries, 0.0, grads, 0.0, "step")
    d = float(options.shard_size)
    return MemoryBreakdown(
        inputs.param_bytes / d, grads / d, (inputs.optimizer_bytes + temporaries) / d, 0.0, 0.0, 0.0, "step"
    )


def peak_memory(inputs: MemoryInputs, options: MemoryOptions, batch: float) -> MemoryBreakdown:
    """Predicted peak bytes per GPU at local ``batch``: the largest of :func:`forward_peak`,
    :func:`backward_peak` and :func:`step_peak`.

    Raises:
        ProfileError: checkpointing asked for where the profile did not measure it.
    """
    return max(_moments(inputs, options, batch), key=lambda m: m.total_bytes)


def _moments(inputs: MemoryInputs, options: MemoryOptions, batch: float) -> list[MemoryBreakdown]:
    """The breakdowns of every moment that can be the peak (the first of equals wins :func:`peak_memory`)."""
    backward = backward_peak(inputs, options, batch)
    return [forward_peak(inputs, options, batch), *([backward] if backward else []), step_peak(inputs, options)]


def usable_bytes(capacity_bytes: float, on_gpu: bool = True) -> float:
    """Memory a job may use of a device of ``capacity_bytes``: a GPU loses the CUDA context and fragmentation."""
    if not on_gpu:
        return capacity_bytes
    return capacity_bytes * DEFAULT_USABLE_FRACTION - DEFAULT_GPU_RESERVE_BYTES


def gpu_options(strategy: Strategy, shard_size: int = 1, checkpointing: bool = False) -> MemoryOptions:
    """:class:`MemoryOptions` for a GPU (its ``foreach`` optimizer step)."""
    return MemoryOptions(strategy, shard_size if strategy != "ddp" else 1, checkpointing, "foreach")


def max_batch_for(inputs: MemoryInputs, options: MemoryOptions, capacity_bytes: float, on_gpu: bool = True) -> int:
    """Largest local batch whose predicted peak fits a device of ``capacity_bytes`` (0 when not even batch 0
    does: the model state alone is too large).

    Raises:
        ProfileError: checkpointing asked for where the profile did not measure it.
    """
    room = usable_bytes(capacity_bytes, on_gpu)
    at_zero = _moments(inputs, options, 0.0)
    if max(m.total_bytes for m in at_zero) > room:
        return 0
    batch = UNBOUNDED_BATCH
    # every moment's bytes are a line in the batch: its value at 0 and its per-sample activations
    for moment in at_zero:
        per_sample = _moment_per_sample(inputs, options, moment.phase)
        if per_sample > 0:
            batch = min(batch, math.floor((room - moment.total_bytes) / per_sample + 1e-9))
    return batch


def _moment_per_sample(inputs: MemoryInputs, options: MemoryOptions, phase: str) -> float:
    """Bytes one more sample adds to the moment ``phase`` of :func:`_moments`."""
    return {"forward": _per_sample, "backward": _backward_per_sample}.get(phase, lambda *_: 0.0)(inputs, options)


def min_shard_size(inputs: MemoryInputs, capacity_bytes: float, checkpointing: bool = False, cap: int = 4096) -> int:
    """Fewest GPUs an ``fsdp`` group needs to hold batch 1 on devices of ``capacity_bytes`` (0: none up to
    ``cap``, for example when one block alone does not fit)."""
    if max_batch_for(inputs, gpu_options("fsdp", cap, checkpointing), capacity_bytes) < 1:
        return 0
    lo, hi = 0, cap  # fits at hi, not at lo (more GPUs never need more memory each)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if max_batch_for(inputs, gpu_options("fsdp", mid, checkpointing), capacity_bytes) >= 1:
            hi = mid
        else:
            lo = mid
    return hi
