"""Promises under spot losses and model error (issue 23): the figures of BENCHMARKS.md's "Spot promises".

Parts (``python -m benchmarks.spot PART``; ``all`` runs every one and writes the section):

* ``speed``: planner solve time (median of ``--runs`` whole ``plan_job`` calls, inputs resolved once
  beforehand) of the paper's cases (``examples/case*.yaml``) and of the catalog-wide example
  (``examples/auto-resnet50.yaml``), and what each chose (the plans of cases 1–3 before and after). ``--save
  FILE`` keeps the figures (``benchmarks/results/spot/speed_before.json`` holds those measured before this
  issue's planning changes, at the commit it names).

* ``calibration``: the spot model, leave one trace out: each bundled trace's observed loss rate per VM-hour
  held and time to regain capacity, against what a model fitted on the other traces predicts for its type
  and zone (the zone is never matched, its own data being left out: the region's other traces, or the type's,
  or the prior), with the predicted rate's 80 % interval.
* ``replay``: ``srifty eval spot`` on the bundled us-west-2 traces (the examples' region), leave one trace out
  (srifty's spot model fitted without the trace replayed and without the traces recorded with it, which
  stand for the region's other zones), for the three spot examples at three deadlines each: per policy,
  deadline and budget met fractions, mean and p95 cost, the saving against ``on_demand`` and the gap to the
  ``oracle``; srifty's policy with zone moves and kept in one zone (``srifty (one zone)``) on the same runs.
* ``cases``: the paper's cases 1–3 planned before (figures of ``speed_before.json``) and after.

Run under the CPU lock: ``flock /tmp/srifty-cpu.lock python -m benchmarks.spot all`` (``--write`` puts the
section into BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, machine_description
from srifty.catalog import load_catalog
from srifty.plan.api import plan_job
from srifty.plan.inputs import resolve
from srifty.spec import load_spec

RESULTS = ROOT / "benchmarks" / "results" / "spot"
SPEED_BEFORE = RESULTS / "speed_before.json"
SPEED_SPECS = [*sorted((ROOT / "examples").glob("case*.yaml")), ROOT / "examples" / "auto-resnet50.yaml"]


def commit() -> str:
    """The checkout's commit (short), with ``+dirty`` when files differ from it (``SRIFTY_COMMIT`` names it
    where the code runs from an exported copy, not a checkout)."""
    import os

    if os.environ.get("SRIFTY_COMMIT"):
        return os.environ["SRIFTY_COMMIT"]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    return head.strip() + ("+dirty" if dirty.stdout.strip() else "")


def plan_summary(plan: Any) -> dict[str, Any]:
    """What a plan chose, in a few fields (the promise fields where the plan has them)."""
    best = plan.best
    if best is None:
        binding = plan.infeasibility.binding_constraint if plan.infeasibility else "?"
        return {"chosen": None, "infeasible": binding}
    out = {
        "chosen": best.config.tagged(),
        "zone": best.config.zone,
        "n_vms": best.config.n_vms,
        "time_s": best.time_s,
        "cost_usd": best.cost_usd,
        "p_meet_deadline": best.p_meet_deadline,
    }
    risk = getattr(best, "risk", None)
    if risk is not None:
        out.update(
            p_meet_budget=risk.p_meet_budget,
            expected_losses=risk.expected_losses,
            time_p95_s=risk.time_p95_s,
            cost_p95_usd=risk.cost_p95_usd,
            p_obtain_start=risk.p_obtain_start,
        )
    return out


def measure_speed(runs: int) -> dict[str, Any]:
    """Median solve time and the choice of every speed spec."""
    catalog = load_catalog()
    rows = {}
    for path in SPEED_SPECS:
        spec = load_spec(path)
        inputs = resolve(spec, catalog)
        times, plan = [], None
        for _ in range(runs):
            plan, _ = plan_job(spec, catalog, inputs)
            times.append(plan.solve_time_s)
        assert plan is not None
        rows[path.stem] = {"solve_s": statistics.median(times), "runs": runs, **plan_summary(plan)}
        print(path.stem, json.dumps(rows[path.stem]), flush=True)
    return {"commit": commit(), "machine": machine_description(), "runs": runs, "specs": rows}


def measure_calibration() -> dict[str, Any]:
    """Leave one trace out: observed against predicted loss rate and time to regain capacity, per trace."""
    from scipy.stats import gamma

    from srifty.spot import bundled_trace_paths, count_trace, fit_spot_model, load_trace

    catalog = load_catalog()
    traces = [load_trace(p, catalog) for p in bundled_trace_paths()]
    rows = []
    for i, held_out in enumerate(traces):
        model = fit_spot_model([t for j, t in enumerate(traces) if j != i])
        figures = model.figures_for(held_out.instance_type, held_out.zone, held_out.region)
        counts = count_trace(held_out)
        observed = counts.vms_lost / counts.held_vm_hours if counts.held_vm_hours > 0 else float("nan")
        f = figures.figures
        lo, hi = (float(gamma.ppf(q, f.rate_shape, scale=f.loss_rate_per_vm_hour / f.rate_shape)) for q in (0.1, 0.9))
        downtimes = sorted(counts.downtimes_s)
        rows.append(
            {
                "trace": held_out.name,
                "zone": held_out.zone,
                "level": figures.level,
                "held_vm_hours": counts.held_vm_hours,
                "vms_lost": counts.vms_lost,
                "observed_rate": observed,
                "predicted_rate": f.loss_rate_per_vm_hour,
                "rate_interval_80": [lo, hi],
                "observed_regain_median_s": statistics.median(downtimes) if downtimes else None,
                "predicted_regain_median_s": f.downtime_median_s,
                "observed_regain_mean_s": statistics.mean(downtimes) if downtimes else None,
                "predicted_regain_mean_s": f.downtime_mean_s,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return {"commit": commit(), "machine": machine_description(), "rows": rows}


REPLAY_SPECS = ["spot-resnet50-tight", "spot-vgg16-medium", "spot-bert-loose"]
#: srifty's policy kept in its zone (the same runs without the other zones' traces), beside the one that moves.
ONE_ZONE = "srifty (one zone)"
#: Deadlines as multiples of the spec's own (tight, as written, loose).
REPLAY_DEADLINES = [("tight", 0.9), ("as written", 1.0), ("loose", 2.0)]


def measure_replay(starts: int, seed: int) -> dict[str, Any]:
    """``srifty eval spot`` leave one trace out, on the bundled us-west-2 traces (see the module docstring)."""
    from srifty.errors import SpecError
    from srifty.evaluate.spot_eval import POLICIES, eval_spot, learn_for, recorded_with
    from srifty.evaluate.spot_replay import summarise
    from srifty.spot import bundled_trace_paths, fit_spot_model, load_trace

    catalog = load_catalog()
    traces = [load_trace(p, catalog) for p in bundled_trace_paths()]
    replayed = [t for t in traces if t.region == "us-west-2"]
    rows = []
    for name in REPLAY_SPECS:
        base = load_spec(ROOT / "examples" / f"{name}.yaml")
        learned = learn_for(base, seed, catalog)
        for label, factor in REPLAY_DEADLINES:
            assert base.deadline_s is not None
            spec = base.model_copy(update={"deadline_s": base.deadline_s * factor})
            records: dict[str, list[Any]] = {}
            plans = []
            refused = None
            for held_out in replayed:
                # the model never saw the replayed trace, nor the traces recorded with it (its other zones)
                unseen = {held_out.name, *(t.name for t in recorded_with(held_out, replayed))}
                model = fit_spot_model([t for t in traces if t.name not in unseen])
                try:
                    result = eval_spot(
                        spec, [held_out], starts, seed, model, catalog, learned=learned, zone_pool=replayed
                    )
                    one_zone = eval_spot(
                        spec, [held_out], starts, seed, model, catalog, learned=learned, move_zones=False
                    )
                except SpecError as error:  # srifty finds no plan at its confidence: nothing to replay
                    refused = str(error)
                    break
                plans.append(result.plan)
                for record in result.records:
                    records.setdefault(record.policy, []).append(record)
                records.setdefault(ONE_ZONE, []).extend(r for r in one_zone.records if r.policy == "srifty")
            summary = {p: summarise(records[p]) for p in (POLICIES[0], ONE_ZONE, *POLICIES[1:]) if p in records}
            row = {
                "refused": refused,
                "spec": name,
                "deadline": label,
                "deadline_s": spec.deadline_s,
                "budget_usd": spec.budget_usd,
                "plans": sorted({p["config"] for p in plans}),
                "predicted_p_meet_deadline": [p["p_meet_deadline"] for p in plans],
                "policies": summary,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return {
        "commit": commit(),
        "machine": machine_description(),
        "starts_per_trace": starts,
        "seed": seed,
        "traces": [t.name for t in replayed],
        "rows": rows,
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _p2(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _usd(x: float | None) -> str:
    return "—" if x is None else f"${x:,.2f}"


def _load(figures: dict[str, Any]) -> str:
    """What else used the CPU meanwhile, where the run recorded it (``load`` in its JSON)."""
    return f" {figures['load']}" if figures.get("load") else ""


def calibration_table(cal: dict[str, Any]) -> list[str]:
    rows = [
        "| trace (left out) | figures from | VM-hours held | lost | loss/VM-h observed | predicted [80 %] "
        "| regain median obs. / pred. | regain mean obs. / pred. |",
        "|---|---|---|---|---|---|---|---|",
    ]
    inside, ratios, regain = 0, [], []
    for r in cal["rows"]:
        lo, hi = r["rate_interval_80"]
        inside += lo <= r["observed_rate"] <= hi
        ratios.append(abs(math.log(max(r["predicted_rate"], 1e-9) / max(r["observed_rate"], 1e-9))))
        if r["observed_regain_median_s"]:
            regain.append(abs(math.log(r["predicted_regain_median_s"] / r["observed_regain_median_s"])))
        med = r["observed_regain_median_s"]
        mean = r["observed_regain_mean_s"]
        rows.append(
            f"| {r['trace']} | {r['level']} | {r['held_vm_hours']:,.0f} | {r['vms_lost']} | {r['observed_rate']:.3f} "
            f"| {r['predicted_rate']:.3f} [{lo:.3f}, {hi:.3f}] "
            f"| {'—' if med is None else f'{med / 60:.0f}'} / {r['predicted_regain_median_s'] / 60:.0f} min "
            f"| {'—' if mean is None else f'{mean / 60:.0f}'} / {r['predicted_regain_mean_s'] / 60:.0f} min |"
        )
    n = len(cal["rows"])
    rows += [
        "",
        f"Observed loss rate inside the predicted 80 % interval: {inside} of {n} traces. Median |ln(predicted / "
        f"observed)|: loss rate {statistics.median(ratios):.2f}, time to regain capacity (median) "
        f"{statistics.median(regain):.2f}.",
    ]
    return rows


def replay_table(rep: dict[str, Any]) -> list[str]:
    rows = [
        "| spec | deadline | srifty's plan (P(deadline) predicted) | policy | deadline met | budget met | cost mean "
        "| cost p95 | saving vs on_demand | gap to oracle | losses | zone moves |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    goal_met = goal_cost = total = 0
    moves: list[tuple[float, float, float]] = []
    for r in rep["rows"]:
        if r.get("refused"):
            rows.append(f"| {r['spec']} | {r['deadline']} ({r['deadline_s']:,.0f} s) | no plan: {r['refused']} |"
                        " | | | | | | | | |")  # fmt: skip
            continue
        pols = r["policies"]
        od = pols.get("on_demand", {}).get("cost_usd_mean")
        oracle = pols.get("oracle", {}).get("cost_usd_mean")
        p_pred = [p for p in r["predicted_p_meet_deadline"] if p is not None]
        plan = ", ".join(r["plans"]) + (f" ({min(p_pred):.2f}–{max(p_pred):.2f})" if p_pred else "")
        for name, fig in pols.items():
            cost = fig["cost_usd_mean"]
            saving = "—" if od is None or cost is None or name == "on_demand" else f"{100 * (1 - cost / od):.0f}%"
            gap = "—" if oracle is None or cost is None or name == "oracle" else f"{100 * (cost / oracle - 1):+.0f}%"
            rows.append(
                f"| {r['spec']} | {r['deadline']} ({r['deadline_s']:,.0f} s) | {plan} | {name} "
                f"| {_pct(fig['deadline_met_fraction'])} | {_pct(fig['budget_met_fraction'])} | {_usd(cost)} "
                f"| {_usd(fig['cost_usd_p95'])} | {saving} | {gap} | {fig['losses_mean']:.2f} "
                f"| {_p2(fig.get('zone_moves_mean'))} |"
            )
        s, up = pols.get("srifty"), pols.get("uniform_progress")
        if s is not None and up is not None:
            total += 1
            met = s["deadline_met_fraction"] or 0.0
            goal_met += met >= 0.9
            goal_cost += s["cost_usd_mean"] <= up["cost_usd_mean"] + 1e-9 and met >= (up["deadline_met_fraction"] or 0)
        one = pols.get(ONE_ZONE)
        if s is not None and one is not None:
            moves.append(
                (
                    s["cost_usd_mean"] / one["cost_usd_mean"] - 1,
                    s["cost_usd_p95"] / one["cost_usd_p95"] - 1,
                    (s["deadline_met_fraction"] or 0.0) - (one["deadline_met_fraction"] or 0.0),
                )
            )
    rows += [
        "",
        f"srifty met the deadline in at least its stated confidence (90 %) of runs in {goal_met} of {total} "
        f"spec × deadline pairs, and cost no more than uniform_progress at an equal or higher met fraction in "
        f"{goal_cost} of {total}.",
    ]
    if moves:
        mean, p95, met_change = zip(*moves, strict=True)
        rows += [
            "",
            f"Zone moves against srifty kept in one zone, on the same runs ({len(moves)} pairs): mean cost "
            f"{statistics.median(mean):+.1%} (median over pairs; {min(mean):+.1%} to {max(mean):+.1%}), p95 cost "
            f"{statistics.median(p95):+.1%} ({min(p95):+.1%} to {max(p95):+.1%}), deadline met "
            f"{min(met_change):+.1%} to {max(met_change):+.1%}.",
        ]
    return rows


def cases_table(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    rows = [
        "| case | before: plan | time s | cost $ | after: plan | expected time s (p95) | expected cost $ (p95) "
        "| spot losses | P(obtain all) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("case1-resnet50", "case2-vgg16", "case3-alexnet"):
        b, a = before["specs"][name], after["specs"][name]
        rows.append(
            f"| {name} | {b['chosen']} | {b['time_s']:,.0f} | {b['cost_usd']:.2f} | {a['chosen']} "
            f"| {a['time_s']:,.0f} ({a.get('time_p95_s', 0):,.0f}) "
            f"| {a['cost_usd']:.2f} ({a.get('cost_p95_usd', 0):.2f}) "
            f"| {a.get('expected_losses', 0):.2f} | {_p2(a.get('p_obtain_start'))} |"
        )
    return rows


def speed_table(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    rows = ["| spec | before: solve | after: solve | after: chosen |", "|---|---|---|---|"]
    within = 0
    papers = 0
    for name, a in after["specs"].items():
        b = before["specs"].get(name, {})
        if name.startswith("case"):
            papers += 1
            within += a["solve_s"] <= 0.1
        chosen = a["chosen"] or f"infeasible ({a.get('infeasible')})"
        before_s = b.get("solve_s")
        rows.append(
            f"| {name} | {'—' if before_s is None else f'{before_s:.3f} s'} | {a['solve_s']:.3f} s | {chosen} |"
        )
    auto = after["specs"].get("auto-resnet50", {}).get("solve_s")
    rows += [
        "",
        f"Paper cases within 0.1 s after: {within} of {papers}; the catalog-wide example: "
        f"{'—' if auto is None else f'{auto:.2f} s'} (goal 1 s).",
    ]
    return rows


def write(results: Path) -> None:
    """Write BENCHMARKS.md's section from the saved figures."""
    from benchmarks.common import write_section

    def load(name: str) -> dict[str, Any]:
        return json.loads((results / name).read_text())

    before, after = load("speed_before.json"), load("speed.json")
    cal, rep = load("calibration.json"), load("replay.json")
    body = [
        "Issue 23: plans on distributions with a stated confidence, a spot model learned from real traces, one "
        "spot policy for the runtime and the judge's trace replay. EMULATED cloud and real traces: nothing here "
        "is a measurement of a real cloud. Figures saved in `benchmarks/results/spot/`.",
        "",
        "### Spot model calibration, leave one trace out",
        "",
        "Each bundled trace (real AWS p3.2xlarge traces of *Can't Be Late*) against a model fitted on the other "
        "14 (a trace of the same zone from another dataset may remain). Rate interval: the gamma of the rate the "
        "model gives a job (estimate uncertainty and bursts).",
        "",
        *calibration_table(cal),
        "",
        f"Command: `python -m benchmarks.spot calibration`. Machine: {cal['machine']}.{_load(cal)}",
        "",
        "### Trace replay per policy (`srifty eval spot`), leave one trace out",
        "",
        f"The three spot examples at three deadlines (0.9×, 1× and 2× the spec's), each replayed on the "
        f"{len(rep['traces'])} bundled us-west-2 traces ({', '.join(rep['traces'])}) with srifty's spot model "
        f"fitted without the trace replayed and without the traces recorded with it, which stand for the region's "
        f"other zones (paired with the catalog's zone IDs, cheapest first: an assumption, since AWS maps zone names "
        f"to IDs per account); {rep['starts_per_trace']} start times per trace, the same for every "
        f"policy; launch times, iteration times and prices from the emulated cloud (seed {rep['seed']}). "
        "Only srifty's policy moves zone; the baselines are single-zone rules. Cost saving against on_demand and "
        "gap to the oracle (a lower bound: spot whenever there in any zone, at that zone's price, no overheads) "
        "on the mean cost.",
        "",
        *replay_table(rep),
        *(["", rep["comment"]] if rep.get("comment") else []),
        "",
        f"Command: `python -m benchmarks.spot replay --starts {rep['starts_per_trace']}`. Machine: "
        f"{rep['machine']}.{_load(rep)}",
        "",
        "### The paper's cases 1–3, before and after",
        "",
        "Before: expected-value planning (spot never lost, measured profiles exact). After: spot losses from the "
        "embedded spot model (g4dn types: the prior), model error, launch spread; min_time ranks on the expected "
        "time. The paper chose 16 and 32 VMs at large local batches.",
        "",
        *cases_table(before, after),
        *(["", after["cases_comment"]] if after.get("cases_comment") else []),
        "",
        "### Planner solve time, before and after",
        "",
        f"Median of {after['runs']} whole `plan_job` calls per spec (inputs resolved beforehand). Before: "
        f"{before['machine']}; after: {after['machine']}.{_load(after)}",
        "",
        *speed_table(before, after),
        *(["", after["comment"]] if after.get("comment") else []),
        "",
        "Command: `python -m benchmarks.spot speed` (before: the same script on an exported copy of the earlier "
        "commit).",
    ]
    write_section("Spot promises (issue 23)", "\n".join(body))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("part", choices=["speed", "calibration", "replay", "write"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--starts", type=int, default=20, help="replay: start times per trace")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, default=None, help="Write the figures of this part here (JSON).")
    args = parser.parse_args()
    if args.part == "write":
        write(RESULTS)
        return
    if args.part == "speed":
        figures = measure_speed(args.runs)
    elif args.part == "calibration":
        figures = measure_calibration()
    else:
        figures = measure_replay(args.starts, args.seed)
    save = args.save or RESULTS / f"{args.part}.json"
    save.parent.mkdir(parents=True, exist_ok=True)
    save.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"wrote {save}")


if __name__ == "__main__":
    main()
