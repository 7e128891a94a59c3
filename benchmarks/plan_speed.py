"""Planner solve time on the paper's case studies (examples/), in both modes where both apply.

For each example spec: the search-space size (every placement: one zone with spot prices, or the region for
on-demand VMs only, before type pruning), then the solve time (pruning and search) of exhaustive search
(when the space is under 10,000 configurations) and of anchor + ILP, median of several runs, plus a
scaling row: 4 instance types × quota 64 at global batch 8192. Profiles and the bandwidth model are the
bundled defaults (estimated GPU profiles where no measured one exists), resolved once, outside the timing.

Run: ``python -m benchmarks.plan_speed``. Writes BENCHMARKS.md ("Planner solve time").
"""

from __future__ import annotations

import argparse
import re
import statistics
from dataclasses import replace

from benchmarks.common import BENCHMARKS_MD, ROOT, machine_description, write_section
from srifty.catalog import load_catalog
from srifty.compute.bundled import bundled_profiles_for
from srifty.compute.estimate import estimate_profile
from srifty.plan import DEFAULT_MAX_SIM_CALLS, count_configs
from srifty.plan.api import plan_job
from srifty.plan.build import ProfileLimits, build_problems
from srifty.plan.inputs import PlanInputs, resolve
from srifty.spec import load_spec, spec_from_mapping

SCALING_SPEC = {
    "name": "scaling-4x64",
    "model": "resnet50",
    "global_batch": 8192,
    "iterations": 1000,
    "goal": "min_cost",
    "region": "us-east-1",
    "candidates": [
        {"instance_type": name, "market": "spot", "quota": 64}
        for name in ("g4dn.xlarge", "g4dn.12xlarge", "g5.xlarge", "p3.2xlarge")
    ],
}


def previous_results() -> dict[tuple[str, str], str]:
    """``(case, mode) -> result`` of this benchmark's previous run, read from BENCHMARKS.md (the 'before')."""
    text = BENCHMARKS_MD.read_text(encoding="utf-8") if BENCHMARKS_MD.exists() else ""
    section = re.search(r"^## Planner solve time\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    out: dict[tuple[str, str], str] = {}
    for line in (section.group(1) if section else "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[1] in ("exhaustive", "ilp"):
            out[(cells[0], cells[1])] = cells[-1]
    return out


def knee_note(spec) -> str:  # type: ignore[no-untyped-def]
    """The candidate GPU's profile at the plan's local batches: where it is latency-bound (the knee)."""
    catalog = load_catalog()
    inputs = resolve(spec, catalog)
    parts = []
    problems = build_problems(spec, catalog, ProfileLimits(inputs.profiles))
    for cand in {c.instance.name: c for p in problems for c in p.candidates}.values():
        profile = inputs.profiles[cand.instance.gpu_name]
        per_sample = {b: float(profile.predict_ms("iter", b)) / b for b in (1, 2, 4, 8, 16, 32, 64)}
        knee = "—" if cand.knee_batch is None else f"{cand.knee_batch:.0f}"
        cells = ", ".join(f"{b}: {v:.1f}" for b, v in per_sample.items())
        parts.append(f"{cand.instance.gpu_name} ({cand.instance.name}) knee {knee}; ms per sample at batch {cells}")
    return "; ".join(parts)


def estimator_row(name: str, spec) -> str:  # type: ignore[no-untyped-def]
    """One min-time case planned twice: GPU profiles from the previous estimator (per-op roofline scaling of
    the CPU's op times) and from the calibrated GPU model (what ``srifty plan`` uses now)."""
    catalog = load_catalog()
    after = resolve(spec, catalog)
    cells = [name]
    for label, inputs in (("before", roofline_inputs(after, catalog)), ("after", after)):
        plan, _ = plan_job(spec, catalog, inputs, mode="exhaustive")
        assert plan.best is not None, f"{name}: no plan with the {label} estimator"
        runner_up = plan.alternatives[0] if plan.alternatives else None
        margin = (
            "—"
            if runner_up is None
            else f"{runner_up.config.notation()} (+{runner_up.time_s / plan.best.time_s - 1:.1%})"
        )
        cells += [
            plan.best.config.notation(),
            f"{1000 * plan.best.estimate.iter_mean_s:.1f} ms",
            margin,
        ]
    return "| " + " | ".join(cells) + " |"


def roofline_inputs(inputs: PlanInputs, catalog) -> PlanInputs:  # type: ignore[no-untyped-def]
    """``inputs`` with every estimated GPU profile re-estimated by per-op roofline scaling (the 'before')."""
    profiles = dict(inputs.profiles)
    for gpu, profile in inputs.profiles.items():
        if profile.is_estimate:
            source = next(p for p in bundled_profiles_for(profile.model) if not p.is_estimate)
            profiles[gpu] = estimate_profile(source, gpu, catalog=catalog)
    return replace(inputs, profiles=profiles)


def time_case(spec, runs: int) -> list[tuple[str, int, int, float, str]]:  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    inputs = resolve(spec, catalog)
    size = sum(count_configs(p) for p in build_problems(spec, catalog, ProfileLimits(inputs.profiles)))
    modes = ["exhaustive", "ilp"] if size <= DEFAULT_MAX_SIM_CALLS else ["ilp"]
    rows = []
    for mode in modes:
        times, plan = [], None
        for _ in range(runs):
            plan, _ = plan_job(spec, catalog, inputs, mode=mode)  # type: ignore[arg-type]
            times.append(plan.solve_time_s)
        assert plan is not None
        if plan.best is not None:
            best = f"{plan.best.config.notation()} ({plan.best.config.zone or 'any zone'})"
        else:
            best = f"infeasible ({plan.infeasibility.binding_constraint if plan.infeasibility else '?'})"
        predicted = plan.n_evaluated if plan.n_predicted is None else plan.n_predicted
        rows.append((mode, size, predicted, statistics.median(times), best))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    before = previous_results()
    lines = [
        "| case | mode | space | simulated | solve time | result before | result |",
        "|---|---|---|---|---|---|---|",
    ]
    specs = [(p.stem, load_spec(p)) for p in sorted((ROOT / "examples").glob("case*.yaml"))]
    specs.append(("scaling: 4 types × quota 64, B=8192", spec_from_mapping(SCALING_SPEC)))
    knees, estimators = [], []
    for name, spec in specs:
        for mode, size, evaluated, median_s, best in time_case(spec, args.runs):
            previous = before.get((name, mode), "—")
            lines.append(f"| {name} | {mode} | {size:,} | {evaluated:,} | {median_s:.3f} s | {previous} | {best} |")
            print(lines[-1], flush=True)
        if name.startswith(("case1", "case2", "case3")):
            knees.append(f"* {name}: {knee_note(spec)}.")
            estimators.append(estimator_row(name, spec))
    body = "\n".join(
        [
            "Solve time of `srifty plan` (median of "
            f"{args.runs} runs; profiles and bandwidth model loaded once beforehand). The paper reports 0.8–6.5 s;",
            'the target here is under 0.5 s per case. "space" is the number of configurations in every placement',
            '(zone) the job may run in, after batch pruning; "simulated" is how many distinct configurations the',
            "simulator predicted (a configuration judged in several zones is predicted once).",
            "",
            *lines,
            "",
            '"result before" is this table\'s previous run (read from BENCHMARKS.md before rewriting it). GPU',
            "profiles here are estimates from the bundled CPU profiles; since issue #12 they come from the",
            "calibrated GPU model (before: per-op roofline scaling of CPU op times). The estimated profiles of",
            "the min-time cases' GPUs (iteration ms per sample; the plan's knee batch):",
            "",
            *knees,
            "",
            "The min-time cases planned with each estimator's GPU profiles (exhaustive; the runner-up and how",
            "much longer its predicted job time is):",
            "",
            "| case | before: plan | before: iteration | before: runner-up | after: plan | after: iteration |"
            " after: runner-up |",
            "|---|---|---|---|---|---|---|",
            *estimators,
            "",
            f"Command: `python -m benchmarks.plan_speed`. Machine: {machine_description()}.",
        ]
    )
    write_section("Planner solve time", body)
    print(body)


if __name__ == "__main__":
    main()
