"""A real model for `srifty run`: torchvision resnet18 (10 classes) at a small resolution, real DDP (gloo).

    srifty run job.yaml --hosts hosts.txt --launcher netns --testbed tb --config 4xg4dn.8xlarge@8 \
        -- python examples/train_resnet.py

Like ``train_tiny.py``: unequal local batches with every sample counting equally (srifty.torch.reweight),
checkpoints with ``torch.distributed.checkpoint``, progress and heartbeats through ``RunReporter``. Data is
synthetic and deterministic per global step (noisy copies of 10 fixed class images), so a resumed run sees
the samples a run without interruption would. DDP runs with ``broadcast_buffers=False``: each rank keeps its
own BatchNorm statistics, so the forward pass contains no collective and its wall time (forward and loss) is
this rank's own compute, reported per iteration as ``compute_s``. The loop (:func:`train`) is shared with
``train_gpt2.py``.

Every rank also prints one line per iteration (``iteration=N rank=R time=UNIX loss=L forward_s=S``) to its
host's log, the workers' own record of how far they got (``benchmarks/multihost_resnet.py`` reads it).

Environment: ``TRAIN_RESNET_IMAGE`` (pixels per side, default 64), ``TRAIN_RESNET_THREADS`` (torch threads
per rank, default 1). The model alone, for ``srifty profile``: ``PYTHONPATH=examples srifty profile --model
train_resnet:model --input-shape 3x64x64``.
"""

import os
import time
import warnings
from collections.abc import Callable

import torch
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel

from srifty.torch import reweight
from srifty.torch.training import (
    RunReporter,
    batch_offset,
    checkpoint_every,
    load_checkpoint,
    rank_local_batch,
    save_checkpoint,
)

CLASSES = 10
BatchFn = Callable[[int, int], tuple[torch.Tensor, torch.Tensor]]
LossFn = Callable[[torch.nn.Module, torch.Tensor, torch.Tensor], torch.Tensor]


def model() -> torch.nn.Module:
    """The network trained here (also what ``srifty profile --model train_resnet:model`` measures)."""
    return torchvision.models.resnet18(weights=None, num_classes=CLASSES)


def batch(step: int, global_batch: int, image: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The global batch of ``step``: each sample a noisy copy of its class's fixed image (learnable)."""
    prototypes = torch.randn(CLASSES, 3, image, image, generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1000 + step)
    y = torch.randint(0, CLASSES, (global_batch,), generator=gen)
    x = 0.5 * prototypes[y] + torch.randn(global_batch, 3, image, image, generator=gen)
    return x, y


def train(net: torch.nn.Module, batch_of: BatchFn, loss_of: LossFn, threads: int) -> None:
    """The training loop every example model shares: DDP over gloo (``broadcast_buffers=False``), srifty's
    gradient reweighting, checkpoints, one line per iteration and rank, progress through ``RunReporter``.

    Args:
        net: the model (each rank builds it with the same seed).
        batch_of: ``batch_of(step, global_batch) -> (inputs, targets)``, the whole global batch of ``step``.
        loss_of: ``loss_of(ddp_net, inputs, targets) -> loss`` for this rank's slice (forward and loss: what
            ``forward_s`` times).
        threads: torch threads per rank.
    """
    torch.set_num_threads(threads)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    # torch 2.14 deprecates broadcast_buffers, but its replacement still syncs buffers at init; it says to keep it
    warnings.filterwarnings("ignore", message="`broadcast_buffers` is deprecated", category=FutureWarning)
    ddp = DistributedDataParallel(net, broadcast_buffers=False)
    global_batch = int(os.environ["SRIFTY_GLOBAL_BATCH"])
    reweight(ddp, rank_local_batch() / global_batch)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.02, momentum=0.9)
    ckpt_dir = os.environ["SRIFTY_CKPT_DIR"]
    step = load_checkpoint(ckpt_dir, ddp, optimizer)
    total = int(os.environ["SRIFTY_ITERATIONS"])
    every = checkpoint_every()
    reporter = RunReporter()
    lo, size = batch_offset(), rank_local_batch()
    if rank == 0:
        print(f"resuming at iteration {step}" if step else "starting at iteration 0", flush=True)
    while step < total:
        reporter.beat(step + 1, "started")
        x, y = batch_of(step, global_batch)
        optimizer.zero_grad(set_to_none=True)
        started = time.perf_counter()
        loss = loss_of(ddp, x[lo : lo + size], y[lo : lo + size])
        forward_s = time.perf_counter() - started
        loss.backward()
        optimizer.step()
        step += 1
        stop = reporter.stop_requested()  # srifty run was interrupted: checkpoint here and stop
        if step % every == 0 or step == total or stop:
            save_checkpoint(ckpt_dir, step, ddp, optimizer)
        value = loss.item()
        print(
            f"iteration={step} rank={rank} time={time.time():.4f} loss={value:.5f} forward_s={forward_s:.4f}",
            flush=True,
        )
        reporter.iteration_done(step, value, compute_s=forward_s)
        if stop:
            break
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"{'stopped as asked after' if step < total else 'finished'} {step} iterations", flush=True)
    os._exit(0)  # torch 2.14's gloo can abort in C++ destructors at exit after all work is done


def main() -> None:
    image = int(os.environ.get("TRAIN_RESNET_IMAGE", "64"))
    torch.manual_seed(0)
    train(
        model(),
        lambda step, global_batch: batch(step, global_batch, image),
        lambda net, x, y: torch.nn.functional.cross_entropy(net(x), y),
        int(os.environ.get("TRAIN_RESNET_THREADS", "1")),
    )


if __name__ == "__main__":
    main()
