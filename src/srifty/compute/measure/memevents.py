"""Peak CPU memory of the phases of a computation, from the CPU allocator's own counter.

With ``torch.profiler.profile(profile_memory=True)`` every allocation and free the CPU allocator makes while
profiling is reported as a ``[memory]`` event with its signed size and time. Summed in time order they are the
allocator's count of bytes allocated since profiling began (the profiler's ``Total Allocated``); frees of
memory allocated before are not reported, so the count is of what the profiled code itself holds. Each
phase runs inside a ``record_function`` range, and its peak is the highest count reached within that range.
Needs torch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from torch.profiler import ProfilerActivity, profile, record_function

_PREFIX = "srifty.phase."
_MARK = "srifty.mark"


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the block (the profiler's C++ logging bypasses Python)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def mark() -> None:
    """Record this moment for :func:`allocator_phase_peaks` (called inside a phase, for example from an autograd
    hook, to split the phase's peak there)."""
    with record_function(_MARK):
        pass


def allocator_phase_peaks(phases: Mapping[str, Callable[[], object]]) -> dict[str, float]:
    """Run each phase in order under the profiler; the most bytes the CPU allocator held above its level at
    the start, within each phase (0 for a phase that allocated nothing). A phase in which :func:`mark` was
    called also gets ``"<phase>.before_mark"`` and ``"<phase>.after_mark"``: its peak before and from the first
    mark, and ``"<phase>.mark<i>"``: its peak from mark ``i`` (0 the first) to the next mark or its end."""
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with _quiet_stderr():  # the profiler's back end logs every start and stop on stderr
        prof.start()
    try:
        for name, run in phases.items():
            with record_function(_PREFIX + name):
                run()
    finally:
        with _quiet_stderr():
            prof.stop()
    events = sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns())  # type: ignore[union-attr]
    windows = {
        e.name().removeprefix(_PREFIX): (e.start_ns(), e.end_ns()) for e in events if e.name().startswith(_PREFIX)
    }
    marks = [e.start_ns() for e in events if e.name() == _MARK]
    for name, (start, end) in list(windows.items()):
        inside = [t for t in marks if start <= t <= end]
        if inside:
            windows[f"{name}.before_mark"] = (start, inside[0] - 1)
            windows[f"{name}.after_mark"] = (inside[0], end)
            for i, at in enumerate(inside):
                windows[f"{name}.mark{i}"] = (at, inside[i + 1] - 1 if i + 1 < len(inside) else end)
    peaks = dict.fromkeys(windows, 0.0)
    held = 0.0
    for event in events:
        if event.name() != "[memory]":
            continue
        held += float(event.nbytes())
        for name, (start, end) in windows.items():
            if start <= event.start_ns() <= end:
                peaks[name] = max(peaks[name], held)
    return {**dict.fromkeys(phases, 0.0), **peaks}


__all__ = ["allocator_phase_peaks", "mark"]
