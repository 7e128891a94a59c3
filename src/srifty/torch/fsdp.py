"""Run a model the way the plan says: DDP, FSDP or HSDP (PyTorch's FSDP2 ``fully_shard``), with or without
activation checkpointing.

``srifty run`` (and the exported torchrun lines and SkyPilot tasks) tell a training script how the planned
configuration spreads the model (:meth:`srifty.vocab.Config.sharding_env`):

* ``SRIFTY_PARALLELISM``: ``ddp`` (absent: ``ddp``), ``fsdp`` or ``hsdp``;
* ``SRIFTY_SHARD_GROUP_SIZE``: GPUs one copy of the model state is sharded over (``hsdp``: one VM's);
* ``SRIFTY_ACTIVATION_CHECKPOINTING``: ``1`` to checkpoint every block.

:func:`parallelize` applies it. The units are the ones srifty's memory model and simulator price
(:func:`srifty.compute.sharding.sharding_units`): every numbered block of the model (``layers.3``), sharded
with ``fully_shard``, then the model itself (the root: embeddings, head). ``hsdp`` builds a 2-D device mesh
(replicate across VMs × shard inside one). The next block's all-gather is prefetched explicitly in forward
and backward, as the simulator assumes (on a CPU, where collectives are not issued ahead on a stream, this is
what makes them overlap compute). Checkpointing uses ``torch.distributed._composable.checkpoint``, which keeps
parameter names (and so checkpoints) as they are.

Unequal local batches: DDP's gradients are reweighted by the comm hook of :mod:`srifty.torch.reweight`; FSDP
averages gradients over ranks inside its reduce-scatter, so the script multiplies its per-rank mean loss by
``Parallel.loss_scale`` (``w_r · W``, :func:`srifty.torch.reweight.loss_scale`; 1 under DDP, whose hook does
it). Checkpoints go through ``torch.distributed.checkpoint`` (:mod:`srifty.torch.training`), which reshards a
sharded model's state when a job resumes on a different number of GPUs.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from srifty.compute import unit_key
from srifty.errors import SriftyError
from srifty.torch.reweight import grad_weight_from_env, reweight

ENV_PARALLELISM = "SRIFTY_PARALLELISM"
ENV_SHARD_GROUP_SIZE = "SRIFTY_SHARD_GROUP_SIZE"
ENV_CHECKPOINTING = "SRIFTY_ACTIVATION_CHECKPOINTING"
PARALLELISMS = ("ddp", "fsdp", "hsdp")


@dataclass(frozen=True)
class ParallelPlan:
    """How to spread the model: ``parallelism``, the shard group's size, and activation checkpointing."""

    parallelism: str = "ddp"
    shard_group_size: int = 1
    checkpointing: bool = False


def parallel_plan_from_env(environ: Mapping[str, str] | None = None) -> ParallelPlan:
    """The plan's strategy from ``SRIFTY_PARALLELISM``, ``SRIFTY_SHARD_GROUP_SIZE`` and
    ``SRIFTY_ACTIVATION_CHECKPOINTING`` (DDP without checkpointing when unset).

    Raises:
        SriftyError: an unknown strategy or a shard group size that is not a positive integer.
    """
    env = os.environ if environ is None else environ
    parallelism = env.get(ENV_PARALLELISM, "ddp").strip().lower() or "ddp"
    if parallelism not in PARALLELISMS:
        raise SriftyError(f"{ENV_PARALLELISM}={parallelism!r}: use one of {', '.join(PARALLELISMS)}")
    try:
        size = int(env.get(ENV_SHARD_GROUP_SIZE, "0") or 0)
    except ValueError:
        raise SriftyError(f"{ENV_SHARD_GROUP_SIZE} must be a positive integer") from None
    checkpointing = env.get(ENV_CHECKPOINTING, "0").strip() in ("1", "true", "yes", "on")
    return ParallelPlan(parallelism, max(size, 1), checkpointing)


def block_names(model: nn.Module) -> list[str]:
    """The model's numbered blocks (``layers.0``, ``layers.1``, …) in order: the units FSDP shards."""
    keys: dict[str, None] = {}
    for name, param in model.named_parameters():
        if param.requires_grad and (key := unit_key(name)):
            keys.setdefault(key, None)
    return list(keys)


@dataclass
class Parallel:
    """A model spread as planned.

    Attributes:
        model: the DDP module, or the model itself with its blocks and root ``fully_shard``-ed.
        parallelism: ``ddp``, ``fsdp`` or ``hsdp``.
        loss_scale: multiply the per-rank mean loss by this before ``backward()`` (see the module docstring).
        blocks: the blocks sharded (and checkpointed), by name.
    """

    model: nn.Module
    parallelism: str
    loss_scale: float
    blocks: tuple[str, ...]


def parallelize(
    model: nn.Module,
    plan: ParallelPlan | None = None,
    *,
    weight: float | None = None,
    param_dtype: torch.dtype | None = None,
    device_type: str | None = None,
) -> Parallel:
    """Spread ``model`` over the process group as ``plan`` says (default: the ``SRIFTY_*`` variables).

    Args:
        weight: this rank's gradient weight ``local_batch / global_batch`` (default: from the environment).
        param_dtype: under FSDP/HSDP, gather and compute in this dtype (``torch.bfloat16``: mixed precision,
            gradients still reduced in fp32); ``None`` keeps the parameters' own.
        device_type: ``"cuda"`` or ``"cpu"`` (default: where the model's parameters are).

    Raises:
        SriftyError: no process group, a model without blocks to shard, or a world size the HSDP shard group
            does not divide.
    """
    if not dist.is_initialized():
        raise SriftyError("parallelize() needs torch.distributed initialised (run under torchrun)")
    plan = plan or parallel_plan_from_env()
    w = grad_weight_from_env() if weight is None else weight
    blocks = block_names(model)
    if plan.checkpointing:
        if not blocks:
            raise SriftyError("activation checkpointing needs numbered blocks (for example model.layers.0)")
        from torch.distributed._composable import checkpoint

        for name in blocks:
            checkpoint(model.get_submodule(name))
    if plan.parallelism == "ddp":
        ddp = nn.parallel.DistributedDataParallel(model)
        reweight(ddp, w)
        return Parallel(ddp, "ddp", 1.0, tuple(blocks))
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    world = dist.get_world_size()
    kind = device_type or next(model.parameters()).device.type
    if plan.parallelism == "hsdp":
        shard = plan.shard_group_size
        if shard < 1 or world % shard:
            raise SriftyError(f"hsdp: shard group size {shard} does not divide the world size {world}")
        mesh = init_device_mesh(kind, (world // shard, shard), mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh(kind, (world,), mesh_dim_names=("shard",))
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32 if param_dtype else None)
    modules = [model.get_submodule(name) for name in blocks]
    for module in modules:
        fully_shard(module, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    for first, second in itertools.pairwise(modules):
        first.set_modules_to_forward_prefetch([second])  # type: ignore[operator]
        second.set_modules_to_backward_prefetch([first])  # type: ignore[operator]
    return Parallel(model, plan.parallelism, w * world, tuple(blocks))
