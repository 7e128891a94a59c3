"""One rank of the memory benchmark (benchmarks/fsdp_memory.py), run under torchrun with gloo on the CPU.

DDP: the profiler (``profile_memory``) starts before anything is built, so the CPU allocator's every allocation
and free of this process is in its record, DDP's buckets included (no tensor tracker sees them). After two
warm-up iterations, one iteration runs in two marked phases (forward and backward; optimizer step); the peak of
each is the most bytes the allocator held, counted from the start, inside the phase. FSDP and HSDP: torch's
``FSDPMemTracker`` over the same iteration. The allocator counter cannot measure them: frees made on gloo's
worker threads (where FSDP2's collectives release their buffers) are not in the profiler's record, so the
count only rises; it read 10-40 % above the tracker, differently on each rank. Rank 0 prints every rank's
peaks as one JSON line. Environment: ``FSDP_MEMORY_MODEL`` (a factory, ``module:name``),
``FSDP_MEMORY_BATCH`` (local batch), ``FSDP_MEMORY_COUNTER=1`` (FSDP/HSDP read by the allocator counter too:
an upper bound, for :func:`benchmarks.fsdp_memory.counter_check`), and the ``SRIFTY_*`` strategy variables of
``srifty.torch.fsdp``.
"""

import importlib
import json
import os
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, record_function

from srifty.torch.fsdp import parallelize

PHASES = ("srifty.fwbw", "srifty.step")


def main() -> None:
    torch.set_num_threads(1)
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    prof.start()
    dist.init_process_group("gloo")
    module, name = os.environ["FSDP_MEMORY_MODEL"].split(":")
    model, make_batch, loss_fn = getattr(importlib.import_module(module), name)()
    batch = int(os.environ["FSDP_MEMORY_BATCH"])
    run = parallelize(model, weight=1.0 / dist.get_world_size())
    optimizer = torch.optim.AdamW(run.model.parameters(), lr=1e-4, foreach=False)
    inputs, target = make_batch(batch)
    for _ in range(2):
        optimizer.zero_grad(set_to_none=True)
        (loss_fn(run.model(inputs), target) * run.loss_scale).backward()
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if run.parallelism != "ddp" and not os.environ.get("FSDP_MEMORY_COUNTER"):
        prof.stop()
        peaks = fsdp_tracked(run.model, optimizer, lambda: loss_fn(run.model(inputs), target) * run.loss_scale)
        report(peaks)
        return
    with record_function(PHASES[0]):
        (loss_fn(run.model(inputs), target) * run.loss_scale).backward()
    with record_function(PHASES[1]):
        optimizer.step()
    prof.stop()
    peaks = counter_peaks(prof, PHASES)
    report({"forward_bytes": peaks[PHASES[0]], "step_bytes": peaks[PHASES[1]], "how": "allocator counter"})


def counter_peaks(prof: profile, phases: tuple[str, ...]) -> dict[str, float]:
    """The most bytes the CPU allocator held, counted from the profiler's start, inside each of ``phases``
    (``record_function`` names; 0 for a phase that never ran)."""
    assert prof.profiler is not None and prof.profiler.kineto_results is not None
    events = sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns())
    windows = {e.name(): (e.start_ns(), e.end_ns()) for e in events if e.name() in phases}
    held, peaks = 0.0, dict.fromkeys(phases, 0.0)
    for event in events:
        if event.name() == "[memory]":
            held += float(event.nbytes())  # type: ignore[attr-defined]  # memory events carry it; the stub lacks it
            for name, (start, end) in windows.items():
                if start <= event.start_ns() <= end:
                    peaks[name] = max(peaks[name], held)
    return peaks


def fsdp_tracked(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss: Callable[[], Any]) -> dict:
    """Peaks of forward-and-backward and of the step from ``FSDPMemTracker`` (torch's tracker of fully_shard's
    tensors: sharded and gathered parameters, gradients, optimizer state, activations, collective buffers)."""
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

    out: dict[str, str | float] = {"how": "FSDPMemTracker"}
    for phase in ("forward", "step"):
        tracker = FSDPMemTracker(model, optimizer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with tracker:
                if phase == "forward":
                    loss().backward()
                else:
                    optimizer.step()
        peak = tracker.get_tracker_snapshot("peak")
        out[f"{phase}_bytes"] = float(sum(stats.get("Total", 0) for stats in peak.values()))
        parts: dict[str, float] = {}
        for stats in peak.values():  # what the tracker saw at its peak, by kind (activations, temporaries, ...)
            for kind, held in stats.items():
                if kind != "Total":
                    label = str(getattr(kind, "value", kind))
                    parts[label] = parts.get(label, 0.0) + held
        out[f"{phase}_parts_bytes"] = parts  # type: ignore[assignment]
    return out


def report(peaks: dict) -> None:
    """Rank 0 prints every rank's peaks as one JSON line; the process ends."""
    mine = {"rank": dist.get_rank(), **peaks}
    gathered: list = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, mine)
    if dist.get_rank() == 0:
        print("MEMORY " + json.dumps(gathered), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.14's gloo can abort in C++ destructors at exit


def tracker_check(factory: str, batch: int, checkpointing: bool) -> None:
    """One process, no process group: one forward-and-backward's peak read by the CPU allocator's counter (exact
    here: no gloo thread frees anything) and by torch's ``MemTracker`` (the tensor tracker ``FSDPMemTracker``
    extends), printed as one JSON line. Where the two differ, the tracker misses allocations made inside
    operators."""
    from torch.distributed._composable import checkpoint
    from torch.distributed._tools.mem_tracker import MemTracker

    from srifty.torch.fsdp import block_names

    torch.set_num_threads(1)
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    prof.start()
    module, name = factory.split(":")
    model, make_batch, loss_fn = getattr(importlib.import_module(module), name)()
    if checkpointing:
        for block in block_names(model):
            checkpoint(model.get_submodule(block))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    inputs, target = make_batch(batch)
    for _ in range(2):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(inputs), target).backward()
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    with record_function(PHASES[0]):
        loss_fn(model(inputs), target).backward()
    prof.stop()
    counter = counter_peaks(prof, PHASES[:1])[PHASES[0]]
    optimizer.zero_grad(set_to_none=True)
    tracker = MemTracker()
    tracker.track_external(model, optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tracker:
            loss_fn(model(inputs), target).backward()
    tracked = float(sum(stats.get("Total", 0) for stats in tracker.get_tracker_snapshot("peak").values()))
    print("TRACKER " + json.dumps({"counter_bytes": counter, "tracker_bytes": tracked}), flush=True)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--tracker-check"]:
        tracker_check(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
    else:
        main()
