"""Worker for test_ddp_buckets: run real DDP (gloo) and record the buckets its reducer forms.

Run as ``python ddp_bucket_worker.py RANK WORLD PORT FACTORY CAP_MB OUT``; rank 0 writes JSON to OUT.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from srifty.compute.measure.workloads import build_workload, call_model


def main() -> None:
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    factory, cap_text, out = sys.argv[4], sys.argv[5], sys.argv[6]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    workload = build_workload(factory, seed=0)
    kwargs = {} if cap_text == "default" else {"bucket_cap_mb": float(cap_text)}
    ddp = DistributedDataParallel(workload.model, **kwargs)
    names = {id(p): n for n, p in workload.model.named_parameters()}
    seen: list[list[list[str]]] = [[] for _ in range(3)]
    step = [0]

    def hook(
        state: object, bucket: dist.GradBucket
    ) -> torch.futures.Future[torch.Tensor]:  # real types: DDP checks them
        seen[step[0]].append([names[id(p)] for p in bucket.parameters()])
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    ddp.register_comm_hook(None, hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    for step[0] in range(3):
        inputs, target = workload.make_batch(4)
        optimizer.zero_grad()
        workload.loss_fn(call_model(ddp, inputs), target).backward()
        optimizer.step()
    if rank == 0:
        with open(out, "w") as handle:
            json.dump({"iterations": seen}, handle)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    # torch 2.14's gloo can abort in C++ static destructors at interpreter exit ("terminate called without
    # an active exception"), after all work is done; skip them.
    os._exit(0)


if __name__ == "__main__":
    main()
