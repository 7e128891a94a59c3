"""`srifty profile estimate`: predict profiles on GPUs nobody measured, from measured profiles."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from srifty.cli.console import err, out, styled
from srifty.compute import choose_source, estimate_profile, load_profile, measure_command, resolve_gpu
from srifty.compute.bundled import profile_filename
from srifty.compute.profile import Profile
from srifty.errors import ProfileError, SriftyError
from srifty.plan.methods.paleo import paleo_profile

METHODS = ("roofline", "paleo")


def estimated_path(out_dir: Path, model: str, gpu: str, method: str) -> Path:
    """``<out>/<model>__<gpu>.estimated.json`` (``.paleo.json`` for Paleo): never a measured profile's name."""
    suffix = "estimated" if method == "roofline" else "paleo"
    return out_dir / profile_filename(model, f"{gpu}.{suffix}")


def estimate(
    profiles: Annotated[list[Path], typer.Argument(help="Measured profile files of one model (one or more).")],
    gpu: Annotated[str, typer.Option("--gpu", help="Comma-separated catalog GPU names, e.g. T4,V100,A10G.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the estimated profiles.")] = Path("profiles"),
    method: Annotated[str, typer.Option(help="roofline (scaled from measured op times) or paleo (analytical).")] = (
        "roofline"
    ),
    launch_floor_us: Annotated[float, typer.Option(help="Least time of one op on the GPU, microseconds.")] = 5.0,
    batch: Annotated[int | None, typer.Option(help="Report latency at this batch (default: each max batch).")] = None,
) -> None:
    """Estimate PROFILES' model on GPUs without a measured profile; each estimate is marked as one.

    With several profiles, each GPU is estimated from the closest one (a GPU before a CPU, then the nearest
    roofline), and the table says which and why. Example: `srifty profile estimate profiles/resnet50__cpu.json
    --gpu T4,V100,A10G --out profiles/`.
    """
    if method not in METHODS:
        raise ProfileError(f"unknown --method '{method}'; use roofline or paleo.")
    if launch_floor_us < 0:
        raise ProfileError(f"--launch-floor-us must be non-negative, got {launch_floor_us}")
    if batch is not None and batch < 1:
        raise ProfileError(f"--batch must be at least 1, got {batch}")
    names = [g.strip() for g in gpu.split(",") if g.strip()]
    if not names:
        raise ProfileError("name at least one GPU with --gpu, e.g. --gpu T4,V100,A10G.")
    specs = [resolve_gpu(name) for name in names]  # unknown names fail here, before any work
    loaded = [load_profile(path) for path in profiles]
    paths = {id(p): path for p, path in zip(loaded, profiles, strict=True)}
    table = Table(title=f"ESTIMATED profiles of {loaded[0].model} ({method}): predictions, not measurements")
    for column in ("GPU", "source", "why this source", "max batch", "batch", "iter ms", "samples/s", "spread ×"):
        table.add_column(
            column, justify="right" if column in ("max batch", "batch", "iter ms", "samples/s") else "left"
        )
    written: list[tuple[Path, Profile]] = []
    failures: list[str] = []
    for spec in specs:
        try:
            choice = choose_source(loaded, spec)
            if choice.measured_on_target and method == "roofline":
                table.add_row(spec.name, str(paths[id(choice.profile)]), "measured on this GPU: not estimated")
                continue
            if method == "paleo":
                result = paleo_profile(choice.profile, spec)
            else:
                result = estimate_profile(
                    choice.profile, spec, launch_floor_s=launch_floor_us * 1e-6, reason=choice.reason
                )
        except SriftyError as error:
            failures.append(f"{spec.name}: {error}")
            table.add_row(spec.name, "—", styled("red", f"not estimated: {error}"))
            continue
        at = min(batch, result.max_batch) if batch else result.max_batch
        iter_ms = float(result.predict_ms("iter", at))
        path = result.save(estimated_path(out_dir, result.model, spec.name, method))
        written.append((path, result))
        table.add_row(
            spec.name,
            f"{result.estimated_from} ({paths[id(choice.profile)]})",
            result.estimate.reason if result.estimate else "",
            f"{result.max_batch} ({result.max_batch_limited_by})",
            str(at),
            f"{iter_ms:,.2f}",
            f"{1000.0 * at / iter_ms:,.1f}" if iter_ms > 0 else "—",
            f"{result.spread_scale:.2f}",
        )
    out.print(table)
    for path, result in written:
        where = f"on a VM with a {result.device.gpu} GPU"
        out.print(f"wrote {path} (an estimate; to measure it, run {where}: {measure_command(result)})", soft_wrap=True)
    if failures:
        err.print(styled("bold red", "error:", " " + " ".join(failures)), soft_wrap=True)
        raise typer.Exit(2)
