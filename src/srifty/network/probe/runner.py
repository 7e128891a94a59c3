"""``srifty probe``: time real ``torch.distributed`` collectives over a sweep of sizes and concurrency.

Run one process per GPU (or per host, on CPU) under torchrun. gloo is used on CPU and nccl on GPU. Each
collective asked for (allreduce by default; all-gather and reduce-scatter, which sharded data parallelism
runs, with ``--collective``) is swept in turn. For each size ``s`` and concurrency ``k`` every rank issues
``k`` asynchronous collectives over an ``s``-byte buffer each (an all-gather gathers ``s/n`` bytes from each
rank into ``s``, a reduce-scatter reduces ``s`` into ``s/n`` per rank; sizes are rounded down to a multiple of
``4·n`` bytes for them) and waits for all of them; a repeat times ``inner_iters`` such rounds back to back
(enough to last ``min_repeat_s``, as nccl-tests loops small messages) and reports the per-round time, the
slowest rank's. A row's ``busbw``/``algbw`` is that of *one* of the ``k`` transfers, which is what the
simulator shares a link among.

Rank 0 appends rows to the Parquet file every ``flush_s`` seconds and at the end, atomically, so an
interrupted probe keeps what it measured. Each rank records a heartbeat in torchrun's store before every
collective phase; when a collective times out, the ranks whose heartbeat lags are named as hung.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from srifty.network.dataset import append_probes
from srifty.network.errors import ProbeError, ProbeTimeoutError
from srifty.network.probe.context import InstanceOptions, ProbeContext, TorchrunLayout, resolve_context
from srifty.vocab import COLLECTIVES, algbw_bytes_per_s, busbw_bytes_per_s, probe_frame, size_sweep_bytes

ELEMENT_BYTES = 4  # float32
BACKENDS = ("auto", "gloo", "nccl")
#: Fraction of available memory the probe's buffers may take on one node.
MEMORY_FRACTION = 0.5


@dataclass(frozen=True)
class ProbeSettings:
    """What to sweep and how (validated on construction).

    Attributes:
        out: Parquet file rank 0 appends rows to.
        sizes_bytes: message sizes, multiples of 4 bytes (float32 elements).
        concurrency: numbers of asynchronous allreduces in flight at once.
        repeats: timed repeats per (size, concurrency); one row each.
        warmup: untimed rounds before timing.
        timeout_s: a collective that takes longer fails the probe, naming the hung ranks.
        backend: ``auto`` (nccl with CUDA, else gloo), ``gloo`` or ``nccl``.
        min_repeat_s: a repeat loops rounds until it lasts about this long.
        max_inner_iters: at most this many rounds per repeat.
        flush_s: rank 0 appends to ``out`` at least this often.
        hang_rank: test hook: this rank sleeps past the timeout before step ``hang_step``.
        hang_step: see ``hang_rank``.
        collectives: which collectives to sweep, in order (see :data:`~srifty.vocab.busbw.COLLECTIVES`).
    """

    out: Path
    sizes_bytes: tuple[int, ...] = field(default_factory=lambda: tuple(size_sweep_bytes()))
    concurrency: tuple[int, ...] = (1, 2, 4)
    repeats: int = 5
    warmup: int = 2
    timeout_s: float = 300.0
    backend: str = "auto"
    min_repeat_s: float = 0.02
    max_inner_iters: int = 50
    flush_s: float = 30.0
    hang_rank: int | None = None
    hang_step: int = 1
    collectives: tuple[str, ...] = ("allreduce",)

    def __post_init__(self) -> None:
        unknown = [c for c in self.collectives if c not in COLLECTIVES]
        if not self.collectives or unknown:
            raise ProbeError(
                f"unknown collective(s) {unknown or '(none given)'}; --collective takes {', '.join(COLLECTIVES)}."
            )
        if not self.sizes_bytes:
            raise ProbeError("no sizes to probe; give at least one size.")
        bad = [s for s in self.sizes_bytes if s < ELEMENT_BYTES or s % ELEMENT_BYTES]
        if bad:
            raise ProbeError(f"sizes must be positive multiples of 4 bytes (float32); got {bad[:3]}.")
        if not self.concurrency or min(self.concurrency) < 1:
            raise ProbeError(f"concurrency levels must be integers ≥ 1, got {list(self.concurrency)}.")
        if self.repeats < 1 or self.warmup < 0:
            raise ProbeError(f"need repeats ≥ 1 and warmup ≥ 0, got {self.repeats} and {self.warmup}.")
        if not self.timeout_s > 0:
            raise ProbeError(f"the timeout must be a positive number of seconds, got {self.timeout_s}.")
        if self.backend not in BACKENDS:
            raise ProbeError(f"backend must be one of {', '.join(BACKENDS)}, got '{self.backend}'.")
        if Path(self.out).suffix != ".parquet":
            raise ProbeError(f"the output must be a .parquet file, got '{self.out}'.")
        if self.max_inner_iters < 1 or self.min_repeat_s < 0:
            raise ProbeError("need max_inner_iters ≥ 1 and min_repeat_s ≥ 0.")


def fmt_bytes(size_bytes: int) -> str:
    """``512 B``, ``64 KiB``, ``32 MiB``: binary units, exact where possible."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale:
            value = size_bytes / scale
            return f"{value:.0f} {unit}" if value.is_integer() else f"{value:.1f} {unit}"
    return f"{size_bytes} B"


class Heartbeat:
    """Each rank's last collective phase, kept in the store, to name the ranks that hung."""

    def __init__(self, store: Any, run_id: str, layout: TorchrunLayout, host: str) -> None:
        self.store = store
        self.prefix = f"srifty/probe/{run_id}"
        self.layout = layout
        store.set(f"{self.prefix}/host/{layout.rank}", host)

    def beat(self, seq: int, label: str) -> None:
        """Record that this rank is entering collective phase ``seq`` (described by ``label``)."""
        self.store.set(f"{self.prefix}/beat/{self.layout.rank}", f"{seq}|{label}")

    def _read(self, key: str) -> str | None:
        try:
            if not self.store.check([key]):
                return None
            return bytes(self.store.get(key)).decode()
        except Exception:  # the store itself may be gone; diagnosing must not raise
            return None

    def diagnose(self) -> tuple[list[int], str]:
        """``(hung ranks, description)``: the ranks whose heartbeat lags the furthest-along rank's."""
        seen: dict[int, tuple[int, str, str]] = {}
        for rank in range(self.layout.world_size):
            beat = self._read(f"{self.prefix}/beat/{rank}")
            host = self._read(f"{self.prefix}/host/{rank}") or "?"
            if beat is None:
                seen[rank] = (-1, "never started", host)
            else:
                seq, label = beat.split("|", 1)
                seen[rank] = (int(seq), label, host)
        return describe_lag(seen)


def describe_lag(seen: dict[int, tuple[int, str, str]]) -> tuple[list[int], str]:
    """Given ``{rank: (phase seq, phase label, host)}``, the lagging ranks and a one-line description."""
    if not seen:
        return [], "no rank reported progress"
    front = max(s for s, _, _ in seen.values())
    lagging = sorted(r for r, (s, _, _) in seen.items() if s < front)
    if not lagging:
        label = next(lab for s, lab, _ in seen.values() if s == front)
        return [], f"every rank reached '{label}'; the collective itself stalled (a link or peer is down?)"
    parts = [f"rank {r} on {seen[r][2]} (last at '{seen[r][1]}')" for r in lagging]
    ahead = next(lab for s, lab, _ in seen.values() if s == front)
    return lagging, f"{'; '.join(parts)} while the others wait at '{ahead}'"


def _rows_for(
    times_s: Sequence[float],
    size: int,
    collective: str,
    k: int,
    inner: int,
    layout: TorchrunLayout,
    ctx: ProbeContext,
    backend: str,
    device: str,
    run_id: str,
) -> list[dict[str, Any]]:
    rows = []
    now = time.time()
    for repeat, measured in enumerate(times_s):
        time_s = measured / ctx.emulation_scale
        rows.append(
            {
                "busbw_bytes_per_s": float(busbw_bytes_per_s(size, layout.world_size, time_s, collective)),
                "algbw_bytes_per_s": float(algbw_bytes_per_s(size, time_s)),
                "time_s": time_s,
                "measured_time_s": measured,
                "size_bytes": size,
                "world_size": layout.world_size,
                "n_nodes": layout.n_nodes,
                "gpus_per_node": ctx.gpus_per_node,
                "n_concurrent": k,
                "repeat": repeat,
                "inner_iters": inner,
                "backend": backend,
                "device": device,
                "dtype": "float32",
                "cloud": ctx.cloud,
                "region": ctx.region,
                "zone": ctx.zone,
                "instance_type": ctx.instance_type,
                "gpu": ctx.gpu,
                "cpu": ctx.cpu,
                "rated_network_gbps": ctx.rated_network_gbps,
                "allocation_id": ctx.allocation_id,
                "run_id": run_id,
                "host": ctx.host,
                "timestamp_s": now,
                "emulated": ctx.emulated,
                "emulation_scale": ctx.emulation_scale,
                "shaped_gbps": ctx.shaped_gbps,
                "slowest_link_gbps": ctx.slowest_link_gbps,
                "intra_node_shaped_gbps": ctx.intra_node_shaped_gbps,
                "rate_variation": ctx.rate_variation,
                "testbed_name": ctx.testbed_name,
                "collective": collective,
            }
        )
    return rows


def _check_memory(settings: ProbeSettings, layout: TorchrunLayout, device: Any) -> None:
    import torch

    split = any(c != "allreduce" for c in settings.collectives)  # a 1/n part beside the whole buffer
    need_bytes = max(settings.sizes_bytes) * max(settings.concurrency) * (1.5 if split else 1.0)
    if device.type == "cuda":
        free_bytes, _ = torch.cuda.mem_get_info(device)
        budget, where = free_bytes * MEMORY_FRACTION, "free GPU memory"
        need_node = need_bytes
    else:
        budget = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * MEMORY_FRACTION
        where, need_node = "available memory on this node", need_bytes * layout.local_world_size
    if need_node > budget:
        raise ProbeError(
            f"the largest step needs {fmt_bytes(int(need_node))} of buffers "
            f"({fmt_bytes(max(settings.sizes_bytes))} × {max(settings.concurrency)} concurrent"
            + ("" if device.type == "cuda" else f" × {layout.local_world_size} processes")
            + f"), more than half the {where}; lower --max-size or the concurrency."
        )


def run_probe(settings: ProbeSettings, options: InstanceOptions) -> int:
    """Run the sweep on this rank; rank 0 writes the rows. Returns the rows this run appended (0 on
    other ranks).

    Raises:
        ProbeError: not under torchrun, bad options, not enough memory, or a collective failed.
        ProbeTimeoutError: a collective exceeded ``timeout_s``; names the ranks that hung.
    """
    layout = TorchrunLayout.from_environ()
    import torch
    import torch.distributed as dist

    backend = settings.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise ProbeError("backend nccl needs CUDA GPUs, and none is visible; use --backend gloo.")
        device = torch.device("cuda", layout.local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    _check_memory(settings, layout, device)
    timeout = timedelta(seconds=settings.timeout_s)
    store = dist.TCPStore(
        layout.master_addr,
        layout.master_port,
        layout.world_size,
        is_master=layout.rank == 0 and not layout.agent_store,
        timeout=timeout,
        wait_for_workers=False,
    )
    dist.init_process_group(
        backend,
        store=dist.PrefixStore("srifty/pg", store),
        rank=layout.rank,
        world_size=layout.world_size,
        timeout=timeout,
        device_id=device if device.type == "cuda" else None,  # binds nccl's barrier to this GPU
    )
    try:
        return _sweep(settings, options, layout, store, backend, device)
    finally:
        dist.destroy_process_group()


def _sweep(
    settings: ProbeSettings,
    options: InstanceOptions,
    layout: TorchrunLayout,
    store: Any,
    backend: str,
    device: Any,
) -> int:
    import torch
    import torch.distributed as dist

    box: list[Any] = [uuid.uuid4().hex[:12] if layout.rank == 0 else None]
    dist.broadcast_object_list(box, src=0, device=device if backend == "nccl" else None)
    run_id = str(box[0])
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    ctx = resolve_context(options, layout, run_id, device_name)
    heartbeat = Heartbeat(store, run_id, layout, ctx.host)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    world = layout.world_size

    def issue(collective: str, pair: tuple[Any, Any]) -> Any:
        whole, part = pair
        if collective == "all_gather":
            return dist.all_gather_into_tensor(whole, part, async_op=True)
        if collective == "reduce_scatter":
            return dist.reduce_scatter_tensor(part, whole, async_op=True)
        return dist.all_reduce(whole, async_op=True)

    def rounds(collective: str, tensors: list[tuple[Any, Any]], inner: int) -> float:
        start = time.perf_counter()
        for _ in range(inner):
            works = [issue(collective, pair) for pair in tensors]
            for work in works:
                work.wait()
        sync()
        return (time.perf_counter() - start) / inner

    steps = [
        (c, sized(c, s, world), k)
        for c in settings.collectives
        for s in settings.sizes_bytes
        for k in settings.concurrency
    ]
    steps = list(dict.fromkeys(steps))  # rounding to whole chunks can make two sizes one
    pending: list[dict[str, Any]] = []
    written = 0
    last_flush = time.monotonic()
    seq = 0

    def flush() -> None:
        nonlocal pending, written, last_flush
        if layout.rank == 0 and pending:
            append_probes(settings.out, probe_frame(pending))
            written += len(pending)
        pending, last_flush = [], time.monotonic()

    progress = _progress(layout.rank == 0)
    try:
        with progress:
            task = progress.add_task(settings.collectives[0], total=len(steps))
            for step, (collective, size, k) in enumerate(steps):
                if settings.hang_rank == layout.rank and step == settings.hang_step:
                    time.sleep(settings.timeout_s * 3 + 30)
                what = f"{collective} {fmt_bytes(size)} ×{k}"
                progress.update(task, description=what)
                tensors = [buffers(collective, size, world, device) for _ in range(k)]
                heartbeat.beat(seq := seq + 1, f"{what}, warm-up")
                warm_s = math.inf
                for _ in range(max(settings.warmup, 1)):
                    dist.barrier()
                    warm_s = min(warm_s, rounds(collective, tensors, 1))
                inner = max(1, min(settings.max_inner_iters, math.ceil(settings.min_repeat_s / max(warm_s, 1e-9))))
                agreed = torch.tensor([inner], dtype=torch.int64, device=device)
                dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
                inner = int(agreed.item())
                times = []
                for repeat in range(settings.repeats):
                    heartbeat.beat(seq := seq + 1, f"{what}, repeat {repeat}")
                    dist.barrier()
                    times.append(rounds(collective, tensors, inner))
                slowest = torch.tensor(times, dtype=torch.float64, device=device)
                heartbeat.beat(seq := seq + 1, f"{what}, gathering times")
                dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
                if layout.rank == 0:
                    pending.extend(
                        _rows_for(
                            slowest.tolist(), size, collective, k, inner, layout, ctx, backend, str(device), run_id
                        )
                    )
                del tensors
                progress.advance(task)
                if time.monotonic() - last_flush >= settings.flush_s:
                    flush()
    except RuntimeError as err:
        flush()  # before diagnosing, so nothing measured is lost if the store is gone too
        _, description = heartbeat.diagnose()
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        saved = f" ({written} rows were saved to {settings.out}.)" if layout.rank == 0 else ""
        if "timed out" in text.lower() or "timeout" in text.lower():
            raise ProbeTimeoutError(
                f"rank {layout.rank}: a collective timed out after {settings.timeout_s:g} s. Hung: "
                f"{description}. Check that rank's host and link, or raise --timeout-s for slow links." + saved
            ) from None
        raise ProbeError(f"rank {layout.rank}: a collective failed ({text}). Lagging: {description}." + saved) from None
    finally:
        flush()
    return written


def sized(collective: str, size_bytes: int, world_size: int) -> int:
    """The buffer size actually probed: an all-gather or a reduce-scatter splits its buffer into ``n`` equal
    chunks of whole float32 elements, so its size is rounded down to a multiple of ``4·n`` bytes (at least
    one element per rank); an allreduce keeps ``size_bytes``."""
    if collective == "allreduce":
        return size_bytes
    chunk = max(size_bytes // (ELEMENT_BYTES * world_size), 1)
    return chunk * ELEMENT_BYTES * world_size


def buffers(collective: str, size_bytes: int, world_size: int, device: Any) -> tuple[Any, Any]:
    """``(whole buffer, this rank's part)`` of one transfer: the part is the whole for an allreduce, a
    ``1/n`` chunk for the others (what an all-gather sends, what a reduce-scatter receives)."""
    import torch

    whole = torch.zeros(size_bytes // ELEMENT_BYTES, dtype=torch.float32, device=device)
    if collective == "allreduce":
        return whole, whole
    return whole, torch.zeros(size_bytes // ELEMENT_BYTES // world_size, dtype=torch.float32, device=device)


def _progress(enabled: bool) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not enabled,
        transient=False,
    )
