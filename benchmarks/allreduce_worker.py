"""One rank of the allreduce diagnostic of ``benchmarks/multihost_resnet.py --part comm``: gloo allreduces of
the given bucket sizes, one after the other as DDP sends them, timed on rank 0.

Started like ``benchmarks/e2e_worker.py`` (by :func:`benchmarks.end_to_end.run_ddp`). Environment: ``AR_BUCKETS``
(bytes per bucket, comma-separated, float32), ``E2E_WARMUP`` and ``E2E_ITERS`` (warm-up and timed repetitions),
``E2E_OUT`` (JSON written by rank 0: ``{"iter_s": [...]}``).

With ``AR_BURN_OUT`` (a path), every rank also computes throughout, in a thread of its own (float32 matrix
products, one torch thread: compute that competes with gloo for the rank's CPU quota as backward does); each
repetition counts the products in ``BURN_ALONE_S`` with no communication, then during its allreduces; rank 0
writes both rates (products per second) of every repetition to that path.
"""

import json
import os
import threading
import time

import torch
import torch.distributed as dist

#: Seconds of each repetition the compute thread runs alone before the allreduces (its rate without them).
BURN_ALONE_S = 0.5


class Burner:
    """Matrix products in a thread until stopped, counted (torch releases the GIL inside each product)."""

    def __init__(self) -> None:
        self.done = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        a, b = torch.randn(192, 192), torch.randn(192, 192)
        while not self._stop.is_set():
            torch.mm(a, b)
            self.done += 1

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    buckets = [torch.ones(int(b) // 4) for b in os.environ["AR_BUCKETS"].split(",")]
    warmup, reps = int(os.environ["E2E_WARMUP"]), int(os.environ["E2E_ITERS"])
    burn_out = os.environ.get("AR_BURN_OUT")
    burner = Burner() if burn_out else None
    if burner is not None:
        burner.start()
    times, alone_per_s, during_per_s = [], [], []
    for _ in range(warmup + reps):
        dist.barrier()
        if burner is not None:
            count, started = burner.done, time.perf_counter()
            time.sleep(BURN_ALONE_S)
            alone_per_s.append((burner.done - count) / (time.perf_counter() - started))
            dist.barrier()
        count, started = (burner.done if burner else 0), time.perf_counter()
        for bucket in buckets:
            dist.all_reduce(bucket)
        times.append(time.perf_counter() - started)
        if burner is not None:
            during_per_s.append((burner.done - count) / times[-1])
    if burner is not None:
        burner.stop()
    if dist.get_rank() == 0:
        with open(os.environ["E2E_OUT"], "w") as handle:
            json.dump({"iter_s": times[warmup:]}, handle)
        if burn_out:
            with open(burn_out, "w") as handle:
                json.dump({"alone_per_s": alone_per_s[warmup:], "during_per_s": during_per_s[warmup:]}, handle)
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.14's gloo can abort in C++ destructors at exit after all work is done


if __name__ == "__main__":
    main()
