"""`srifty profile estimate` and `srifty profile calibrate`: predict profiles on GPUs nobody measured, and
refit the GPU model those predictions use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from srifty.cli.console import err, out, styled
from srifty.compute import (
    Profile,
    choose_source,
    estimate_profile,
    load_profile,
    measure_command,
    profile_filename,
    resolve_gpu,
)
from srifty.errors import ProfileError, SriftyError
from srifty.plan import paleo_profile

METHODS = ("calibrated", "roofline", "paleo")
SHARED_H200 = "../shared/data/reference/h200/h200_fp32.jsonl"
SHARED_PUBLIC = "../shared/data/reference/gpu_perf/throughput.csv"


def estimated_path(out_dir: Path, model: str, gpu: str, method: str) -> Path:
    """``<out>/<model>__<gpu>.estimated.json`` (``.roofline.json``, ``.paleo.json`` for the baselines):
    never a measured profile's name."""
    suffix = {"calibrated": "estimated", "roofline": "roofline"}.get(method, method)
    return out_dir / profile_filename(model, f"{gpu}.{suffix}")


def _estimate_one(
    method: str, profile: Profile, gpu: str, launch_floor_us: float, reason: str, calibration: Path | None, bf16: bool
) -> Profile:
    if method == "paleo":
        return paleo_profile(profile, gpu)
    if method == "roofline":
        return estimate_profile(profile, gpu, launch_floor_s=launch_floor_us * 1e-6, reason=reason)
    from srifty.compute import calibrated_profile, load_gpu_calibration

    fitted = load_gpu_calibration(calibration) if calibration is not None else None
    return calibrated_profile(profile, gpu, calibration=fitted, bf16_as_fp16=bf16, reason=reason)


def estimate(
    profiles: Annotated[list[Path], typer.Argument(help="Measured profile files of one model (one or more).")],
    gpu: Annotated[str, typer.Option("--gpu", help="Comma-separated catalog GPU names, e.g. T4,V100,A10G.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the estimated profiles.")] = Path("profiles"),
    method: Annotated[
        str, typer.Option(help="calibrated (the fitted GPU model), or a baseline: roofline, paleo.")
    ] = "calibrated",
    calibration: Annotated[
        Path | None, typer.Option(help="GPU calibration file (default: the bundled one; see `profile calibrate`).")
    ] = None,
    bf16_as_fp16: Annotated[
        bool, typer.Option("--bf16-as-fp16", help="On GPUs without BF16 (before Ampere), price bf16 ops as fp16.")
    ] = False,
    launch_floor_us: Annotated[
        float, typer.Option(help="roofline only: least time of one op on the GPU, microseconds.")
    ] = 5.0,
    batch: Annotated[int | None, typer.Option(help="Report latency at this batch (default: each max batch).")] = None,
) -> None:
    """Estimate PROFILES' model on GPUs without a measured profile; each estimate is marked as one.

    With several profiles, each GPU is estimated from the closest one (a GPU before a CPU, then the nearest
    roofline), and the table says which and why, and how far off such an estimate has been when checked
    against real GPUs (leave-one-model-out). Example: `srifty profile estimate profiles/resnet50__cpu.json
    --gpu T4,V100,A10G --out profiles/`.
    """
    if method not in METHODS:
        raise ProfileError(f"unknown --method '{method}'; use {', '.join(METHODS)}.")
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
    columns = ("GPU", "source", "why this source", "max batch", "batch", "iter ms", "samples/s", "expected error")
    for column in columns:
        table.add_column(
            column, justify="right" if column in ("max batch", "batch", "iter ms", "samples/s") else "left"
        )
    written: list[tuple[Path, Profile]] = []
    failures: list[str] = []
    for spec in specs:
        try:
            choice = choose_source(loaded, spec)
            if choice.measured_on_target and method != "paleo":
                table.add_row(spec.name, str(paths[id(choice.profile)]), "measured on this GPU: not estimated")
                continue
            result = _estimate_one(
                method, choice.profile, spec.name, launch_floor_us, choice.reason, calibration, bf16_as_fp16
            )
        except SriftyError as error:
            failures.append(f"{spec.name}: {error}")
            table.add_row(spec.name, "—", styled("red", f"not estimated: {error}"))
            continue
        at = min(batch, result.max_batch) if batch else result.max_batch
        iter_ms = float(result.predict_ms("iter", at))
        path = result.save(estimated_path(out_dir, result.model, spec.name, method))
        written.append((path, result))
        info = result.estimate
        expected = f"±{100 * info.expected_error:.0f}%" if info and info.expected_error is not None else "unknown"
        table.add_row(
            spec.name,
            f"{result.estimated_from} ({paths[id(choice.profile)]})",
            info.reason if info else "",
            f"{result.max_batch} ({result.max_batch_limited_by})",
            str(at),
            f"{iter_ms:,.2f}",
            f"{1000.0 * at / iter_ms:,.1f}" if iter_ms > 0 else "—",
            expected,
        )
    out.print(table)
    for path, result in written:
        where = f"on a VM with a {result.device.gpu} GPU"
        out.print(f"wrote {path} (an estimate; to measure it, run {where}: {measure_command(result)})", soft_wrap=True)
        if result.estimate and result.estimate.numerics:
            out.print(f"  {result.device.gpu}: {result.estimate.numerics}", soft_wrap=True)
    if failures:
        err.print(styled("bold red", "error:", " " + " ".join(failures)), soft_wrap=True)
        raise typer.Exit(2)


def calibrate_gpu_model(
    out_path: Annotated[Path, typer.Option("--out", help="Calibration file to write.")] = Path("gpu-calibration.json"),
    h200: Annotated[
        Path | None, typer.Option(help=f"Raw H200 curves (JSON lines), e.g. {SHARED_H200}; default: the bundled copy.")
    ] = None,
    public: Annotated[
        Path | None,
        typer.Option(help=f"Public training throughput CSV, e.g. {SHARED_PUBLIC}; default: the bundled copy."),
    ] = None,
) -> None:
    """Refit the GPU model's efficiencies and overheads to real GPU measurements, and cross-validate them
    leaving one model out (several minutes). Use the file with `srifty profile estimate --calibration`. The
    curves of srifty's own H200 profiles (7 models, bundled) are always fitted; `--h200` replaces the others.

    Example: `srifty profile calibrate --h200 ../shared/data/reference/h200/h200_fp32.jsonl --public
    ../shared/data/reference/gpu_perf/throughput.csv --out gpu-calibration.json`.
    """
    from srifty.compute import GpuCalibrationData, bundled_srifty_curves, read_h200_jsonl, read_public_csv
    from srifty.compute import calibrate_gpu_model as fit

    bundled = GpuCalibrationData.bundled()
    dataset = GpuCalibrationData(
        tuple(read_h200_jsonl(h200)) + bundled_srifty_curves() if h200 else bundled.curves,
        tuple(read_public_csv(public)) if public else bundled.public,
        {
            "h200": str(h200) if h200 else bundled.sources["h200"],
            "h200_srifty": bundled.sources["h200_srifty"],
            "public": str(public) if public else bundled.sources["public"],
        },
    )
    with out.status("fitting, then once per held-out model"):
        result = fit(dataset)
    result.save(out_path)
    e = result.errors
    table = Table(title="held-out errors (leave one model out), MAPE")
    table.add_column("figure")
    table.add_column("MAPE", justify="right")
    for phase, value in e.h200.items():
        table.add_row(f"H200 curves, CPU-sourced, {phase}", f"{value:.1f}%")
    table.add_row("public rows, CPU-sourced", f"{e.public:.1f}%")
    for name, value in result.gpu_sourced_mape.items():
        table.add_row(f"public rows, GPU-sourced from the H200 ({name})", f"{value:.1f}%")
    out.print(table)
    out.print(f"wrote {out_path} ({result.counts['cases']} cases, {result.counts['groups']} models)")
