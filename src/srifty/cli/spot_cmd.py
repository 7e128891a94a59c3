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
