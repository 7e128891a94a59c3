"""`srifty profile count`: profile a model too large to run here by counting it on PyTorch's meta device, and
estimate it on GPUs with the calibrated GPU model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from srifty.cli.console import err, out, styled
from srifty.errors import ProfileError, SriftyError


def count(
    model: Annotated[str, typer.Option(help="hf:<config> (e.g. hf:llama-8b) or package.module:function.")],
    gpu: Annotated[
        str,
        typer.Option("--gpu", help="Comma-separated catalog GPU names, or 'all' (every one the precision runs on)."),
    ] = "all",
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the estimated profiles.")] = Path("profiles"),
    seq_len: Annotated[int, typer.Option(help="Tokens per sample.")] = 2048,
    precision: Annotated[str, typer.Option(help="bf16 or fp16 (mixed precision), or fp32.")] = "bf16",
    optimizer: Annotated[str, typer.Option(help="adam (AdamW) or sgd.")] = "adam",
    checkpointing: Annotated[
        bool, typer.Option("--checkpointing/--no-checkpointing", help="Also count with every block checkpointed.")
    ] = True,
) -> None:
    """Count MODEL's training iteration on meta tensors (op counts, parameters, gradient timeline, memory;
    nothing is run or timed) and write its calibrated estimate on each GPU, marked as an estimate.

    For models that do not fit this machine: `srifty profile count --model hf:llama-8b --seq-len 2048
    --out profiles/`. Every number of time in the files is the calibrated GPU model's prediction.
    """
    from srifty.catalog import load_catalog
    from srifty.compute import PrecisionError, calibrated_profile, profile_filename
    from srifty.compute.measure.counted import count_profile

    if seq_len < 1:
        raise ProfileError(f"--seq-len must be at least 1, got {seq_len}")
    catalog = load_catalog()
    names = sorted(catalog.gpu_specs) if gpu.strip() == "all" else [g.strip() for g in gpu.split(",") if g.strip()]
    specs = [catalog.gpu_spec(name) for name in names]  # unknown names fail here, before any work
    err.print(f"counting {model} at {seq_len} tokens on meta tensors …")
    source = count_profile(model, seq_len, precision, optimizer, checkpointing=checkpointing)
    out_dir.mkdir(parents=True, exist_ok=True)
    reason = f"op counts of the whole model at {seq_len} tokens, counted on PyTorch's meta device (nothing run)"
    for spec in specs:
        try:
            estimate = calibrated_profile(source, spec, catalog=catalog, reason=reason)
        except (ProfileError, PrecisionError, SriftyError) as error:
            out.print(styled("yellow", f"{spec.name}: skipped"), f" ({error})")
            continue
        path = estimate.save(out_dir / profile_filename(estimate.model, spec.name))
        ms = float(estimate.predict_ms("iter", 1))
        out.print(f"{spec.name}: {ms:,.1f} ms per iteration at batch 1 (estimate) → {path}")
