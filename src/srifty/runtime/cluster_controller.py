"""The controller of a multi-host run, built from the run's state (:class:`~srifty.runtime.state.RunState`).

A new run's controller starts a fresh decision log; a resumed one's (``srifty run --resume`` after the old
controller was killed or interrupted) continues the log after a ``resume`` decision, with its progress back at
the last checkpoint and the money already spent carried over. Times are seconds on the run's own axis (since
the run started, ``RunState.started_unix``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from srifty.catalog import load_catalog
from srifty.runtime.controller import Controller, Replanner, SlowHostFinder
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.state import RunState
from srifty.spec import JobSpec
from srifty.vocab import SpotPolicy


def cluster_controller(
    state: RunState,
    spec: JobSpec,
    replan: Replanner,
    run_dir: Path,
    now_s: float,
    find_slow: SlowHostFinder,
    resumed_after: Sequence[str] | None,
    policy: SpotPolicy | None,
) -> Controller:
    """The controller of a run in ``state`` (a new run's, or a resumed one's: its decision log continued after
    a ``resume`` decision, its progress back at the last checkpoint)."""
    path = run_dir / "decisions.jsonl"
    log = DecisionLog(path) if resumed_after is not None else DecisionLog.fresh(path)
    step = state.checkpoint_step or 0
    first = None if resumed_after is None else resume_decision(log, now_s, step, state, resumed_after)
    config = state.config_in(spec.region or "", spec.cloud, load_catalog())
    controller = Controller(
        spec, config, replan, log, window_s=state.setup.options.window_s, quotas=state.quota_map(), first=first,
        find_slow=find_slow, set_aside=state.slow, policy=policy,
    )  # fmt: skip
    if resumed_after is not None:
        controller.resume_at(step, now_s, state.spent_usd)
    return controller


def resume_decision(log: DecisionLog, now_s: float, step: int, state: RunState, ended: Sequence[str]) -> Decision:
    """The ``resume`` decision at ``now_s`` (run seconds), from the checkpoint at ``step``, after the decisions
    already in ``log``; ``ended``: the old launch's leftover processes that were ended."""
    logged = log.read()
    last = logged[-1].iteration if logged else 0
    return Decision(
        now_s,
        step,
        "resume",
        f"the controller was restarted; {len(ended)} leftover process(es) of the old launch ended; continuing "
        f"from the checkpoint at iteration {step} (the last decision was at iteration {last}, "
        f"{len(logged)} decision(s) kept)",
        state.config,
        {"ended": list(ended)},
    )
