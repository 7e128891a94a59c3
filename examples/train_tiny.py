"""A tiny training script for `srifty run`: real DDP (gloo), unequal local batches, checkpoints, progress.

    srifty run examples/tiny-local.yaml -- python examples/train_tiny.py

Data is synthetic and deterministic per global step, so a resumed run sees the same samples a run without
interruption would. Every sample counts equally whatever the local batches (srifty.torch.reweight).
``TRAIN_TINY_STEP_S`` (default 0) paces each step with a sleep, so that a test can watch the tiny model
(milliseconds per step) be preempted mid-run. ``TRAIN_TINY_CPU_S`` (default 0) adds that many seconds of CPU
work (this thread's CPU time) to each step's compute, so that a CPU quota slows the step down the way it
slows a real model's; each rank reports its compute time (work + forward) to ``srifty run``.
"""

import os
import time

import torch
import torch.distributed as dist
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


def batch(step: int, global_batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A learnable synthetic task: 10 classes set by the signs of sums of input features."""
    gen = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(global_batch, 32, generator=gen)
    y = (x[:, :8].sum(dim=1) > 0).long() * 5 + (x[:, 8:16].sum(dim=1) > 0).long() * 2 + (x[:, 16] > 0).long()
    return x, y


def burn(cpu_s: float) -> None:
    """Spend ``cpu_s`` seconds of this thread's CPU time (stands for a heavier model's compute)."""
    end = time.thread_time() + cpu_s
    while time.thread_time() < end:
        pass


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    )
    global_batch = int(os.environ["SRIFTY_GLOBAL_BATCH"])
    reweight(model, rank_local_batch() / global_batch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    ckpt_dir = os.environ["SRIFTY_CKPT_DIR"]
    step = load_checkpoint(ckpt_dir, model, optimizer)
    total = int(os.environ["SRIFTY_ITERATIONS"])
    every = checkpoint_every()
    reporter = RunReporter()
    lo, size = batch_offset(), rank_local_batch()
    pace_s = float(os.environ.get("TRAIN_TINY_STEP_S", "0"))
    cpu_s = float(os.environ.get("TRAIN_TINY_CPU_S", "0"))
    while step < total:
        time.sleep(pace_s)
        reporter.beat(step + 1, "started")
        x, y = batch(step, global_batch)
        optimizer.zero_grad()
        started = time.perf_counter()
        burn(cpu_s)
        output = model(x[lo : lo + size])
        compute_s = time.perf_counter() - started
        loss = torch.nn.functional.cross_entropy(output, y[lo : lo + size])
        loss.backward()
        optimizer.step()
        step += 1
        stop = reporter.stop_requested()  # srifty run was interrupted: checkpoint here and stop
        if step % every == 0 or step == total or stop:
            save_checkpoint(ckpt_dir, step, model, optimizer)
        if rank == 0:  # the workers' own record of how far they got (benchmarks/multihost.py reads it)
            print(f"iteration={step} rank=0 time={time.time():.4f} loss={loss.item():.5f}", flush=True)
        reporter.iteration_done(step, loss.item(), compute_s=compute_s)
        if stop:
            break
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"{'stopped as asked after' if step < total else 'finished'} {step} iterations", flush=True)
    os._exit(0)  # torch 2.14's gloo can abort in C++ destructors at exit after all work is done


if __name__ == "__main__":
    main()
