"""One rank of the sharded testbed benchmark (benchmarks/fsdp_testbed.py): real training spread by
``srifty.torch.fsdp.parallelize`` (FSDP2 ``fully_shard`` over gloo, or DDP), AdamW, timed on rank 0.

Started by :func:`benchmarks.end_to_end.run_ddp` under ``torchrun`` inside a testbed host namespace, with its
environment (``E2E_MODEL``, ``SRIFTY_RANK_BATCHES``, ``E2E_WARMUP``, ``E2E_ITERS``, ``E2E_OUT``) and the
``SRIFTY_*`` strategy variables. Each iteration is timed from zero_grad to the end of the optimizer step
(:mod:`benchmarks.timed_steps`); the loss is scaled by ``Parallel.loss_scale`` as a script under ``srifty run``
does.
"""

import os

import torch
import torch.distributed as dist

from benchmarks.timed_steps import run_timed
from srifty.compute.measure.workloads import build_workload, call_model
from srifty.torch.fsdp import parallelize
from srifty.torch.training import rank_local_batch


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    workload = build_workload(os.environ["E2E_MODEL"], seed=0)
    batches = [int(b) for b in os.environ["SRIFTY_RANK_BATCHES"].split(",")]
    run = parallelize(workload.model, weight=rank_local_batch() / sum(batches))
    optimizer = torch.optim.AdamW(run.model.parameters(), lr=1e-4)
    inputs, target = workload.make_batch(rank_local_batch())

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        (workload.loss_fn(call_model(run.model, inputs), target) * run.loss_scale).backward()
        optimizer.step()

    run_timed(step)


if __name__ == "__main__":
    main()
