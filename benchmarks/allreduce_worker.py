"""One rank of the allreduce diagnostic of ``benchmarks/multihost_resnet.py --part comm``: gloo allreduces of
the given bucket sizes, one after the other as DDP sends them, timed on rank 0.

Started like ``benchmarks/e2e_worker.py`` (by :func:`benchmarks.end_to_end.run_ddp`). Environment: ``AR_BUCKETS``
(bytes per bucket, comma-separated, float32), ``E2E_WARMUP`` and ``E2E_ITERS`` (warm-up and timed repetitions),
``E2E_OUT`` (JSON written by rank 0: ``{"iter_s": [...]}``).
"""

import json
import os
import time

import torch
import torch.distributed as dist


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    buckets = [torch.ones(int(b) // 4) for b in os.environ["AR_BUCKETS"].split(",")]
    warmup, reps = int(os.environ["E2E_WARMUP"]), int(os.environ["E2E_ITERS"])
    times = []
    for _ in range(warmup + reps):
        dist.barrier()
        started = time.perf_counter()
        for bucket in buckets:
            dist.all_reduce(bucket)
        times.append(time.perf_counter() - started)
    if dist.get_rank() == 0:
        with open(os.environ["E2E_OUT"], "w") as handle:
            json.dump({"iter_s": times[warmup:]}, handle)
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.14's gloo can abort in C++ destructors at exit after all work is done


if __name__ == "__main__":
    main()
