"""Errors of the network stage: probing, the emulated testbed and the bandwidth model.

They live here rather than in :mod:`srifty.errors` so that the network stage stays self-contained; each
is a :class:`~srifty.errors.SriftyError`, so the CLI prints it as one paragraph and exits with code 2.
"""

from __future__ import annotations

from srifty.errors import SriftyError


class ProbeError(SriftyError):
    """An allreduce probe cannot start or cannot finish (bad options, no torchrun, a failed collective)."""


class ProbeTimeoutError(ProbeError):
    """A collective did not finish within the probe's timeout; the message names the ranks that hung."""


class TestbedError(SriftyError):
    """The emulated testbed cannot be brought up, inspected or torn down (not root, no ``ip``/``tc``)."""

    __test__ = False  # not a pytest test class, despite the name


class NetModelError(SriftyError):
    """A bandwidth model cannot be fitted or used with the data it was given."""
