"""Accuracy of the compute latency model: 4 adaptive probes vs a full sweep, against an APM-style line.

For each model, every power-of-two batch up to the cap is measured (warm-up discarded, ``--iters`` timed
iterations). Timed iterations are split in two interleaved halves: the *fit* half supplies the values the
probes see, the *truth* half is what predictions are scored against, so measurement noise counts against
the model. ``fit_latency_curve`` picks 4 probes; srifty's piecewise model and a single least-squares line
through the same 4 probes (APM, after Nexus) are scored by MAPE at the batch sizes that were not probed.

Run: ``python -m benchmarks.compute_accuracy`` (about 10 minutes on 2 cores). Writes BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import ROOT, machine_description, write_section
from srifty.compute import fit_latency_curve, fit_linear, fit_piecewise_linear
from srifty.compute.latency import default_candidates
from srifty.compute.measure.profiler import ProfileOptions, _Trainer
from srifty.compute.measure.workloads import build_workload

# (model, largest batch swept, seq_len) -- caps keep a sweep within a few minutes on 2 CPU cores.
MODELS: list[tuple[str, int, int]] = [
    ("resnet18", 64, 0),
    ("resnet50", 32, 0),
    ("mobilenet_v2", 64, 0),
    ("shufflenet_v2_x1_0", 64, 0),
    ("hf:bert-small", 64, 128),
    ("hf:gpt2-small", 32, 128),
    ("srifty.compute.zoo:mlp", 256, 0),
]
PHASES = ("fw", "bw", "iter")


def robust_mean(values: np.ndarray) -> float:
    median = float(np.median(values))
    mad = 1.4826 * float(np.median(np.abs(values - median)))
    kept = values if mad == 0 else values[np.abs(values - median) <= 3 * mad]
    return float(np.mean(kept))


def sweep(name: str, cap: int, seq_len: int, warmup: int, iters: int) -> dict[int, dict[str, np.ndarray]]:
    """Every power-of-two batch up to ``cap``: raw (fw, bw, iter) ms per timed iteration."""
    workload = build_workload(name, seq_len=seq_len or 128, seed=0)
    trainer = _Trainer(workload, ProfileOptions(device="cpu"))
    trainer.iteration(1)
    out: dict[int, dict[str, np.ndarray]] = {}
    for batch in default_candidates(cap):
        rows = [trainer.iteration(batch) for _ in range(warmup + iters)][warmup:]
        arr = np.asarray(rows)
        out[batch] = {"fw": arr[:, 0], "bw": arr[:, 1], "iter": arr[:, 3]}
        print(f"  {name} batch {batch}: iter {np.median(arr[:, 3]):.1f} ms", flush=True)
    return out


def mape(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - truth) / truth) * 100.0)


def score(raw: dict[int, dict[str, np.ndarray]]) -> dict[str, float]:
    batches = sorted(raw)
    fit_half = {b: {ph: robust_mean(raw[b][ph][0::2]) for ph in PHASES} for b in batches}
    truth_half = {b: {ph: robust_mean(raw[b][ph][1::2]) for ph in PHASES} for b in batches}
    model_iter = fit_latency_curve(lambda b: fit_half[b]["iter"], max(batches), n_probes=4)
    probes = sorted(model_iter.probe_batches)
    held_out = [b for b in batches if b not in probes]
    result: dict[str, float] = {"n_probes": len(probes), "n_scored": len(held_out)}
    for ph in PHASES:
        ys = [fit_half[b][ph] for b in probes]
        ours = model_iter if ph == "iter" else fit_piecewise_linear(probes, ys)
        line = fit_linear(probes, ys)
        truth = np.array([truth_half[b][ph] for b in held_out])
        result[f"srifty_{ph}"] = mape(ours.predict_ms(held_out), truth)
        result[f"apm_{ph}"] = mape(line.predict_ms(held_out), truth)
    result["probes"] = probes  # type: ignore[assignment]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iters", type=int, default=8, help="timed iterations per batch (split in halves)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--raw", type=Path, default=ROOT / "benchmarks" / "results" / "compute_sweeps.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    started = time.time()
    rows = []
    raw_all = {}
    for name, cap, seq_len in MODELS:
        print(f"sweeping {name} up to batch {cap}", flush=True)
        raw = sweep(name, cap, seq_len, args.warmup, args.iters)
        raw_all[name] = {str(b): {ph: v.tolist() for ph, v in d.items()} for b, d in raw.items()}
        rows.append((name, cap, score(raw)))
    args.raw.parent.mkdir(parents=True, exist_ok=True)
    args.raw.write_text(json.dumps(raw_all, indent=1))
    lines = [
        "| model | batches swept | probes | srifty fwd | srifty bwd | srifty iter | APM fwd | APM bwd | APM iter |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = [f"{who}_{ph}" for who in ("srifty", "apm") for ph in PHASES]
    for name, cap, r in rows:
        cells = " | ".join(f"{r[k]:.1f}%" for k in keys)
        lines.append(f"| {name} | 1–{cap} | {', '.join(map(str, r['probes']))} | {cells} |")
    mean = {k: float(np.mean([r[k] for _, _, r in rows])) for k in keys}
    ours = " | ".join(f"**{mean[k]:.1f}%**" for k in keys[:3])
    theirs = " | ".join(f"{mean[k]:.1f}%" for k in keys[3:])
    lines.append(f"| **mean** | | | {ours} | {theirs} |")
    lines.append("| paper (GPU) | | 4 | 6.4% | 5.9% | 4.5% | 12.5% | 9.4% | 8.5% |")
    body = "\n".join(
        [
            "MAPE of predicted forward, backward and iteration latency at the batch sizes that were *not* probed,",
            "after fitting from 4 probes chosen by `srifty.compute.fit_latency_curve`. APM is one least-squares",
            "line through the same 4 probes. Real PyTorch training iterations on this machine's CPU (fp32, SGD with",
            "momentum, synthetic inputs at native size: 224×224 images, 128 tokens). Probes and truth come from",
            f"interleaved halves of {args.iters} timed iterations per batch, so noise counts against both models.",
            "",
            *lines,
            "",
            f"Command: `python -m benchmarks.compute_accuracy --iters {args.iters} --threads {args.threads}` "
            f"({(time.time() - started) / 60:.0f} min). Machine: {machine_description()}.",
            "Raw sweeps: `benchmarks/results/compute_sweeps.json`. No GPU was available to this project's",
            "sessions, so the paper's GPU setting is not reproduced here; CPU curves have little latency-bound",
            "region, which favours the single line more than GPU curves would.",
        ]
    )
    write_section("Compute latency model accuracy", body)
    print(body)


if __name__ == "__main__":
    main()
