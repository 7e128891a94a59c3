"""Measure compute/communication interference on this device with the model's own DDP buckets (CPU, gloo).

A peer process (:mod:`srifty.compute.measure.interference_peer`) joins a two-rank gloo group over
loopback and mirrors every allreduce the profiler issues. It stands for another VM: it leaves this
process's CPU quota where it can (:func:`srifty.compute.measure.cpu_quota.leave_cpu_quota`). Each
repetition times, with ``time.perf_counter`` and this process's CPU time (``time.process_time``, every
thread, gloo's included):

1. backward alone;
2. one round of allreduces of every bucket (DDP's flattened bucket sizes, launched one after the other as
   DDP's reducer does), nothing else running;
3. backward while rounds of the allreduce queued before it keep gloo busy until after it ends;
4. one round while compute (backward, then whole forward and backward passes) keeps running until after it
   ends;
5. backward with each bucket flattened and allreduced as soon as its gradients are ready, in bucket order
   (DDP's overlap), to the end of the last allreduce: the check the sharing model is held to.

The interpretation is :mod:`srifty.compute.interference`'s. Needs torch.

**On a GPU** the buckets live on the GPU and the exchange is still gloo's: gloo allreduces CUDA tensors by
copying them to pinned host memory on streams of its own, summing on the CPU with the peer, and copying
back, so what it measures is how backward and a host-staged exchange (copy engines, PCIe, the host's CPU)
slow each other. That is DDP's ``backend="gloo"`` on a GPU, and it is not NCCL's: NCCL refuses two ranks on
one GPU, and its kernels (which take SMs from backward) need a second GPU to pair with, which the profiler
does not assume. The method string in the profile says which was measured. Times on a GPU are host times
around a synchronised stream (the profiler's), so each includes the device work it queued.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist

from srifty.compute.buckets import Bucket
from srifty.compute.interference import HOST_STAGED_MARK, InterferenceMeasurement, InterferenceRepetition
from srifty.compute.measure.cpu_quota import cpu_quota_cores
from srifty.compute.measure.interference_peer import gloo_group
from srifty.errors import ProfileError
from srifty.processes import ProcessGuard

FLOAT32_BYTES = 4
#: Rounds of communication queued before a backward pass cover this many times its time alone.
COVER = 3.0
METHOD = (
    "gloo allreduce (float32) of the model's DDP buckets with a loopback peer process; backward and one "
    "round of the buckets timed alone and each while the other runs throughout; CPU time from "
    "time.process_time"
)
#: What a GPU measurement adds to :data:`METHOD`: the exchange is gloo's host-staged one, not NCCL's.
GPU_METHOD_NOTE = (
    f"; on a GPU: the buckets are CUDA tensors that gloo stages through {HOST_STAGED_MARK} (not NCCL, which "
    "needs a second GPU), times taken around the synchronised stream"
)


class LoopbackExchange:
    """A two-rank gloo group with a peer process on this machine that mirrors every allreduce issued here.

    Use as a context manager. :meth:`launch` tells the peer the sizes through the store, then issues the
    allreduces here (asynchronously, in order) and returns their work handles.
    """

    def __init__(self, timeout_s: float = 300.0) -> None:
        self.timeout_s = timeout_s
        self.peer_where = ""
        self._round = 0
        self._guard = ProcessGuard("interference")

    def __enter__(self) -> LoopbackExchange:
        timeout = dt.timedelta(seconds=self.timeout_s)
        self._store = dist.TCPStore("127.0.0.1", 0, 2, True, timeout=timeout, wait_for_workers=False)
        module = "srifty.compute.measure.interference_peer"
        args = [sys.executable, "-m", module, "--port", str(self._store.port), "--timeout-s", str(self.timeout_s)]
        self._peer = self._guard.popen(args, start_new_session=True)
        try:
            self.peer_where = self._store.get("peer/where").decode()
            self._group = gloo_group(self._store, 0, self.timeout_s)
        except Exception:
            self._guard.end()
            raise
        return self

    def launch(self, tensors: Sequence[torch.Tensor]) -> list[Any]:
        """Allreduce ``tensors`` (float32, contiguous) in order, without waiting; the peer mirrors them."""
        self._store.set(f"round/{self._round}", ",".join(str(t.numel()) for t in tensors))
        self._round += 1
        return [self._group.allreduce([t]) for t in tensors]  # type: ignore[attr-defined]

    def __exit__(self, *exc: object) -> None:
        try:
            self._store.set(f"round/{self._round}", "stop")
            self._peer.wait(timeout=30)
        except Exception:  # the guard below ends the peer whatever happened
            pass
        finally:
            self._guard.end()


def _finished_at(works: Sequence[Any]) -> list[float]:
    """A list that receives ``perf_counter`` when the last of ``works`` completes (from gloo's thread)."""
    stamp: list[float] = []
    lock = threading.Lock()

    def done(_future: Any) -> None:
        with lock:
            stamp.append(time.perf_counter())

    works[-1].get_future().add_done_callback(done)
    return stamp


def _wait(works: Sequence[Any]) -> None:
    for work in works:
        work.wait()


class _Repetition:
    """One repetition's passes over a trainer (see the module docstring)."""

    def __init__(self, trainer: Any, batch: int, buckets: Sequence[Bucket], exchange: LoopbackExchange, passes: int):
        self.trainer = trainer
        self.batch = batch
        self.buckets = list(buckets)
        self.exchange = exchange
        self.passes = passes
        self.device = trainer.device
        self.is_cuda = bool(trainer.is_cuda)
        self.buffers = [torch.zeros(math.ceil(b.size_bytes / FLOAT32_BYTES), device=self.device) for b in buckets]

    def _sync(self) -> None:
        """Wait for the work queued on this thread's stream (a GPU's; nothing to wait for on a CPU). Gloo's
        copies run on streams of their own: a finished exchange's ``wait`` has already ordered this stream
        after them, and an unfinished one is not waited for."""
        if self.is_cuda:
            torch.cuda.current_stream(self.device).synchronize()

    def _loss(self) -> torch.Tensor:
        self.trainer.optimizer.zero_grad(set_to_none=True)
        return self.trainer.forward_loss(*self.trainer.batch(self.batch))

    def _timed(self, body: Callable[[], None]) -> tuple[float, float]:
        """``(wall s, CPU s)`` of ``body``, with the device's queued work done before and after."""
        self._sync()
        wall, cpu = time.perf_counter(), time.process_time()
        body()
        self._sync()
        return time.perf_counter() - wall, time.process_time() - cpu

    def backward_alone(self) -> tuple[float, float]:
        walls, cpus = [], []
        for _ in range(self.passes):
            loss = self._loss()
            wall, cpu = self._timed(loss.backward)
            walls.append(wall)
            cpus.append(cpu)
        return statistics.median(walls), sum(cpus) / sum(walls)

    def comm_alone(self) -> tuple[float, float]:
        walls, cpus = [], []
        for _ in range(self.passes):
            wall, cpu = self._timed(lambda: _wait(self.exchange.launch(self.buffers)))
            walls.append(wall)
            cpus.append(cpu)
        return statistics.median(walls), sum(cpus) / sum(walls)

    def backward_with_comm(self, rounds: int) -> tuple[float, float]:
        """Backward while queued rounds keep gloo busy; a pass whose rounds ended before backward did is
        measured again with twice as many."""
        walls: list[float] = []
        cpus: list[float] = []
        while len(walls) < self.passes:
            loss = self._loss()
            works = self.exchange.launch(self.buffers * rounds)
            ended = _finished_at(works)
            wall, cpu = self._timed(loss.backward)
            covered = not ended
            _wait(works)
            if not covered and rounds < 64:
                rounds *= 2
                continue
            walls.append(wall)
            cpus.append(cpu)
        return statistics.median(walls), sum(cpus) / sum(walls)

    def comm_with_compute(self) -> float:
        walls: list[float] = []
        for _ in range(self.passes):
            loss = self._loss()
            self._sync()
            start = time.perf_counter()
            works = self.exchange.launch(self.buffers)
            ended = _finished_at(works)
            loss.backward()
            self._sync()  # a GPU's queue would otherwise run far ahead of the exchange
            while not ended:
                self._loss().backward()
                self._sync()
            _wait(works)
            self._sync()
            walls.append(ended[0] - start)
        return statistics.median(walls)

    def ddp_overlap(self) -> tuple[float, float]:
        """Backward with DDP's bucket launches: ``(backward s, end of the last allreduce s)`` from its start."""
        params = [p for p in self.trainer.model.parameters() if p.requires_grad]
        bwd_walls, end_walls = [], []
        for _ in range(self.passes):
            launcher = _BucketLauncher(self.buckets, params, self.exchange)
            handles = [p.register_post_accumulate_grad_hook(launcher.hook(i)) for i, p in enumerate(params)]
            try:
                loss = self._loss()
                self._sync()
                start = time.perf_counter()
                loss.backward()
                self._sync()
                bwd_end = time.perf_counter()
                launcher.flush()  # buckets whose gradients no pass produced
                _wait(launcher.works)
                self._sync()
                end = time.perf_counter()
            finally:
                for handle in handles:
                    handle.remove()
            bwd_walls.append(bwd_end - start)
            end_walls.append(end - start)
        return statistics.median(bwd_walls), statistics.median(end_walls)


class _BucketLauncher:
    """DDP's reducer in miniature: counts each bucket's gradients as they become ready, and flattens and
    allreduces the buckets in order, each once its own gradients and every earlier bucket are done."""

    def __init__(self, buckets: Sequence[Bucket], params: Sequence[torch.Tensor], exchange: LoopbackExchange):
        self.buckets = list(buckets)
        self.params = list(params)
        self.exchange = exchange
        self.bucket_of = {i: k for k, b in enumerate(self.buckets) for i in b.param_indices}
        self.waiting = [len(b.param_indices) for b in self.buckets]
        self.launched = 0
        self.works: list[Any] = []

    def hook(self, index: int) -> Callable[[torch.Tensor], None]:
        """The post-accumulate-grad hook of parameter ``index``."""

        def ready(_param: torch.Tensor) -> None:
            if index in self.bucket_of:
                self.waiting[self.bucket_of[index]] -= 1
                self._launch_ready()

        return ready

    def flush(self) -> None:
        """Launch every bucket not launched yet."""
        self.waiting = [0] * len(self.buckets)
        self._launch_ready()

    def _launch_ready(self) -> None:
        while self.launched < len(self.buckets) and self.waiting[self.launched] <= 0:
            grads = [self.params[i].grad for i in self.buckets[self.launched].param_indices]
            flat = [g.detach().reshape(-1).float() for g in grads if g is not None]
            empty = torch.zeros(1, device=self.params[0].device)
            self.works += self.exchange.launch([torch.cat(flat) if flat else empty])
            self.launched += 1


def measure_interference(
    trainer: Any, batch: int, buckets: Sequence[Bucket], repetitions: int = 3, passes: int = 2
) -> InterferenceMeasurement:
    """Measure how backward and the allreduce of ``buckets`` slow each other on ``trainer``'s device.

    Args:
        trainer: the profiler's trainer (model, optimizer, ``batch``, ``forward_loss``).
        batch: the batch backward runs at.
        buckets: the model's DDP buckets (the profile's bucket map).
        repetitions: independent repetitions (their spread is recorded).
        passes: timed passes of each kind per repetition (medians kept).

    Raises:
        ProfileError: no buckets, or fewer than one repetition or pass.
    """
    if not buckets or repetitions < 1 or passes < 1:
        raise ProfileError("interference needs DDP buckets, at least one repetition and one pass")
    quota = cpu_quota_cores()
    reps = []
    with LoopbackExchange() as exchange:
        run = _Repetition(trainer, batch, buckets, exchange, passes)
        run.backward_alone()  # warm-up: allocator, gloo's connections, the peer's buffers
        run.comm_alone()
        for _ in range(repetitions):
            bwd_s, bwd_cores = run.backward_alone()
            comm_s, comm_cores = run.comm_alone()
            rounds = max(1, math.ceil(COVER * bwd_s / comm_s))
            with_comm_s, both_cores = run.backward_with_comm(rounds)
            comm_busy_s = run.comm_with_compute()
            ddp_bwd_s, ddp_end_s = run.ddp_overlap()
            ms = 1e3
            reps.append(
                InterferenceRepetition(
                    bwd_alone_ms=bwd_s * ms,
                    bwd_alone_cores=bwd_cores,
                    comm_alone_ms=comm_s * ms,
                    comm_alone_cores=comm_cores,
                    bwd_with_comm_ms=with_comm_s * ms,
                    comm_with_compute_ms=comm_busy_s * ms,
                    both_cores=both_cores,
                    ddp_bwd_ms=ddp_bwd_s * ms,
                    ddp_end_ms=ddp_end_s * ms,
                )
            )
        peer = exchange.peer_where
    sizes = tuple(int(b.size_bytes) for b in buckets)
    return InterferenceMeasurement(
        method=METHOD + (GPU_METHOD_NOTE if trainer.is_cuda else ""),
        batch=batch,
        bucket_bytes=sizes,
        bus_bytes_per_round=float(sum(math.ceil(s / FLOAT32_BYTES) * FLOAT32_BYTES for s in sizes)),
        peer=peer,
        cpu_quota_cores=quota,
        threads=torch.get_num_threads(),
        repetitions=tuple(reps),
    )
