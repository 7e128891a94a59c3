"""Gradient reweighting for unequal local batches (see the package docstring).

No ``from __future__ import annotations`` here: DDP checks the hook's annotations at run time.
"""

import os
from collections.abc import Callable, Mapping

import torch
import torch.distributed as dist

from srifty.errors import SriftyError

ENV_WEIGHT = "SRIFTY_GRAD_WEIGHT"
ENV_LOCAL = "SRIFTY_LOCAL_BATCH"
ENV_GLOBAL = "SRIFTY_GLOBAL_BATCH"


def grad_weight_from_env(environ: Mapping[str, str] | None = None) -> float:
    """This rank's gradient weight ``local_batch / global_batch``.

    Read from ``SRIFTY_GRAD_WEIGHT``, or computed from ``SRIFTY_LOCAL_BATCH`` and ``SRIFTY_GLOBAL_BATCH``.

    Raises:
        SriftyError: neither is set, or a value is not a positive number.
    """
    env = os.environ if environ is None else environ
    try:
        if ENV_WEIGHT in env:
            weight = float(env[ENV_WEIGHT])
        elif ENV_LOCAL in env and ENV_GLOBAL in env:
            weight = int(env[ENV_LOCAL]) / int(env[ENV_GLOBAL])
        else:
            raise SriftyError(
                f"set {ENV_WEIGHT} (or {ENV_LOCAL} and {ENV_GLOBAL}); `srifty plan --skypilot` exports them"
            )
    except ValueError:
        raise SriftyError(f"{ENV_WEIGHT}/{ENV_LOCAL}/{ENV_GLOBAL} must be numbers") from None
    if not 0 < weight <= 1:
        raise SriftyError(f"the gradient weight must be in (0, 1], got {weight}")
    return weight


HookFn = Callable[[object, dist.GradBucket], torch.futures.Future[torch.Tensor]]


def reweighting_hook(weight: float, group: dist.ProcessGroup | None = None) -> HookFn:
    """A DDP comm hook: scale the bucket by ``weight``, then sum-allreduce it (no division by world size)."""

    def hook(_state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        buffer = bucket.buffer()
        buffer.mul_(weight)
        work = dist.all_reduce(buffer, op=dist.ReduceOp.SUM, group=group, async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    return hook


def reweight(ddp_model: torch.nn.parallel.DistributedDataParallel, weight: float | None = None) -> float:
    """Register the reweighting hook on ``ddp_model``; ``weight`` defaults to :func:`grad_weight_from_env`.

    Returns the weight used.
    """
    w = grad_weight_from_env() if weight is None else weight
    ddp_model.register_comm_hook(None, reweighting_hook(w, ddp_model.process_group))
    return w


def loss_scale(weight: float | None = None, world_size: int | None = None) -> float:
    """Factor to multiply the per-rank mean loss by, instead of the hook: ``w_r · W`` (DDP divides by W)."""
    w = grad_weight_from_env() if weight is None else weight
    size = dist.get_world_size() if world_size is None else world_size
    return w * size
