"""The Python API behind ``srifty run``: the checks and start-up both runners share, and :func:`run_local_job`."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

from srifty.artifacts import atomic_write_text, read_json_artifact
from srifty.catalog import load_catalog
from srifty.checkpoints import read_latest
from srifty.errors import OptionError, SpecError, did_you_mean
from srifty.plan import (
    PLAN_KIND,
    PLAN_SCHEMA_VERSION,
    Plan,
    check_model_name,
    other_zones,
    plan_job,
    policy_for,
    require_global_batch,
    scored_config,
    spec_area,
    spec_config,
)
from srifty.processes import describe, end_marked, is_alive
from srifty.runtime.checkpoint_interval import MAX_LOSS_SHARE, checkpoint_interval_iters, loss_events_per_hour
from srifty.runtime.controller import Controller
from srifty.runtime.decisions import Decision, DecisionLog
from srifty.runtime.faults import Fault, check_faults
from srifty.runtime.local import LocalRunner, make_log
from srifty.runtime.runner import Reporter, RunOutcome, no_report
from srifty.runtime.state import RUN_STATE_FILE, LocalOptions, LocalRunState
from srifty.runtime.torchrun import rank_layout
from srifty.spec import JobSpec, load_spec
from srifty.spot.policy import SriftyPolicy
from srifty.vocab import Config, parse_config


def config_from_plan(plan_path: Path, spec_path: Path, spec: JobSpec) -> tuple[Config, float | None]:
    """The chosen configuration of a plan file, refusing one made for another spec.

    Returns the configuration and its predicted mean iteration time (s).

    Raises:
        SpecError: the plan was made from a different spec file (digest mismatch) or is infeasible.
    """
    doc = read_json_artifact(plan_path, PLAN_KIND, PLAN_SCHEMA_VERSION)
    digest = hashlib.sha256(spec_path.read_bytes()).hexdigest()
    planned_for = (doc.get("spec") or {}).get("digest")
    if planned_for != digest:
        raise SpecError(
            f"{plan_path} was made for another spec (or another version of {spec_path.name}): its spec digest is "
            f"{str(planned_for)[:12]}…, {spec_path.name} is {digest[:12]}…. Re-plan with `srifty plan {spec_path} "
            f"--json {plan_path}`."
        )
    best = doc.get("best")
    if not best:
        raise SpecError(f"{plan_path} has no feasible configuration to run; re-plan with looser constraints.")
    markets = {g["instance_type"]: g["market"] for g in best["groups"]}
    catalog = load_catalog()
    cloud, region = (best["cloud"], best["region"]) if best.get("region") else spec_area(spec, catalog)
    config = parse_config(best["config"], region, cloud, catalog, markets, best.get("zone"))
    config = config.sharded(best.get("parallelism", "ddp"), bool(best.get("activation_checkpointing", False)))
    return config, float(best["iter_mean_s"])


def spot_policy_for(
    spec: JobSpec, config: Config, plan: Plan | None = None, move_zones: bool = True
) -> SriftyPolicy | None:
    """srifty's spot policy for running ``config`` (``None`` without spot VMs): from the plan that chose it, or
    from the configuration scored as ``srifty plan`` would (a plan file or ``--config``). With ``move_zones``
    it may move the spot VMs to the region's other zones that the spec allows (``zones:``; all by default) and
    that offer every spot type of ``config``; on a host file there is nowhere to move (``move_zones=False``)."""
    if not any(g.market == "spot" for g in config.groups):
        return None
    zones = other_zones(config, spec.zones) if move_zones else []
    if plan is not None and plan.best is not None and plan.best.config.key == config.key:
        return policy_for(plan.problem, plan.best, zones)
    return policy_for(*scored_config(spec, config), zones)


def plan_remaining(remaining: JobSpec) -> Plan:
    """Re-plan what is left of a job (same model, profiles and bandwidth model as the original spec)."""
    return plan_job(remaining)[0]


def start_config(
    spec_file: Path, spec: JobSpec, plan_path: str | Path | None, config_text: str | None, planned: JobSpec
) -> tuple[Config, float | None, Plan | None]:
    """The configuration a run starts on, its predicted iteration time (s) when known, and the plan that chose
    it when one was made here: ``config_text``, else the plan file's choice, else a plan of ``planned`` (the
    spec, or the spec over a host file's VMs).

    Raises:
        OptionError: ``config`` is not a configuration of the spec.
        SpecError: the plan file is another spec's, or nothing is feasible.
    """
    plan: Plan | None = None
    if config_text is not None:
        try:
            config, iter_s = spec_config(config_text, planned, load_catalog()), None
        except SpecError as error:
            raise OptionError("config", f": {error}") from None
    elif plan_path is not None:
        config, iter_s = config_from_plan(Path(plan_path), spec_file, spec)
    else:
        plan, _ = plan_job(planned)
        if plan.best is None:
            raise SpecError(plan.infeasibility.message if plan.infeasibility else "no feasible configuration")
        config, iter_s = plan.best.config, plan.best.estimate.iter_mean_s
    require_global_batch(config, spec, "configuration")
    return config, iter_s, plan


def default_ckpt_every(spec: JobSpec, config: Config, iter_s: float | None, policy: SriftyPolicy | None = None) -> int:
    """Iterations between checkpoints when none is given, never more than :data:`MAX_LOSS_SHARE` of the job: the
    spot policy's interval (Daly, from the loss rate) where there is one, else Young's rule under ``config``'s
    loss rate (:mod:`srifty.runtime.checkpoint_interval`)."""
    if policy is not None and iter_s:
        cap = max(1, int(MAX_LOSS_SHARE * spec.iterations))
        return max(1, round(min(cap, policy.checkpoint_interval_s / iter_s)))  # inf: no loss expected
    return checkpoint_interval_iters(
        spec.overheads.checkpoint_restore_s, iter_s or 1.0, spec.iterations, loss_events_per_hour(config)
    )


def require_script(train_command: Sequence[str]) -> None:
    """``python SCRIPT.py …`` must name a script that exists here, before torchrun starts any worker.

    Raises:
        SpecError: naming the script, the folder it was looked for in and the closest scripts there.
    """
    if len(train_command) < 2 or not Path(train_command[0]).name.startswith("python"):
        return
    script = Path(train_command[1])
    if script.suffix != ".py" or script.exists():
        return
    folder = script.parent if str(script.parent) != "." else Path.cwd()
    nearby = [p.name for p in folder.glob("*.py")] if folder.is_dir() else []
    raise SpecError(
        f"the training script '{script}' does not exist (looked for in {folder.resolve()})."
        f"{did_you_mean(script.name, nearby)} Give its path after `--`, e.g. `-- python examples/train_tiny.py`."
    )


def prepare_run_dir(run_dir: Path, report: Reporter = no_report) -> None:
    """Make ``run_dir`` ready for a new run: refuse one that holds an unfinished run (it is resumed, not
    overwritten), and set aside a finished run's checkpoints, which a new run's workers would otherwise load
    as their own (``checkpoints`` → ``checkpoints.<time>``).

    Raises:
        SpecError: an unfinished run is there.
    """
    state_path = run_dir / RUN_STATE_FILE
    if state_path.exists():
        try:
            unfinished = not json.loads(state_path.read_text(encoding="utf-8")).get("finished")
        except (OSError, ValueError, AttributeError):
            unfinished = True
        if unfinished:
            raise SpecError(
                f"{run_dir} holds a run that did not finish (run.json); continue it with `srifty run --resume "
                f"{run_dir}`, or give another --run-dir."
            )
    old = run_dir / "checkpoints"
    if old.exists():
        aside = old.with_name(f"checkpoints.{int(old.stat().st_mtime)}")
        while aside.exists():
            aside = aside.with_name(aside.name + "-1")
        old.rename(aside)
        report(f"{run_dir} held an earlier run's checkpoints; moved to {aside.name}: this run starts from iteration 0")
    run_dir.mkdir(parents=True, exist_ok=True)


def check_seconds(option: str, value: float) -> None:
    """Refuse a duration that is not a positive, finite number of seconds.

    Raises:
        OptionError: naming ``option``.
    """
    if not (value > 0 and math.isfinite(value)):
        raise OptionError(option, f"must be a positive number of seconds, got {value}.")


def check_ckpt_every(ckpt_every: int | None) -> None:
    """Refuse a checkpoint interval below one iteration (``None``: Young's rule decides).

    Raises:
        OptionError: naming ``ckpt_every``.
    """
    if ckpt_every is not None and ckpt_every < 1:
        raise OptionError("ckpt_every", f"must be at least 1 iteration, got {ckpt_every}.")


def write_summary(outcome: RunOutcome, run_dir: Path) -> RunOutcome:
    """``summary.json``: iterations, launches and configurations of a finished run."""
    summary = {"iterations": outcome.iterations, "launches": outcome.launches, "configs": outcome.configs}
    atomic_write_text(run_dir / "summary.json", json.dumps(summary, indent=1))
    return outcome


def run_local_job(
    spec_path: str | Path,
    train_command: Sequence[str],
    run_dir: str | Path,
    plan_path: str | Path | None = None,
    config_text: str | None = None,
    faults: Sequence[Fault] = (),
    hang_timeout_s: float = 60.0,
    ckpt_every: int | None = None,
    report: Reporter = no_report,
) -> RunOutcome:
    """Run a job with local processes standing for the planned GPUs (see :mod:`srifty.runtime.local`).

    Raises:
        SpecError: a bad spec, plan, configuration, option or fault (before anything is launched).
        SriftyError: the run failed; every process it started has been ended.
    """
    check_seconds("hang_timeout_s", hang_timeout_s)
    check_ckpt_every(ckpt_every)
    require_script(train_command)
    spec_file = Path(spec_path)
    spec = load_spec(spec_file)
    check_model_name(spec)
    config, iter_s, plan = start_config(spec_file, spec, plan_path, config_text, spec)
    check_faults(faults, len(rank_layout(config)), spec.iterations)
    out = Path(run_dir)
    prepare_run_dir(out, report)
    policy = spot_policy_for(spec, config, plan)
    every = ckpt_every or default_ckpt_every(spec, config, iter_s, policy)
    controller = Controller(spec, config, plan_remaining, make_log(out), policy=policy)
    options = LocalOptions(hang_timeout_s, every)
    state = LocalRunState.start(str(spec_file.resolve()), train_command, os.getcwd(), options, config)
    runner = LocalRunner(controller, train_command, out, faults, hang_timeout_s, every, report=report, state=state)
    return write_summary(runner.run(), out)


def resume_local_job(run_dir: str | Path, state: LocalRunState, report: Reporter = no_report) -> RunOutcome:
    """``srifty run --resume RUN_DIR`` of a run on this machine (``state``: its ``run.json``): end what is left of
    its launch, log ``resume``, and continue from the last checkpoint on the configuration it ran on.

    Raises:
        SpecError: it already finished, or its controller is still running.
    """
    out = Path(run_dir).resolve()
    if state.finished:
        raise SpecError(f"the run in {out} already finished; start a new one (another --run-dir keeps both).")
    pid = state.controller_pid
    if pid and pid != os.getpid() and is_alive(pid) and "srifty" in describe(pid):
        raise SpecError(f"the run in {out} is still controlled by {describe(pid)}; stop it before resuming.")
    spec = load_spec(state.spec_path)
    ended = [describe(p) for p in end_marked(state.mark)]
    config = state.config_in(load_catalog())
    marker = read_latest(out / "checkpoints")
    step = 0 if marker is None else int(marker["step"])
    now = time.time() - state.started_unix
    first = Decision(
        now,
        step,
        "resume",
        f"srifty run --resume: continuing from the checkpoint at iteration {step} (the run had reached iteration "
        f"{state.iteration}); {len(ended)} leftover process(es) of its launch ended",
        config.notation(),
        {"ended": ended},
    )
    log = DecisionLog(out / "decisions.jsonl")
    controller = Controller(spec, config, plan_remaining, log, first=first, policy=spot_policy_for(spec, config))
    controller.resume_at(step, now, state.spent_usd)
    options = state.options
    runner = LocalRunner(
        controller, state.train_command, out, (), options.hang_timeout_s, options.ckpt_every, report=report,
        state=state.replace(checkpoint_step=step), elapsed_s=now, resumed_after=ended,
    )  # fmt: skip
    return write_summary(runner.run(), out)
