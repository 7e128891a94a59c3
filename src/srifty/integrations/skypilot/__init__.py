"""srifty and SkyPilot: ``srifty launch`` (a plan brought up through SkyPilot's ``sky`` command, :mod:`.launch`,
:mod:`.sky`) and srifty as SkyPilot's time estimator (:func:`time_estimator`, :mod:`.estimator`).

Nothing here imports SkyPilot: ``srifty launch`` runs the ``sky`` executable of SkyPilot's own environment,
and the estimator, called inside SkyPilot's process, reads what SkyPilot hands it by attribute. Importing this
package loads neither SkyPilot nor srifty's planner.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from srifty.integrations.skypilot.estimator import SkyEstimator
    from srifty.spec import JobSpec

__all__ = ["time_estimator"]


def time_estimator(spec_or_profile: JobSpec | str | Path, num_nodes: int = 1, **options: Any) -> SkyEstimator:
    """A function for ``sky.Task.set_time_estimator`` (see :mod:`srifty.integrations.skypilot.estimator`)."""
    from srifty.integrations.skypilot.estimator import time_estimator as make

    return make(spec_or_profile, num_nodes, **options)
