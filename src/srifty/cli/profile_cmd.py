"""`srifty profile`: measure a model, show profile files, estimate profiles on other GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from srifty.cli import count_cmd, estimate_cmd
from srifty.cli.console import err, out, styled
from srifty.cli.options import refuse_without
from srifty.compute import PHASES, Profile, load_profile, profile_filename
from srifty.errors import ProfileError
from srifty.units import BYTES_PER_GIB, BYTES_PER_MIB, parse_bytes

app = typer.Typer(
    help="Profile a PyTorch model's latency, memory and gradient timeline; show profile files; estimate others.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.command("estimate")(estimate_cmd.estimate)
app.command("calibrate")(estimate_cmd.calibrate_gpu_model)
app.command("count")(count_cmd.count)


def default_profile_path(model: str, device_label: str) -> Path:
    """``profiles/<model>__<device>.json`` with the model name made file-safe."""
    return Path("profiles") / profile_filename(model, device_label)


@app.callback()
def profile(
    ctx: typer.Context,
    model: Annotated[
        str | None,
        typer.Option(
            help="torchvision name, hf:<Hugging Face model id or config.json>, or package.module:function (found "
            "on PYTHONPATH or in the current folder)."
        ),
    ] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda.")] = "cpu",
    precision: Annotated[str, typer.Option(help="fp32, or bf16 or fp16 (autocast).")] = "fp32",
    max_probes: Annotated[int, typer.Option(help="Batch sizes measured for the latency model.")] = 4,
    out_path: Annotated[Path | None, typer.Option("--out", help="Profile file to write.")] = None,
    memory_limit: Annotated[str | None, typer.Option(help="CPU: peak memory allowed, e.g. 8GiB.")] = None,
    max_batch: Annotated[int | None, typer.Option(help="Never search beyond this batch (CPU default 64).")] = None,
    warmup: Annotated[int, typer.Option(help="Warm-up iterations discarded per batch size.")] = 2,
    iters: Annotated[int, typer.Option(help="Timed iterations kept per batch size, per round.")] = 5,
    rounds: Annotated[
        int,
        typer.Option(help="Passes over the probed batch sizes (each times them all again): spreads slow spells."),
    ] = 1,
    threads: Annotated[int | None, typer.Option(help="CPU threads (default: torch's choice).")] = None,
    seq_len: Annotated[int, typer.Option(help="Tokens per sample for hf: models.")] = 128,
    image_size: Annotated[int | None, typer.Option(help="Pixels per side for torchvision models.")] = None,
    bucket_cap_mb: Annotated[float | None, typer.Option(help="DDP bucket_cap_mb (default: DDP's own).")] = None,
    optimizer: Annotated[str, typer.Option(help="sgd or adam.")] = "sgd",
    seed: Annotated[int, typer.Option(help="Seed for weights and synthetic data.")] = 0,
    op_counts: Annotated[
        bool,
        typer.Option(
            "--op-counts/--no-op-counts",
            help="Record per-op FLOPs, bytes and times and the device's ceilings (needed to estimate other GPUs).",
        ),
    ] = True,
    op_iters: Annotated[int, typer.Option(help="Instrumented iterations per batch for the op counts.")] = 1,
    interference: Annotated[
        bool,
        typer.Option(
            "--interference/--no-interference",
            help=(
                "Measure how backward and the DDP buckets' allreduce slow each other (a loopback gloo peer; "
                "on a GPU gloo's host-staged exchange, not NCCL's)."
            ),
        ),
    ] = True,
    interference_reps: Annotated[int, typer.Option(help="Repetitions of the interference measurement.")] = 3,
    input_shape: Annotated[
        str | None,
        typer.Option(help="For a module:function returning a bare nn.Module: one sample's shape, e.g. 3x224x224."),
    ] = None,
    input_vocab: Annotated[
        int | None, typer.Option(help="With --input-shape: inputs are token ids below this, e.g. 30522.")
    ] = None,
    checkpointing: Annotated[
        bool,
        typer.Option(
            "--checkpointing/--no-checkpointing",
            help="Also measure memory and backward time with every block activation-checkpointed (for FSDP plans); "
            "memory also at up to 8x the largest probed batch where the smaller ones peak at the end of backward.",
        ),
    ] = False,
) -> None:
    """Measure MODEL on a device and write a profile file (`srifty profile --model resnet18`)."""
    if ctx.invoked_subcommand is not None:
        return
    if model is None:
        raise ProfileError("name the model to profile with --model, e.g. `srifty profile --model resnet18`.")
    from srifty.compute import parse_model_name
    from srifty.compute.measure import profile_model, profile_options
    from srifty.compute.measure.workloads import parse_sample_shape

    kind = parse_model_name(model).kind
    if kind != "hf":
        refuse_without(ctx, ["seq_len"], "an hf: model", "it sets the tokens per sample of a Hugging Face model")
    if kind != "torchvision":
        refuse_without(ctx, ["image_size"], "a torchvision model", "it sets the pixels per side of one")
    if device != "cpu":
        refuse_without(ctx, ["memory_limit"], "--device cpu", "on a GPU a batch fits unless CUDA runs out of memory")
    shape = None if input_shape is None else parse_sample_shape(input_shape)
    if input_vocab is not None and (shape is None or input_vocab < 1):
        raise ProfileError(f"--input-vocab {input_vocab} needs --input-shape and a vocabulary of at least 1 token.")
    if max_probes < 2:
        raise ProfileError(f"--max-probes must be at least 2, got {max_probes}")
    if op_iters < 1:
        raise ProfileError(f"--op-iters must be at least 1, got {op_iters}")
    try:
        limit = parse_bytes(memory_limit) if memory_limit else None
    except ValueError as error:
        raise ProfileError(f"--memory-limit: {error}") from None
    options = profile_options(
        device=device,
        precision=precision,
        max_probes=max_probes,
        warmup_iters=warmup,
        timed_iters=iters,
        rounds=rounds,
        memory_limit_bytes=limit,
        max_batch_cap=max_batch,
        bucket_cap_mb=bucket_cap_mb,
        threads=threads,
        optimizer=optimizer,
        seq_len=seq_len,
        image_size=image_size,
        seed=seed,
        count_ops=op_counts,
        op_iters=op_iters,
        input_shape=shape,
        input_vocab=input_vocab,
        interference=interference,
        interference_reps=interference_reps,
        checkpointing=checkpointing,
    )
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        result = profile_model(model, options, progress)
    path = out_path or default_profile_path(result.model, result.device.label)
    result.save(path)
    show_profile(result)
    noisy = result.noisy_samples()
    if noisy is not None:
        err.print(styled("yellow", "warning:", f" {noisy}"), soft_wrap=True)
    out.print(f"wrote {path}")


@app.command("show")
def show(path: Annotated[Path, typer.Argument(help="A profile file.")]) -> None:
    """Print a profile's summary, measurements and fitted latency curve."""
    show_profile(load_profile(path))


def _work_summary(p: Profile) -> str:
    if p.work is None:
        return "— (not recorded; cross-GPU estimates need them)"
    b = p.work.batches[1]
    gflop = [p.work.total_flops(ph, b) / b / 1e9 for ph in ("fw", "bw", "step")]
    mib = [p.work.total_bytes(ph, b) / b / BYTES_PER_MIB for ph in ("fw", "bw")]
    return (
        f"{len(p.work.records)} op groups at batches {p.work.batches}; per sample fw {gflop[0]:.2f} / bw "
        f"{gflop[1]:.2f} GFLOP, fw {mib[0]:,.0f} / bw {mib[1]:,.0f} MiB moved"
    )


def _ceilings(p: Profile) -> str:
    d = p.device
    if not (d.peak_flops_per_s and d.mem_bw_bytes_per_s):
        return "— (not recorded)"
    half = f", 16-bit {d.peak_tensor16_flops_per_s / 1e12:.2f} TFLOP/s" if d.peak_tensor16_flops_per_s else ""
    return (
        f"fp32 {d.peak_flops_per_s / 1e12:.3f} TFLOP/s{half}, {d.mem_bw_bytes_per_s / 1e9:,.1f} GB/s ({d.peaks_source})"
    )


def _spread_text(p: Profile) -> str:
    if not p.is_estimate:
        return f"measured CV × {p.spread_scale:.2f}"
    if p.estimate is not None and p.estimate.method == "calibrated":
        return "per iteration: the median CV of the H200 calibration curves; estimation error: see expected error"
    return f"measured CV × {p.spread_scale:.2f} (estimate: source's spread, widened)"


def _interference_text(p: Profile) -> str:
    """The measured interference in one line, or why there is none (the simulator's fallback)."""
    if p.interference is None:
        return "not measured: the simulator assumes perfect overlap, max(t_bwd, t_pe)"
    return f"{p.interference.summary()}; peer {p.interference.peer}"


def show_profile(p: Profile) -> None:
    """Rich tables for one profile."""
    kind: Text | str
    if p.estimate is not None:
        kind = styled(
            "bold", "ESTIMATE", f" ({p.estimate.method}) from {p.estimated_from}, not measured: {p.estimate.reason}"
        )
    else:
        kind = f"estimated from {p.estimated_from}" if p.is_estimate else f"measured ({p.timing_method})"
    summary = Table(title=f"profile: {p.model} on {p.device.label}", show_header=False)
    summary.add_column("field")
    summary.add_column("value")
    knee = p.latency["iter"].knee_batch
    base_gib, per_sample_mib = p.memory.base_bytes / BYTES_PER_GIB, p.memory.per_sample_bytes / BYTES_PER_MIB
    rows = [
        ("model", f"{p.model} ({p.model_kind}; {p.input_description})"),
        ("parameters", f"{p.n_params:,} ({p.param_bytes / BYTES_PER_MIB:,.1f} MiB of gradients)"),
        ("device", f"{p.device.name} [{p.device.kind}, {p.device.threads} threads]"),
        ("kind", kind),
        ("precision / optimizer", f"{p.precision} / {p.optimizer}"),
        ("max batch", f"{p.max_batch} (limited by {p.max_batch_limited_by})"),
        ("knee batch", "—" if knee is None else f"{knee:.1f}"),
        ("memory model", f"{base_gib:.3f} GiB + {per_sample_mib:.2f} MiB × batch"),
        ("DDP buckets", f"{len(p.buckets)} (bucket_cap_mb={p.bucket_cap_mb or 'default'})"),
        ("op counts", _work_summary(p)),
        ("roofline ceilings", _ceilings(p)),
        ("spread", _spread_text(p)),
        ("numeric settings", p.numeric_settings.describe()),
        ("interference", _interference_text(p)),
        ("torch", p.device.torch_version),
    ]
    if p.estimate is not None and p.estimate.expected_error is not None:
        rows.append(("expected error", f"±{100 * p.estimate.expected_error:.0f}% (held-out calibration error)"))
    if p.estimate is not None and p.estimate.numerics:
        rows.append(("units on the GPU", p.estimate.numerics))
    if p.estimate is not None:
        rows.append(("assumptions", p.estimate.assumptions))
    for field, value in rows:
        summary.add_row(field, value)
    out.print(summary)
    if p.samples:
        measured = Table(title=f"measured: {p.timed_iters} timed iterations per batch (mean ± std, ms)")
        measured.add_column("batch", justify="right")
        for phase in PHASES:
            measured.add_column(phase, justify="right")
        measured.add_column("peak MiB", justify="right")
        for s in p.samples:
            cells = [f"{s.mean_ms(ph):,.2f} ± {s.std_ms(ph):,.2f}" for ph in PHASES]
            peak = "—" if s.peak_bytes is None else f"{s.peak_bytes / BYTES_PER_MIB:,.1f}"
            measured.add_row(str(s.batch), *cells, peak)
        out.print(measured)
    curve = Table(title="ESTIMATED latency model (ms)" if p.is_estimate else "fitted latency model (ms)")
    curve.add_column("batch", justify="right")
    for phase in PHASES:
        curve.add_column(phase, justify="right")
    curve.add_column("samples/s", justify="right")
    batches = sorted({2**k for k in range(int(np.log2(max(p.max_batch, 1))) + 1)} | {p.max_batch})
    for b in batches:
        preds = [float(p.predict_ms(ph, b)) for ph in PHASES]
        curve.add_row(str(b), *[f"{v:,.2f}" for v in preds], f"{1000.0 * b / preds[-1]:,.1f}")
    out.print(curve)
