"""Collective bandwidth arithmetic, as in nccl-tests: bus bandwidth, algorithm bandwidth, sizes, the MTU.

Bus bandwidth is the rate each rank's link carries during a ring collective over ``n`` ranks. For an
allreduce of ``s`` bytes every rank sends (and receives) ``2·s·(n−1)/n`` bytes, so
``busbw = 2·s·(n−1)/(n·t)``. For an all-gather and a reduce-scatter ``s`` is the *whole* buffer (the
gathered output, or the input before it is scattered: ``n`` chunks of ``s/n``) and every rank sends
``s·(n−1)/n``, so ``busbw = s·(n−1)/(n·t)`` (nccl-tests' ``PERFORMANCE.md`` conventions, which make the
three comparable: the same link reaches about the same bus bandwidth in each). Algorithm bandwidth is
plainly ``s/t``. Shared vocabulary: the probe, the bandwidth models, the simulator and the emulated cloud
all count bytes and bandwidth this way. All functions accept scalars or numpy arrays and broadcast; the
``collective`` argument defaults to ``"allreduce"``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from srifty.errors import ProbeError
from srifty.units import parse_bytes

ArrayLike = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]

#: EC2's jumbo-frame MTU in bytes, the paper's split point between the small- and large-message models.
DEFAULT_MTU_BYTES = 9001
#: The paper's probe range: 4 B to 512 MiB.
DEFAULT_MIN_SIZE_BYTES = 4
DEFAULT_MAX_SIZE_BYTES = 512 * 2**20


#: The collectives srifty probes and models: data-parallel training's allreduce, and sharded data
#: parallelism's all-gather (parameters) and reduce-scatter (gradients).
Collective = Literal["allreduce", "all_gather", "reduce_scatter"]
COLLECTIVES: tuple[Collective, ...] = ("allreduce", "all_gather", "reduce_scatter")
#: Bytes each rank sends per byte of ``s``, times ``n/(n−1)``: 2 for allreduce, 1 for the other two.
_RING_PASSES: dict[str, float] = {"allreduce": 2.0, "all_gather": 1.0, "reduce_scatter": 1.0}


def ring_passes(collective: str) -> float:
    """How many times ``(n−1)/n`` of the buffer each rank sends: 2 (allreduce) or 1 (all-gather,
    reduce-scatter).

    Raises:
        ProbeError: an unknown collective, naming the known ones.
    """
    try:
        return _RING_PASSES[collective]
    except KeyError:
        raise ProbeError(f"unknown collective '{collective}'; use one of {', '.join(COLLECTIVES)}.") from None


def ring_bytes_factor(world_size: ArrayLike, collective: str = "allreduce") -> FloatArray:
    """Bytes each rank sends per byte of the buffer: ``2·(n−1)/n`` for allreduce, ``(n−1)/n`` for
    all-gather and reduce-scatter (0 for a single rank)."""
    n = np.asarray(world_size, dtype=np.float64)
    return ring_passes(collective) * (n - 1.0) / n


def bus_bytes(size_bytes: ArrayLike, world_size: int, collective: str = "allreduce") -> FloatArray:
    """Bytes each rank moves in a ring ``collective`` over a buffer of ``size_bytes``: ``2·s·(n−1)/n`` for
    allreduce, ``s·(n−1)/n`` for all-gather and reduce-scatter (0 when ``n == 1``), so that
    ``bus_bytes / busbw`` is the collective's duration."""
    s = np.asarray(size_bytes, dtype=float)
    if world_size <= 1:
        return np.zeros_like(s)
    return ring_passes(collective) * s * (world_size - 1) / world_size


def busbw_bytes_per_s(
    size_bytes: ArrayLike, world_size: ArrayLike, time_s: ArrayLike, collective: str = "allreduce"
) -> FloatArray:
    """Bus bandwidth in bytes/s of a ``collective`` over a ``size_bytes`` buffer and ``world_size`` ranks that
    took ``time_s`` seconds: ``2·s·(n−1)/(n·t)`` for allreduce, ``s·(n−1)/(n·t)`` for the others. Returns a
    float array (a 0-d array for scalar inputs)."""
    factor = ring_bytes_factor(world_size, collective)
    return np.asarray(size_bytes, dtype=np.float64) * factor / np.asarray(time_s)


def algbw_bytes_per_s(size_bytes: ArrayLike, time_s: ArrayLike) -> FloatArray:
    """Algorithm bandwidth ``s/t`` in bytes/s."""
    return np.asarray(size_bytes, dtype=np.float64) / np.asarray(time_s, dtype=np.float64)


def allreduce_time_s(
    size_bytes: ArrayLike, world_size: ArrayLike, busbw: ArrayLike, collective: str = "allreduce"
) -> FloatArray:
    """Inverse of :func:`busbw_bytes_per_s`: the time in s of a ``collective`` (an allreduce by default) at
    bus bandwidth ``busbw`` (bytes/s). A single rank needs no transfer and takes 0 s."""
    volume = np.asarray(size_bytes, dtype=np.float64) * ring_bytes_factor(world_size, collective)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(volume > 0, volume / np.asarray(busbw, dtype=np.float64), 0.0)


def is_small_message(size_bytes: ArrayLike, mtu_bytes: int = DEFAULT_MTU_BYTES) -> npt.NDArray[np.bool_]:
    """Whether each message fits in one packet (``size ≤ MTU``): the paper's small-message model."""
    return np.asarray(size_bytes) <= mtu_bytes


def size_sweep_bytes(
    min_size_bytes: int = DEFAULT_MIN_SIZE_BYTES,
    max_size_bytes: int = DEFAULT_MAX_SIZE_BYTES,
    step_factor: int = 2,
    element_bytes: int = 4,
) -> list[int]:
    """Geometric sweep ``min, min·f, min·f², …`` up to and including ``max`` (added when not on the grid).

    Raises:
        ProbeError: sizes that are not positive multiples of ``element_bytes`` or an empty range.
    """
    if step_factor < 2:
        raise ProbeError(f"the size step factor must be an integer ≥ 2, got {step_factor}.")
    for name, value in (("minimum", min_size_bytes), ("maximum", max_size_bytes)):
        if value < element_bytes or value % element_bytes:
            raise ProbeError(
                f"the {name} size {value} B is not a positive multiple of the {element_bytes}-byte "
                "element (float32); pick a multiple of 4."
            )
    if min_size_bytes > max_size_bytes:
        raise ProbeError(f"the minimum size {min_size_bytes} B exceeds the maximum {max_size_bytes} B.")
    sizes = [min_size_bytes]
    while sizes[-1] * step_factor <= max_size_bytes:
        sizes.append(sizes[-1] * step_factor)
    if sizes[-1] != max_size_bytes:
        sizes.append(max_size_bytes)
    return sizes


def parse_size_bytes(text: str) -> int:
    """A message size such as ``"4"``, ``"4B"``, ``"64KiB"``, ``"32M"`` or ``"1GiB"`` in bytes (binary
    multiples; :func:`srifty.units.parse_bytes` reads it).

    Raises:
        ProbeError: anything else, with the accepted forms.
    """
    try:
        return parse_bytes(text)
    except ValueError:
        raise ProbeError(
            f"cannot read '{text}' as a size; write bytes as an integer, optionally with B, KiB, MiB or "
            "GiB (for example 4, 64KiB, 512MiB)."
        ) from None
