"""The Python API behind ``srifty run``: the checks and start-up both runners share, and :func:`run_local_job`."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path

from srifty.artifacts import atomic_write_text, read_json_artifact
from srifty.catalog import load_catalog
from srifty.errors import OptionError, SpecError
from srifty.plan import (
    PLAN_KIND,
    PLAN_SCHEMA_VERSION,
    Plan,
    plan_job,
    policy_for,
    require_global_batch,
    scored_config,
    spec_area,
    spec_config,
)
from srifty.runtime.controller import Controller
from srifty.runtime.faults import Fault, check_faults
from srifty.runtime.local import LocalRunner, make_log
from srifty.runtime.runner import Reporter, RunOutcome, no_report
from srifty.runtime.torchrun import checkpoint_interval_iters, rank_layout
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


def spot_policy_for(spec: JobSpec, config: Config, plan: Plan | None = None) -> SriftyPolicy | None:
    """srifty's spot policy for running ``config`` (``None`` without spot VMs): from the plan that chose it, or
    from the configuration scored as ``srifty plan`` would (a plan file or ``--config``)."""
    if not any(g.market == "spot" for g in config.groups):
        return None
    if plan is not None and plan.best is not None and plan.best.config.key == config.key:
        return policy_for(plan.problem, plan.best)
    return policy_for(*scored_config(spec, config))


def default_ckpt_every(spec: JobSpec, iter_s: float | None, policy: SriftyPolicy | None) -> int:
    """Iterations between checkpoints when none is given: the spot policy's interval (Daly, from the loss rate)
    where there is one, else Young's rule with an hour between losses
    (:func:`~srifty.runtime.torchrun.checkpoint_interval_iters`)."""
    if policy is not None and iter_s:
        return max(1, round(policy.checkpoint_interval_s / iter_s))
    return checkpoint_interval_iters(spec.overheads.checkpoint_restore_s, iter_s or 1.0)


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
    spec_file = Path(spec_path)
    spec = load_spec(spec_file)
    config, iter_s, plan = start_config(spec_file, spec, plan_path, config_text, spec)
    check_faults(faults, len(rank_layout(config)), spec.iterations)
    out = Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    policy = spot_policy_for(spec, config, plan)
    every = ckpt_every or default_ckpt_every(spec, iter_s, policy)
    controller = Controller(spec, config, plan_remaining, make_log(out), policy=policy)
    runner = LocalRunner(controller, train_command, out, faults, hang_timeout_s, every, report=report)
    return write_summary(runner.run(), out)
