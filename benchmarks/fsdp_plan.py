"""Planning models that do not fit one GPU: the LLM examples over the AWS catalog, how long it takes, and which
strategy wins where.

For ``examples/llm-1b.yaml`` and ``examples/llm-8b.yaml`` (Llama-sized decoders, 2,048 tokens, bf16, AdamW,
counted profiles: every time in them is the calibrated GPU model's estimate), ``srifty plan`` at ``min_cost``
within the spec's deadline and at ``min_time`` within a budget (the ``min_cost`` answer's cost × 2): the median
solve time of 3 plans (inputs resolved once, outside the timing; pruning and search timed, as ``plan_speed``),
the chosen configuration with its strategy, and, per GPU type, the best configuration of that type alone and
its strategy (the question a user renting a type asks). Target (issue 25): each planned over the catalog in at
most 2 s.

Run: ``flock /tmp/srifty-cpu.lock python -m benchmarks.fsdp_plan``. Writes BENCHMARKS.md ("Sharded data
parallelism: planning the LLM examples").
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict
from typing import Any

from benchmarks.common import ROOT, machine_description, write_section
from srifty.catalog import load_catalog
from srifty.plan.api import plan_job
from srifty.plan.inputs import resolve
from srifty.plan.offers import expand_offers
from srifty.spec import load_spec

SECTION = "Sharded data parallelism: planning the LLM examples"
SPECS = ("llm-1b", "llm-8b")
REPEATS = 3
TARGET_S = 2.0
LOCKED_COMMAND = "flock /tmp/srifty-cpu.lock python -m benchmarks.fsdp_plan"


def plan_case(name: str, goal: str, budget: float | None = None) -> dict[str, Any]:
    spec = load_spec(ROOT / "examples" / f"{name}.yaml").resolve_paths(ROOT / "examples")
    spec = spec.model_copy(update={"goal": goal, "budget_usd": budget}) if goal == "min_time" else spec
    catalog = load_catalog()
    inputs = resolve(spec, catalog, sorted({o.instance for o in expand_offers(spec, catalog)}, key=lambda i: i.name))
    times, plan = [], None
    for _ in range(REPEATS):
        started = time.perf_counter()
        plan, _ = plan_job(spec, catalog, inputs)
        times.append(time.perf_counter() - started)
    assert plan is not None
    by_type: dict[str, Any] = defaultdict(lambda: None)
    for s in plan.evaluated:
        if len(s.config.groups) != 1 or not s.feasible:
            continue
        key = s.config.groups[0].instance.name
        if by_type[key] is None or (s.cost_usd if goal == "min_cost" else s.time_s) < (
            by_type[key].cost_usd if goal == "min_cost" else by_type[key].time_s
        ):
            by_type[key] = s
    best = plan.best
    return {
        "spec": name,
        "goal": goal,
        "deadline_s": spec.deadline_s,
        "budget_usd": spec.budget_usd,
        "solve_median_s": statistics.median(times),
        "solve_s": times,
        "n_predicted": plan.n_predicted,
        "best": None if best is None else _row(best),
        "by_type": {k: _row(v) for k, v in sorted(by_type.items()) if v is not None},
        "infeasible": None if plan.infeasibility is None else plan.infeasibility.message,
    }


def _row(s: Any) -> dict[str, Any]:
    return {
        "config": s.config.notation(),
        "where": s.config.where(),
        "parallelism": s.config.parallelism,
        "shard_group": s.config.shard_size,
        "checkpointing": s.config.checkpointing,
        "iter_s": s.estimate.iter_mean_s,
        "time_s": s.time_s,
        "cost_usd": s.cost_usd,
        "memory_gib": s.estimate.memory_peak_bytes / 2**30,
        "usable_gib": s.estimate.memory_usable_bytes / 2**30,
        "comm_exposed_s": s.estimate.comm_exposed_s,
    }


def render(rows: list[dict[str, Any]], machine: str, command: str = LOCKED_COMMAND, note: str = "") -> str:
    lines = [
        "`srifty plan` over the AWS catalog (us-east-1 and us-west-2, both markets, 8 VMs a type) for the LLM",
        "examples: counted profiles on A10G, L4, L40S, A100, A100-80GB, H100, H200 and B200 (estimates: the",
        "calibrated GPU model prices op counts made on PyTorch's meta device), the embedded bandwidth model;",
        f"median of {REPEATS} solves (pruning and search; inputs resolved once). Target: at most {TARGET_S:g} s.",
        "",
        "| spec | goal | solve s (median) | predicted configs | chosen | strategy | iteration s | job time s "
        "| cost $ |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r["best"]
        strategy = "—" if b is None else _strategy(b)
        chosen = "none: " + str(r["infeasible"]) if b is None else f"{b['config']} ({b['where']})"
        lines.append(
            f"| {r['spec']} | {r['goal']} | {r['solve_median_s']:.2f} | {r['n_predicted']} | {chosen} | {strategy} | "
            + ("— | — | — |" if b is None else f"{b['iter_s']:.2f} | {b['time_s']:,.0f} | {b['cost_usd']:.2f} |")
        )
    lines += ["", "Which strategy wins where (the best configuration of each instance type alone, min_cost):", ""]
    lines += [
        "| spec | instance type | configuration | strategy | GPU memory used / usable GiB | iteration s | cost $ |"
    ]
    lines += ["|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["goal"] != "min_cost":
            continue
        for name, b in r["by_type"].items():
            lines.append(
                f"| {r['spec']} | {name} | {b['config']} | {_strategy(b)} | {b['memory_gib']:.1f} / "
                f"{b['usable_gib']:.1f} | {b['iter_s']:.2f} | {b['cost_usd']:.2f} |"
            )
    lines += ["", f"Command: `{command}`{note}. Machine: {machine}."]
    return "\n".join(lines)


def _strategy(b: dict[str, Any]) -> str:
    text = b["parallelism"] if b["parallelism"] == "ddp" else f"{b['parallelism']} over {b['shard_group']}"
    return text + (" + checkpointing" if b["checkpointing"] else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unlocked", action="store_true", help="say the solve times were measured under load")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    rows = []
    for name in SPECS:
        cost = plan_case(name, "min_cost")
        rows.append(cost)
        budget = None if cost["best"] is None else round(2 * cost["best"]["cost_usd"], 2)
        rows.append(plan_case(name, "min_time", budget))
        print(rows[-2]["solve_median_s"], rows[-1]["solve_median_s"], flush=True)
    command, note = LOCKED_COMMAND, ""
    if args.unlocked:
        command = "nice -n 19 python -m benchmarks.fsdp_plan --unlocked"
        note = (f", without the CPU lock on the busy machine (1-minute load average {load_before:.1f} at the start, "
                f"{os.getloadavg()[0]:.1f} at the end): the solve times are upper bounds, not the quiet-machine "
                "figure; the plans do not depend on the load")  # fmt: skip
    import json

    from srifty.artifacts import atomic_write_text

    saved = ROOT / "benchmarks" / "results" / "fsdp_plan.json"
    previous = json.loads(saved.read_text()) if saved.is_file() else []
    write_section(SECTION, render(rows, machine_description(), command, note) + before_lines(previous, rows))
    atomic_write_text(saved, json.dumps(rows, indent=1))


def before_lines(previous: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    """What moved since the previous run's results: solve times, chosen plans, and the per-type memory used."""
    old = {(r["spec"], r["goal"]): r for r in previous}
    pairs = [(old[(r["spec"], r["goal"])], r) for r in rows if (r["spec"], r["goal"]) in old]
    if not pairs:
        return ""
    solves = ", ".join(
        f"{r['spec']} {r['goal']} {o['solve_median_s']:.2f} -> {r['solve_median_s']:.2f} s" for o, r in pairs
    )

    def chosen(row: dict[str, Any]) -> str | None:
        return None if row["best"] is None else row["best"]["config"]

    moved = [f"{r['spec']} {r['goal']}: {chosen(o)} -> {chosen(r)}" for o, r in pairs if chosen(o) != chosen(r)]
    deltas = [
        r["by_type"][t]["memory_gib"] - o["by_type"][t]["memory_gib"]
        for o, r in pairs
        for t in r["by_type"]
        if t in o["by_type"] and r["by_type"][t]["config"] == o["by_type"][t]["config"]
    ]
    memory = f"GPU memory used per type {min(deltas):+.1f} to {max(deltas):+.1f} GiB" if deltas else ""
    plans = "; ".join(moved) if moved else "every chosen plan the same"
    return f"\n\nBefore (the previous run's results file): solve {solves}; {plans}; {memory}."


if __name__ == "__main__":
    main()
