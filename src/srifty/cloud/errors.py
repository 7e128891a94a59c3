"""Errors of the emulated cloud. Each is a :class:`~srifty.errors.SriftyError`: the CLI prints it as one
paragraph and exits with code 2."""

from __future__ import annotations

from srifty.errors import SriftyError


class CloudError(SriftyError):
    """The emulated cloud cannot answer: an unknown model or instance type, or a configuration it cannot run."""


class OutOfMemoryError(CloudError):
    """A configuration's local batch does not fit its GPU in the emulated cloud (a real run would OOM)."""
