"""`srifty probe`, `srifty fit-net` and `srifty testbed …`: the network stage's command line.

A thin shell over :mod:`srifty.network`; heavy imports (torch, xgboost) happen inside the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from srifty.cli.console import err, fmt_opt, out
from srifty.network import ProbeError, TestbedError
from srifty.processes import signals_as_exit


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ProbeError(f"{what} must be comma-separated integers, for example 1,2,4; got '{text}'.") from None
    if not values:
        raise ProbeError(f"{what} is empty; give comma-separated integers, for example 1,2,4.")
    return values


def probe(
    out_path: Annotated[Path, typer.Option("--out", help="Parquet file rank 0 appends rows to.")] = Path(
        "probes.parquet"
    ),
    min_size: Annotated[str, typer.Option(help="Smallest message (bytes; B, KiB, MiB, GiB suffixes).")] = "4B",
    max_size: Annotated[str, typer.Option(help="Largest message.")] = "512MiB",
    size_step: Annotated[int, typer.Option(help="Each size is this many times the previous.")] = 2,
    concurrency: Annotated[str, typer.Option(help="Concurrent async collectives, comma-separated.")] = "1,2,4",
    collective: Annotated[
        str, typer.Option(help="Collectives to sweep, comma-separated: allreduce, all_gather, reduce_scatter.")
    ] = "allreduce",
    repeats: Annotated[int, typer.Option(help="Timed repeats (rows) per size and concurrency.")] = 5,
    warmup: Annotated[int, typer.Option(help="Untimed rounds first.")] = 2,
    timeout_s: Annotated[float, typer.Option(help="A collective slower than this fails the probe.")] = 300.0,
    backend: Annotated[str, typer.Option(help="auto (nccl with CUDA, else gloo), gloo or nccl.")] = "auto",
    min_repeat_s: Annotated[float, typer.Option(help="Loop small messages until a repeat lasts this long.")] = 0.02,
    flush_s: Annotated[float, typer.Option(help="Rank 0 appends rows at least this often.")] = 30.0,
    instance_type: Annotated[str | None, typer.Option(help="VM type; a catalog name fills GPU and rating.")] = None,
    cloud: Annotated[str | None, typer.Option(help="aws, gcp, azure, or a label.")] = None,
    region: Annotated[str | None, typer.Option(help="Region of the VMs.")] = None,
    zone: Annotated[str | None, typer.Option(help="Availability zone of the VMs.")] = None,
    rated_network_gbps: Annotated[float | None, typer.Option(help="Provider's rated network (Gbps).")] = None,
    allocation_id: Annotated[
        str | None, typer.Option(help="Same id for several runs on the same VMs (default: one per run).")
    ] = None,
    hang_rank: Annotated[int | None, typer.Option(hidden=True, help="Test hook: this rank hangs.")] = None,
) -> None:
    """Measure collective bus bandwidth (allreduce; all-gather and reduce-scatter with --collective) with
    torch.distributed; run under torchrun, one process per GPU.

    Example: torchrun --nproc-per-node 2 -m srifty.cli.main probe --max-size 64MiB --out probes.parquet
    """
    from srifty.network.probe import InstanceOptions, ProbeSettings, run_probe
    from srifty.vocab import parse_size_bytes, size_sweep_bytes

    settings = ProbeSettings(
        out=out_path,
        sizes_bytes=tuple(size_sweep_bytes(parse_size_bytes(min_size), parse_size_bytes(max_size), size_step)),
        concurrency=_ints(concurrency, "--concurrency"),
        repeats=repeats,
        warmup=warmup,
        timeout_s=timeout_s,
        backend=backend,
        min_repeat_s=min_repeat_s,
        flush_s=flush_s,
        hang_rank=hang_rank,
        collectives=tuple(c.strip() for c in collective.split(",") if c.strip()),
    )
    options = InstanceOptions(instance_type, cloud, region, zone, rated_network_gbps, allocation_id)
    written = run_probe(settings, options)
    if written:
        err.print(f"appended {written} rows to {out_path}")


def fit_net(
    datasets: Annotated[list[Path], typer.Argument(help="Probe files (.parquet from srifty probe, or .csv).")],
    out_path: Annotated[
        Path, typer.Option("--out", help="Model name; writes NAME.meta.json and two XGBoost JSON files.")
    ] = Path("models/net.json"),
    mtu_bytes: Annotated[int, typer.Option(help="Split between the small- and large-message models.")] = 9001,
    trials: Annotated[int, typer.Option(help="Optuna trials per model; 0 uses default hyperparameters.")] = 40,
    folds: Annotated[int, typer.Option(help="Cross-validation folds, grouped by allocation.")] = 5,
    half_life_days: Annotated[
        float, typer.Option(help="Probes this much older than their type's newest weigh half; 0: no decay.")
    ] = 30.0,
    target: Annotated[str, typer.Option(help="auto, link_fraction (busbw / rated link) or busbw.")] = "auto",
    base: Annotated[
        str,
        typer.Option(
            help="Embedded rows to fit beside yours: none; public (nccl-tests tables of p4d, p5, DGX, …); "
            "default (those and the emulated-testbed probes)."
        ),
    ] = "none",
    seed: Annotated[int, typer.Option(help="Seeds folds, tuner and XGBoost.")] = 0,
    jobs: Annotated[int | None, typer.Option(help="XGBoost threads (default: all cores).")] = None,
) -> None:
    """Fit the bus-bandwidth model (XGBoost, split at the MTU, smooth in size, with intervals) from probe files."""
    from srifty.network import fit_network

    with err.status(f"fitting the bandwidth model ({trials} trials per model)…"):
        fitted = fit_network(datasets, out_path, mtu_bytes, trials, folds, half_life_days, target, base, seed, jobs)
    model, paths = fitted.model, fitted.paths
    table = Table(title=f"bandwidth model: {fitted.rows} rows, MTU {mtu_bytes} B")
    for column in (
        "messages",
        "rows",
        "allocations",
        "CV MAPE (held-out allocations)",
        "train MAPE",
        "80 % interval (probed)",
        "objective",
    ):
        table.add_column(column)
    for side, label in (("small", f"≤ {mtu_bytes} B"), ("large", f"> {mtu_bytes} B")):
        m = model.metrics_[side]
        cv = m["cv_mape"]
        low, high = model.quantiles_[side].at(np.array(["probed"]), [0.1, 0.9])[0]
        table.add_row(
            label,
            str(m["n_rows"]),
            str(m["n_allocations"]),
            "—" if cv is None else f"{100 * cv:.1f} %",
            f"{100 * m['train_mape']:.1f} %",
            f"{100 * np.expm1(low):+.0f} % / {100 * np.expm1(high):+.0f} %",
            model.params_[side]["objective"],
        )
    out.print(table)
    out.print("wrote " + ", ".join(str(p) for p in paths.values()))


testbed_app = typer.Typer(
    help="A multi-host network testbed on this machine (network namespaces, tc-shaped links). Needs root.",
    no_args_is_help=True,
)

NameOption = Annotated[str, typer.Option("--name", help="Testbed name (1–6 lowercase letters/digits).")]


@testbed_app.command("up")
def testbed_up(
    hosts: Annotated[int, typer.Option(help="Number of emulated hosts (VMs).")] = 4,
    instance_type: Annotated[str, typer.Option(help="Catalog instance family to represent.")] = "g4dn.8xlarge",
    rated_network_gbps: Annotated[float | None, typer.Option(help="Override the catalog's rating.")] = None,
    scale: Annotated[float, typer.Option(help="Links run at rating / scale.")] = 50.0,
    seed: Annotated[int, typer.Option(help="Seed of this allocation's placement draw.")] = 0,
    gpus_per_host: Annotated[int | None, typer.Option(help="Processes per host (default: the type's GPUs).")] = None,
    name: NameOption = "tb",
) -> None:
    """Create the hosts, shape their links, and draw an allocation (placement factors)."""
    from srifty.network.testbed import family_from_catalog, up

    state = up(name, hosts, family_from_catalog(instance_type, rated_network_gbps), scale, seed, gpus_per_host)
    table = Table(
        title=f"testbed '{name}' up: {state.instance_type} ({state.rated_network_gbps:g} Gbps rated) at "
        f"1/{state.emulation_scale:g} scale, allocation {state.allocation_id}"
    )
    for column in ("host", "namespace", "IP", "placement factor", "shaped Mbit/s", "represents Gbps"):
        table.add_column(column)
    for h in state.hosts:
        table.add_row(
            str(h.index),
            h.namespace,
            h.ip,
            f"{h.bandwidth_factor:.3f}",
            f"{h.shaped_gbps * 1000:.1f}",
            f"{h.shaped_gbps * state.emulation_scale:.1f}",
        )
    out.print(table)
    if state.intra_node_shaped_gbps:
        out.print(
            f"Each host's loopback (between its {state.gpus_per_host} processes) runs at "
            f"{state.intra_node_shaped_gbps * 1000:.0f} Mbit/s, the GPUs' intra-node link at 1/{scale:g}."
        )
    out.print(
        "This is an emulation of cloud links on one machine: real gloo traffic, tc-shaped link rates, no added latency."
    )


@testbed_app.command("down")
def testbed_down(
    name: NameOption = "tb",
    all_testbeds: Annotated[bool, typer.Option("--all", help="Remove every srifty testbed.")] = False,
) -> None:
    """Remove the testbed's processes, namespaces, links and state (also after a crash)."""
    from srifty.network.testbed import down

    removed = down(None if all_testbeds else name)
    out.print(f"removed {len(removed)} item(s)" + (": " + ", ".join(removed) if removed else ""))


@testbed_app.command("status")
def testbed_status(
    name: Annotated[str | None, typer.Option("--name", help="Only this testbed.")] = None,
) -> None:
    """Show testbeds that are up, with the link rates really configured."""
    from srifty.network.testbed import status

    found = status(name)
    if not found:
        out.print("no srifty testbed is up.")
        return
    for tb, (state, hosts) in found.items():
        title = f"testbed '{tb}'"
        if state is None:
            title += ": no state file (a crashed up?); run `srifty testbed down --name " + tb + "`"
        else:
            title += f": {state.instance_type} at 1/{state.emulation_scale:g}, allocation {state.allocation_id}"
        table = Table(title=title)
        for column in ("namespace", "IP", "up Mbit/s", "down Mbit/s", "loopback Mbit/s"):
            table.add_column(column)
        for h in hosts:
            rates = (h.up_gbps, h.down_gbps, h.loopback_gbps)
            table.add_row(h.namespace, h.ip or "—", *(fmt_opt(None if r is None else r * 1000, ".1f") for r in rates))
        out.print(table)


@testbed_app.command("launch", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def testbed_launch(
    ctx: typer.Context,
    name: NameOption = "tb",
    hosts: Annotated[int | None, typer.Option(help="Use the first N hosts (default: all).")] = None,
    nproc_per_host: Annotated[int | None, typer.Option(help="Processes per host (default: GPUs per VM).")] = None,
    timeout_s: Annotated[float, typer.Option(help="Stop every host after this long.")] = 3600.0,
    vary_depth: Annotated[float, typer.Option(help="Vary link rates down by up to this fraction.")] = 0.0,
    vary_period_s: Annotated[float, typer.Option(help="How often rates are redrawn.")] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of the rate variation.")] = 0,
) -> None:
    """Run a srifty command on the testbed hosts under torchrun, e.g. `launch -- probe --out p.parquet`."""
    from srifty.network.testbed import RateVariation, launch

    if not ctx.args:
        raise TestbedError("name the srifty command to run after `--`, for example: launch -- probe --out p.parquet")
    variation = RateVariation(vary_depth, vary_period_s, seed) if vary_depth > 0 else None
    # SIGTERM/SIGHUP, like Ctrl-C, unwind the launch: its hosts' processes are ended
    with signals_as_exit():
        launch(name, list(ctx.args), hosts, nproc_per_host, timeout_s, variation)


@testbed_app.command("sweep", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def testbed_sweep(
    ctx: typer.Context,
    out_path: Annotated[Path, typer.Option("--out", help="Parquet file all probes append to.")],
    family: Annotated[list[str], typer.Option(help="Catalog instance type to represent (repeatable).")],
    allocations: Annotated[int, typer.Option(help="Placement draws per family.")] = 4,
    world_sizes: Annotated[str, typer.Option(help="World sizes to probe, comma-separated.")] = "2,4,8",
    scale: Annotated[float, typer.Option(help="Links run at rating / scale.")] = 50.0,
    seed: Annotated[int, typer.Option(help="Base seed of the placement draws.")] = 0,
    vary_depth: Annotated[float, typer.Option(help="Vary link rates down by up to this fraction.")] = 0.0,
    vary_period_s: Annotated[float, typer.Option(help="How often rates are redrawn.")] = 1.0,
    timeout_s: Annotated[float, typer.Option(help="Limit of each probe launch.")] = 3600.0,
    lock_file: Annotated[
        Path | None, typer.Option(help="Hold an flock on this file during each launch (shared machines).")
    ] = None,
    first_allocation: Annotated[int, typer.Option(help="Index of the first allocation (to resume).")] = 0,
    name: NameOption = "sweep",
) -> None:
    """Collect a probe set: per family and allocation, bring a testbed up, probe, take it down.

    Options after `--` go to `srifty probe`, for example `-- --max-size 32MiB --repeats 3`.
    """
    from srifty.network.testbed import RateVariation, SweepPlan, family_from_catalog, run_sweep

    plan = SweepPlan(
        families=tuple(family_from_catalog(f) for f in family),
        allocations=allocations,
        world_sizes=_ints(world_sizes, "--world-sizes"),
        probe_args=tuple(ctx.args),
        out=out_path,
        scale=scale,
        seed=seed,
        variation=RateVariation(vary_depth, vary_period_s, seed) if vary_depth > 0 else None,
        name=name,
        timeout_s=timeout_s,
        lock_file=lock_file,
        first_allocation=first_allocation,
    )
    with signals_as_exit():  # a stopped sweep still ends its hosts and takes its testbed down
        launches = run_sweep(plan, on_step=err.print)
    out.print(f"{launches} probe launches appended to {out_path}")
