"""Worker for test_reweight: 3-rank gloo DDP with local batches 8, 16, 40; rank 0 saves grads and params.

Usage: ``python reweight_worker.py RANK PORT OUT MODE`` with MODE ``hook``, ``loss`` or ``none``.
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from srifty.torch import loss_scale, reweight

BATCHES = (8, 16, 40)


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.Tanh(), torch.nn.Linear(32, 3))


def data(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(100 + step)
    return torch.randn(sum(BATCHES), 10, generator=gen), torch.randint(0, 3, (sum(BATCHES),), generator=gen)


def main() -> None:
    rank, port, out, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    os.environ["SRIFTY_LOCAL_BATCH"] = str(BATCHES[rank])
    os.environ["SRIFTY_GLOBAL_BATCH"] = str(sum(BATCHES))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=len(BATCHES))
    model = DistributedDataParallel(make_model())
    if mode == "hook":
        reweight(model)
    scale = loss_scale() if mode == "loss" else 1.0
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    lo = sum(BATCHES[:rank])
    grads = []
    for step in range(3):
        x, y = data(step)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[lo : lo + BATCHES[rank]]), y[lo : lo + BATCHES[rank]])
        (loss * scale).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        opt.step()
    if rank == 0:
        torch.save({"grads": grads, "params": [p.detach().clone() for p in model.parameters()]}, out)
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)  # gloo may abort in static destructors at exit on torch 2.14 after all work is done


if __name__ == "__main__":
    main()
