"""Errors of the network stage: probing, the testbed and the bandwidth model.

Each is a :class:`~srifty.errors.SriftyError`, so the CLI prints it as one paragraph and exits with code 2.
:class:`ProbeError` lives in :mod:`srifty.errors` (the shared allreduce arithmetic in :mod:`srifty.vocab`
raises it too) and is re-exported here.
"""

from __future__ import annotations

from srifty.errors import OptionError, ProbeError, ProbeTimeoutError, SriftyError

__all__ = ["NetModelError", "NetModelOptionError", "ProbeError", "ProbeTimeoutError", "TestbedError"]


class TestbedError(SriftyError):
    """The network testbed cannot be brought up, inspected or torn down (not root, no ``ip``/``tc``)."""

    __test__ = False  # not a pytest test class, despite the name


class NetModelError(SriftyError):
    """A bandwidth model cannot be fitted or used with the data it was given."""


class NetModelOptionError(OptionError, NetModelError):
    """A bandwidth-model option out of range, named by its parameter (the CLI words it as its flag)."""
