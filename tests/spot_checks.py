"""What the judge's trace replay decides at the moment a real run lost a spot VM (issue 23: the real controller
and the replay call the same policy object). Shared by the local and the testbed runner tests."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from srifty.evaluate.spot_replay import ReplayJob, replay
from srifty.spec import JobSpec
from srifty.spot.policy import SriftyPolicy
from srifty.vocab import Config
from srifty.vocab.spot_trace import SpotTrace


def replayed_action(
    spec: JobSpec, config: Config, on_demand: Config | None, policy: SriftyPolicy, view: dict[str, Any]
) -> tuple[float, float, str]:
    """``(loss time, iterations saved, action)`` of the replay's first loss, on a trace whose capacity goes at
    the run's loss (``view``: what the run's policy saw there, from its decision log), with the run's own pace
    (an iteration every ``pace`` seconds, a checkpoint every iteration, nothing to launch or restore), so that
    the replay's view at the loss is the run's; ``policy`` is built as the run built its own. The iterations saved
    come from the replay's float arithmetic (``k * pace / pace`` can be 20.000000000000004): compare them with a
    tolerance."""
    loss_at = float(view["now_s"])
    pace = loss_at / (view["iterations_done"] + 0.5)
    policy = dataclasses.replace(policy, checkpoint_interval_s=pace)
    vms = sum(g.count for g in config.groups)
    judged = ReplayJob(spec.iterations, spec.deadline_s, None, config, on_demand, None,
                       {"spot": pace, "on_demand": pace}, 0.0, 0.0, lambda rng: 0.0)  # fmt: skip
    instance = config.groups[0].instance.name
    trace = SpotTrace("t/loss.json", instance, "aws", "", "us-east-1", loss_at, (vms, 0, vms, vms), "0" * 64)
    run = replay(judged, trace, 0.0, policy, lambda k: np.random.default_rng(k))
    when, saved, action = run.at_losses[0]
    return when, saved, action
