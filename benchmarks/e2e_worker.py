"""One rank of the end-to-end validation run: real DDP (gloo) training, timed on rank 0.

Started by ``benchmarks/end_to_end.py`` under ``torchrun`` inside a testbed host namespace. Environment:
``E2E_MODEL`` (a srifty model name), ``SRIFTY_RANK_BATCHES``, ``E2E_CGROUPS`` (cgroup folder per rank to
join, or empty: ``end_to_end.py`` joins each host's cgroup before entering its namespace instead),
``E2E_WARMUP``, ``E2E_ITERS``, ``E2E_OUT`` (JSON written by rank 0: :mod:`benchmarks.timed_steps`),
``E2E_SEQ_LEN``, ``E2E_IMAGE_SIZE``.
"""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from benchmarks.timed_steps import run_timed
from srifty.compute.measure.workloads import build_workload, call_model
from srifty.torch import reweight
from srifty.torch.training import rank_local_batch


def main() -> None:
    rank = int(os.environ["RANK"])
    groups = os.environ.get("E2E_CGROUPS", "").split(",")
    if groups and groups[0]:
        with open(os.path.join(groups[rank], "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    image = int(os.environ.get("E2E_IMAGE_SIZE", "0")) or None
    workload = build_workload(
        os.environ["E2E_MODEL"], seq_len=int(os.environ.get("E2E_SEQ_LEN", "128")), image_size=image, seed=0
    )
    model = DistributedDataParallel(workload.model)
    batches = [int(b) for b in os.environ["SRIFTY_RANK_BATCHES"].split(",")]
    reweight(model, rank_local_batch() / sum(batches))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    inputs, target = workload.make_batch(rank_local_batch())

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        workload.loss_fn(call_model(model, inputs), target).backward()
        optimizer.step()

    run_timed(step)


if __name__ == "__main__":
    main()
