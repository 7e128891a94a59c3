"""How often a run checkpoints by default: Young's optimum under the configuration's loss rate, never more than a
small share of the job between two checkpoints.

Young/Daly: with a checkpoint costing ``C`` seconds and losses arriving every ``MTBF`` seconds on average, the
expected time lost is least at an interval of ``sqrt(2·C·MTBF)``. The loss rate comes from the spot model
(:mod:`srifty.spot`: expected loss events per hour of the configuration's spot VMs in its zone, losses that
come together counted once); without spot VMs nothing is expected to be lost, and with no rate at all one
loss an hour is assumed. Young's interval can be most of a short job (one hour between losses and a 5 s
checkpoint give 190 s), so a loss would roll back most of it: the interval is capped at
:data:`MAX_LOSS_SHARE` of the job's iterations.
"""

from __future__ import annotations

import math
from typing import Any

from srifty.vocab import Config

#: A loss never rolls back more than this share of the job's iterations (plus the one being done).
MAX_LOSS_SHARE = 0.05
#: Assumed mean time between losses where no loss rate is known (one hour).
DEFAULT_MTBF_S = 3600.0


def checkpoint_interval_iters(
    checkpoint_s: float,
    iter_s: float,
    iterations: int | None = None,
    loss_events_per_hour: float | None = None,
    max_share: float = MAX_LOSS_SHARE,
) -> int:
    """Iterations between checkpoints (at least 1).

    Args:
        checkpoint_s: what one checkpoint costs (s); the spec's restore overhead stands for it.
        iter_s: seconds per iteration (the plan's prediction).
        iterations: the job's iterations; the interval is at most ``max_share`` of them.
        loss_events_per_hour: expected losses of the configuration per hour (:func:`loss_events_per_hour`);
            ``None``: unknown, one an hour assumed; 0: none expected (the cap alone applies).
    """
    cap = max(1, int(max_share * iterations)) if iterations else None
    if loss_events_per_hour is None:
        mtbf_s = DEFAULT_MTBF_S
    elif loss_events_per_hour <= 0:
        return cap or 1
    else:
        mtbf_s = 3600.0 / loss_events_per_hour
    if iter_s <= 0:
        return 1
    young = math.sqrt(2.0 * max(checkpoint_s, 0.0) * mtbf_s) / iter_s
    if math.isnan(young):  # a free checkpoint (C = 0) against no losses at all: Young says every iteration
        young = 1.0
    if cap is not None:
        young = min(young, cap)
    return max(1, int(min(young, 2**62)))  # a rate of almost nothing makes Young's interval unbounded


def loss_events_per_hour(config: Config, spot_model: Any = None) -> float:
    """Expected loss events per hour of ``config``: each spot group's from the spot model (its type in the
    configuration's zone and region; events that take several VMs at once counted once); on-demand VMs lose
    none. ``spot_model``: a :class:`srifty.spot.SpotModel` (default: the embedded one)."""
    spot = [g for g in config.groups if g.market == "spot"]
    if not spot:
        return 0.0
    if spot_model is None:
        from srifty.spot import default_spot_model

        spot_model = default_spot_model()
    zone = config.spot_zone()
    return sum(spot_model.figures_for(g.instance.name, zone, g.instance.region).events_per_hour(g.count) for g in spot)
