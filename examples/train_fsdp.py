"""A decoder-only transformer for `srifty run`, spread as the plan says: DDP, FSDP or HSDP (FSDP2 fully_shard).

    srifty run examples/tiny-fsdp.yaml -- python examples/train_fsdp.py

``srifty run`` passes the plan's strategy in ``SRIFTY_PARALLELISM`` (and the shard group and checkpointing);
``srifty.torch.fsdp.parallelize`` applies it. Data is synthetic and deterministic per global step (a counting
language, ``srifty.compute.zoo.token_batch``), so a resumed run sees the samples a run without interruption
would. Checkpoints are DCP: a job resumed on a different number of ranks reshards them. ``TRAIN_FSDP_MODEL``
picks the model: ``tiny`` (default, ``srifty.compute.zoo:tiny_decoder``) or ``small``
(``srifty.compute.zoo:decoder``); ``TRAIN_FSDP_STEP_S`` paces each step with a sleep (for tests); each rank
reports its forward time as its compute time.
"""

import os
import time

import torch
import torch.distributed as dist

from srifty.compute.zoo import decoder, decoder_loss, tiny_decoder, token_batch
from srifty.torch.fsdp import parallelize
from srifty.torch.training import (
    RunReporter,
    batch_offset,
    checkpoint_every,
    load_checkpoint,
    rank_local_batch,
    save_checkpoint,
)

MODELS = {"tiny": (tiny_decoder, 32, 256), "small": (decoder, 128, 2048)}


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    factory, seq_len, vocab = MODELS[os.environ.get("TRAIN_FSDP_MODEL", "tiny")]
    model, _, _ = factory()
    global_batch = int(os.environ["SRIFTY_GLOBAL_BATCH"])
    lo, size = batch_offset(), rank_local_batch()
    run = parallelize(model, weight=size / global_batch)
    optimizer = torch.optim.AdamW(run.model.parameters(), lr=3e-3)
    ckpt_dir = os.environ["SRIFTY_CKPT_DIR"]
    step = load_checkpoint(ckpt_dir, run.model, optimizer)
    if rank == 0:
        print(f"parallelism={run.parallelism} world={dist.get_world_size()} resumed_at={step}", flush=True)
    total = int(os.environ["SRIFTY_ITERATIONS"])
    every = checkpoint_every()
    reporter = RunReporter()
    pace_s = float(os.environ.get("TRAIN_FSDP_STEP_S", "0"))
    while step < total:
        time.sleep(pace_s)
        reporter.beat(step + 1, "started")
        tokens, target = token_batch(global_batch, seq_len, vocab, torch.Generator().manual_seed(1000 + step))
        optimizer.zero_grad()
        started = time.perf_counter()
        logits = run.model(tokens[lo : lo + size])
        compute_s = time.perf_counter() - started
        loss = decoder_loss(logits, target[lo : lo + size])
        (loss * run.loss_scale).backward()
        optimizer.step()
        step += 1
        if step % every == 0 or step == total:
            save_checkpoint(ckpt_dir, step, run.model, optimizer)
        if rank == 0:  # the workers' own record of how far they got
            print(f"iteration={step} rank=0 time={time.time():.4f} loss={loss.item():.5f}", flush=True)
        reporter.iteration_done(step, loss.item(), compute_s=compute_s)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"finished {step} iterations", flush=True)
    os._exit(0)  # torch 2.14's gloo can abort in C++ destructors at exit after all work is done


if __name__ == "__main__":
    main()
