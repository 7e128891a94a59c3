"""Allreduce bandwidth arithmetic, as in nccl-tests: bus bandwidth, algorithm bandwidth, sizes, the MTU.

Bus bandwidth is the rate each rank's link carries during a ring allreduce of ``s`` bytes over ``n``
ranks: every rank sends (and receives) ``2·s·(n−1)/n`` bytes, so ``busbw = 2·s·(n−1)/(n·t)``. Algorithm
bandwidth is plainly ``s/t``. Shared vocabulary: the probe, the bandwidth models, the simulator and the
emulated cloud all count bytes and bandwidth this way. All functions accept scalars or numpy arrays and
broadcast.
"""

from __future__ import annotations

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


def ring_bytes_factor(world_size: ArrayLike) -> FloatArray:
    """``2·(n−1)/n``: bytes each rank sends per byte allreduced (0 for a single rank)."""
    n = np.asarray(world_size, dtype=np.float64)
    return 2.0 * (n - 1.0) / n


def bus_bytes(size_bytes: ArrayLike, world_size: int) -> FloatArray:
    """Bytes each rank moves in a ring allreduce of ``size_bytes``: ``2·s·(n−1)/n`` (0 when ``n == 1``), so
    that ``bus_bytes / busbw`` is the allreduce's duration."""
    s = np.asarray(size_bytes, dtype=float)
    return 2.0 * s * (world_size - 1) / world_size if world_size > 1 else np.zeros_like(s)


def busbw_bytes_per_s(size_bytes: ArrayLike, world_size: ArrayLike, time_s: ArrayLike) -> FloatArray:
    """Bus bandwidth ``2·s·(n−1)/(n·t)`` in bytes/s of an allreduce of ``size_bytes`` over ``world_size``
    ranks that took ``time_s`` seconds. Returns a float array (a 0-d array for scalar inputs)."""
    return np.asarray(size_bytes, dtype=np.float64) * ring_bytes_factor(world_size) / np.asarray(time_s)


def algbw_bytes_per_s(size_bytes: ArrayLike, time_s: ArrayLike) -> FloatArray:
    """Algorithm bandwidth ``s/t`` in bytes/s."""
    return np.asarray(size_bytes, dtype=np.float64) / np.asarray(time_s, dtype=np.float64)


def allreduce_time_s(size_bytes: ArrayLike, world_size: ArrayLike, busbw: ArrayLike) -> FloatArray:
    """Inverse of :func:`busbw_bytes_per_s`: the time in s of an allreduce at bus bandwidth ``busbw``
    (bytes/s). A single rank needs no transfer and takes 0 s."""
    volume = np.asarray(size_bytes, dtype=np.float64) * ring_bytes_factor(world_size)
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
