"""`srifty catalog`: browse the bundled VM catalog."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from srifty.catalog import CATALOG_VERSION, describe, load_catalog
from srifty.cli.console import fmt_opt, fmt_usd, out

app = typer.Typer(help="Browse the bundled cloud GPU VM catalog.", no_args_is_help=True)


@app.command("list")
def list_types(
    gpu: Annotated[str | None, typer.Option(help="GPU model, for example T4 or A10G.")] = None,
    cloud: Annotated[str | None, typer.Option(help="aws, gcp or azure.")] = None,
    region: Annotated[str | None, typer.Option(help="Region, for example us-east-1.")] = None,
    spot: Annotated[bool, typer.Option("--spot", help="Only types with a spot market.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")] = False,
) -> None:
    """List instance types with GPUs, prices (USD/hour) and rated network bandwidth."""
    rows = load_catalog().find(gpu=gpu, cloud=cloud, region=region, market="spot" if spot else None)
    if as_json:
        payload = {"catalog_version": CATALOG_VERSION, "instance_types": [describe(t) for t in rows]}
        typer.echo(json.dumps(payload, indent=1))
        return
    table = Table(title=f"srifty catalog {CATALOG_VERSION}: {len(rows)} instance types")
    for column, justify in [
        ("cloud", "left"),
        ("region", "left"),
        ("instance type", "left"),
        ("GPU", "left"),
        ("GPUs", "right"),
        ("GPU GiB", "right"),
        ("vCPUs", "right"),
        ("RAM GiB", "right"),
        ("on-demand $/h", "right"),
        ("spot $/h (min zone)", "right"),
        ("net Gbps", "right"),
    ]:
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    gcp_seen = False
    for t in rows:
        note = ""
        if not t.price_covers_host_vm:
            note, gcp_seen = " †", True
        table.add_row(
            t.cloud,
            t.region,
            t.name,
            t.gpu_name,
            str(t.gpus_per_vm),
            f"{t.gpu_memory_gib:.0f}",
            fmt_opt(t.vcpus, ".0f"),
            fmt_opt(t.ram_bytes / 2**30 if t.ram_bytes else None, ".0f"),
            fmt_usd(t.on_demand_usd_per_hour) + note,
            fmt_usd(t.spot_usd_per_hour) + note,
            fmt_opt(t.rated_network_gbps, "g"),
        )
    out.print(table)
    if gcp_seen:
        out.print("† GCP prices are for the GPU attachment only; the n1 host VM is not included.")
