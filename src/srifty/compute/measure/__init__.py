"""Compute stage, the measurement: profile a real PyTorch model (needs torch; the models it fits are pure and
live in :mod:`srifty.compute`).

* :mod:`~srifty.compute.measure.profiler`: largest batch, per-phase latency, memory, gradient timeline;
* :mod:`~srifty.compute.measure.opcount`: each ATen op's FLOPs, bytes and time;
* :mod:`~srifty.compute.measure.interference`: how backward and the DDP buckets' allreduce slow each other
  (a loopback gloo peer, :mod:`~srifty.compute.measure.interference_peer`; the CPU quota it leaves,
  :mod:`~srifty.compute.measure.cpu_quota`);
* :mod:`~srifty.compute.measure.peaks`: a device's measured roofline ceilings;
* :mod:`~srifty.compute.measure.workloads`: a trainable model, synthetic batches and a loss from a name;
* :mod:`~srifty.compute.measure.device`: the device a profile is measured on.

Importing this package loads no torch; :func:`profile_model` and :func:`profile_options` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srifty.compute.measure.profiler import ProfileOptions, ProgressFn
    from srifty.compute.profile import Profile


def profile_model(name: str, options: ProfileOptions | None = None, progress: ProgressFn | None = None) -> Profile:
    """Profile model ``name`` (see :func:`srifty.compute.measure.profiler.profile_model`). Imports torch."""
    from srifty.compute.measure import profiler

    return profiler.profile_model(name, options or profiler.ProfileOptions(), progress)


def profile_options(**kwargs: Any) -> ProfileOptions:
    """Build :class:`srifty.compute.measure.profiler.ProfileOptions` (imports torch)."""
    from srifty.compute.measure.profiler import ProfileOptions

    return ProfileOptions(**kwargs)


__all__ = ["profile_model", "profile_options"]
