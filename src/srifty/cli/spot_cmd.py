"""`srifty fit-spot`: learn the spot model from trace files."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from srifty.cli.console import out
from srifty.errors import SpecError

if TYPE_CHECKING:
    from srifty.spot import SpotModel


def fit_spot(
    traces: Annotated[
        list[str],
        typer.Argument(
            help="Trace files ({metadata: {gap_seconds}, data: [...]}) named <zone>_<gpu>_<gpus per VM>.json, or "
            "FILE=INSTANCE_TYPE."
        ),
    ],
    out_path: Annotated[Path, typer.Option("--out", help="Where to write the spot model (JSON).")],
) -> None:
    """Fit the spot model (loss rate, losses together, time to regain capacity, chance of n VMs) on traces."""
    from srifty.catalog import load_catalog
    from srifty.spot import fit_spot_files

    if not traces:
        raise SpecError("fit-spot needs at least one trace file")
    command = "srifty fit-spot " + " ".join(shlex.quote(t) for t in traces) + f" --out {shlex.quote(str(out_path))}"
    model = fit_spot_files(traces, load_catalog(), command)
    model.save(out_path)
    show_spot_model(model)
    out.print(f"wrote {out_path}")


def show_spot_model(model: SpotModel) -> None:
    """Print a spot model's entries as a table."""
    table = Table(title=f"spot model: {len(model.traces)} traces")
    for column in ("level", "instance type", "where", "traces", "VM-hours", "lost", "loss/VM-h", "together ρ"):
        table.add_column(column, justify="left" if column in ("level", "instance type", "where") else "right")
    for column in ("regain median", "regain mean", "P(1 VM)"):
        table.add_column(column, justify="right")
    for e in model.entries:
        f = e.figures
        table.add_row(
            e.level,
            e.instance_type or "any",
            e.zone or e.region or "—",
            str(len(e.traces)),
            f"{e.held_vm_hours:,.0f}",
            str(e.vms_lost),
            f"{f.loss_rate_per_vm_hour:.3f}",
            f"{f.burst_rho:.2f}",
            f"{f.downtime_median_s / 60:,.0f} min",
            f"{f.downtime_mean_s / 60:,.0f} min",
            f"{f.p_obtain[0]:.2f}" if f.p_obtain else "—",
        )
    out.print(table)


def eval_spot_command(
    spec_path: Annotated[Path, typer.Argument(help="Job spec YAML (one region; its candidates include traced types).")],
    trace: Annotated[
        list[str],
        typer.Option(
            "--trace",
            help="Spot trace file (repeatable): <zone>_<gpu>_<gpus per VM>.json or FILE=INSTANCE_TYPE; each is "
            "replayed as the behaviour of the plan's own zone, and the traces recorded with it (same folder, gap "
            "and length) as the region's other zones.",
        ),
    ],
    starts: Annotated[int, typer.Option(help="Runs per policy, their start times spread over the traces.")] = 50,
    seed: Annotated[int, typer.Option(help="Seed of the emulated cloud, srifty's learning and the start times.")] = 0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures here (JSON).")] = None,
    spot_model: Annotated[
        Path | None, typer.Option("--spot-model", help="srifty's spot model (default: the spec's, or embedded).")
    ] = None,
    zone_moves: Annotated[
        bool,
        typer.Option(
            "--zone-moves/--no-zone-moves",
            help="Let srifty's policy move its spot VMs to the zones of the traces recorded with each replayed one.",
        ),
    ] = True,
) -> None:
    """Judge srifty's spot policy against on_demand, spot_restart, uniform_progress and the oracle by replaying
    real spot traces on the EMULATED cloud."""
    from srifty.catalog import load_catalog
    from srifty.evaluate import POLICIES, eval_spot
    from srifty.spec import load_spec
    from srifty.spot import SpotModel, load_trace

    if not trace:
        raise SpecError("--trace needs at least one spot trace file")
    catalog = load_catalog()
    spec = load_spec(spec_path)
    traces = [load_trace(t, catalog) for t in trace]
    model = SpotModel.load(spot_model) if spot_model is not None else None
    result = eval_spot(spec, traces, starts, seed, model, catalog, move_zones=zone_moves)
    plan = result.plan
    out.print(
        f"srifty's plan: {plan['config']} (spot twin {plan['spot_twin']}, on-demand twin {plan['on_demand_twin']}); "
        f"predicted P(deadline) {_fmt(plan['p_meet_deadline'])}, P(budget) {_fmt(plan['p_meet_budget'])}",
        soft_wrap=True,
    )
    table = Table(title=f"spot policies replayed on {len(traces)} trace(s), {starts} starts (EMULATED cloud)")
    columns = (
        "policy", "deadline met", "budget met", "cost mean", "cost p95", "finish p95", "losses", "zone moves", "runs"
    )  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "policy" else "right")
    for name in POLICIES:
        row = result.policies.get(name)
        if row is None:
            continue
        table.add_row(
            name,
            _fmt(row["deadline_met_fraction"]),
            _fmt(row["budget_met_fraction"]),
            "—" if row["cost_usd_mean"] is None else f"${row['cost_usd_mean']:,.2f}",
            "—" if row["cost_usd_p95"] is None else f"${row['cost_usd_p95']:,.2f}",
            "—" if row["finish_s_p95"] is None else f"{row['finish_s_p95']:,.0f} s",
            _fmt(row["losses_mean"], ".2f"),
            _fmt(row["zone_moves_mean"], ".2f"),
            str(row["runs"]),
        )
    out.print(table)
    moves = {name: zones for name, zones in result.plan["zone_traces"].items() if zones}
    for name, zones in moves.items():
        paired = ", ".join(f"{zone} ← {other}" for zone, other in zones.items())
        out.print(f"zones for runs on {name}: {paired} (trace zones paired with catalog zone IDs, an assumption)")
    for note in result.notes:
        out.print(f"note: {note}")
    if json_out is not None:
        result.save(json_out)
        out.print(f"wrote {json_out}")


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "—" if value is None else format(value, spec)
