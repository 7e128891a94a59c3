"""What the testbed benchmarks' training workers (:mod:`benchmarks.e2e_worker`, :mod:`benchmarks.fsdp_worker`)
share: the timed iterations and rank 0's result file.

Runs inside a ``torchrun`` worker whose gloo process group is up. Environment: ``E2E_WARMUP`` and ``E2E_ITERS``
(untimed and timed iterations), ``E2E_OUT`` (the JSON rank 0 writes: ``iter_s``, each timed iteration's wall
seconds from its start to the end of its optimizer step, and ``world_size``).
"""

import json
import os
import time
from collections.abc import Callable

import torch.distributed as dist


def run_timed(step: Callable[[], None]) -> None:
    """Run ``E2E_WARMUP`` + ``E2E_ITERS`` training steps (all ranks meet at a barrier after the warm-up), timing
    each; rank 0 writes the timed ones to ``E2E_OUT``. Then the process group ends and the process exits."""
    warmup, iters = int(os.environ["E2E_WARMUP"]), int(os.environ["E2E_ITERS"])
    times = []
    for i in range(warmup + iters):
        if i == warmup:
            dist.barrier()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    dist.barrier()
    if dist.get_rank() == 0:
        with open(os.environ["E2E_OUT"], "w") as handle:
            json.dump({"iter_s": times[warmup:], "world_size": dist.get_world_size()}, handle)
    dist.destroy_process_group()
    os._exit(0)  # torch 2.14's gloo can abort in C++ destructors at exit after all work is done
