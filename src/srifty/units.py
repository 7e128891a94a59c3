"""The one place where units are converted. Internally srifty uses seconds, bytes, bytes/s and USD.

Network ratings are in decimal gigabits per second (1 Gbps = 1e9 bit/s), as the clouds rate them; memory
sizes are binary (1 GiB = 2**30 bytes, 1 MiB = 2**20 bytes).
"""

from __future__ import annotations

import re

BITS_PER_BYTE = 8
BYTES_PER_MIB = 2**20
BYTES_PER_GIB = 2**30
SECONDS_PER_HOUR = 3600.0
MS_PER_S = 1000.0


def gbps_to_bytes_per_s(gbps: float) -> float:
    """Decimal gigabits per second to bytes per second."""
    return gbps * 1e9 / BITS_PER_BYTE


def bytes_per_s_to_gbps(bytes_per_s: float) -> float:
    """Bytes per second to decimal gigabits per second."""
    return bytes_per_s * BITS_PER_BYTE / 1e9


def mib_to_bytes(mib: float) -> int:
    """Binary mebibytes to bytes."""
    return round(mib * BYTES_PER_MIB)


def usd_for(usd_per_hour: float, seconds: float) -> float:
    """Cost in USD of running something priced per hour for ``seconds``."""
    return usd_per_hour * seconds / SECONDS_PER_HOUR


def usd_text(usd: float | None) -> str:
    """Money for people: ``$1,234.56`` from a dollar up, cents below it (``32.8¢``, ``0.31¢``), ``—`` for ``None``.

    Below a dollar, two decimals of dollars would print a job of $0.003 and one of $0.004 alike as
    ``$0.00``; three significant digits of cents tell them apart.
    """
    if usd is None:
        return "—"
    if abs(usd) >= 0.9995:  # would round to 100¢
        return f"${usd:,.2f}" if usd >= 0 else f"-${-usd:,.2f}"
    cents = usd * 100.0
    text = f"{cents:.3g}"
    if "e" in text:  # under a thousandth of a cent: plain decimals, no scientific notation
        text = f"{cents:.6f}".rstrip("0").rstrip(".")
    return f"{text}¢"


_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(I?B?)\s*$", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """Parse a size such as ``"8GiB"``, ``"512M"``, ``"1.5G"`` or ``"1048576"`` into bytes (binary units).

    Raises:
        ValueError: the text is not a size.
    """
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"'{text}' is not a size; write it like 8GiB, 512MiB or 1048576")
    number, prefix = float(match.group(1)), match.group(2).upper()
    return int(number * 1024 ** " KMGT".index(prefix or " "))
