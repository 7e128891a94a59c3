"""From timed probes to a profile's models, the same way whoever times them: the profiler (real PyTorch) and
srifty's profiling of the emulated cloud.

:func:`probe_latency` picks the batches to time (:func:`~srifty.compute.latency.fit_latency_curve` over the
powers of two up to the largest batch, and that batch) and fits each phase's latency model through what was
timed; :func:`param_buckets` groups a gradient timeline into DDP buckets. Pure: the timing is the caller's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from srifty.compute.buckets import Bucket, assign_buckets
from srifty.compute.latency import LatencyModel, default_candidates, fit_latency_curve, fit_phase_model
from srifty.compute.profile import PHASES, ParamInfo, PhaseSamples


def probe_latency(
    time_batch: Callable[[int], PhaseSamples], max_batch: int, n_probes: int, flat_floor: bool, rounds: int = 1
) -> tuple[tuple[PhaseSamples, ...], dict[str, LatencyModel]]:
    """Time at most ``n_probes`` batches with ``time_batch`` and fit a latency model per phase (ms).

    Args:
        time_batch: times iterations at a batch size.
        max_batch: the largest batch that fits (always a candidate).
        n_probes: batches to time.
        flat_floor: small batches sit on a latency-bound floor (a GPU; a CPU's curve rises instead).
        rounds: times each chosen batch is timed, in passes over all of them (the first pass also chooses
            them), so that a slow spell of a shared machine is spread over every batch instead of moving one;
            each phase's model is fitted through the robust mean of all its rounds' samples.

    Returns:
        The samples, by batch, and the models of ``iter`` and each phase.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    samples: dict[int, PhaseSamples] = {}

    def iter_ms(batch: int) -> float:
        samples[batch] = time_batch(batch)
        return samples[batch].robust_mean_ms("iter")

    candidates = default_candidates(max_batch)
    if candidates[-1] != max_batch:
        candidates.append(max_batch)
    latency = {"iter": fit_latency_curve(iter_ms, max_batch, n_probes, candidates, flat_floor=flat_floor)}
    batches = sorted(samples)
    for _ in range(rounds - 1):
        for b in batches:
            samples[b] = samples[b].pooled_with(time_batch(b))
    if rounds > 1:  # the same fit as the first pass's, through every round's samples
        latency["iter"] = fit_phase_model(batches, [samples[b].robust_mean_ms("iter") for b in batches], flat_floor)
    for phase in PHASES[:-1]:
        values = [samples[b].robust_mean_ms(phase) for b in batches]
        latency[phase] = fit_phase_model(batches, values, flat_floor=flat_floor)
    return tuple(samples[b] for b in batches), latency


def param_buckets(params: Sequence[ParamInfo], ready_order: Sequence[int], bucket_cap_mb: float | None) -> list[Bucket]:
    """The DDP buckets of parameters whose gradients became ready in ``ready_order``."""
    sizes = [p.size_bytes for p in params]
    return assign_buckets(ready_order, sizes, [p.ready_frac for p in params], bucket_cap_mb, [p.dtype for p in params])
