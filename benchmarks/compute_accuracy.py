"""Accuracy of the compute latency model: 4 adaptive probes vs a full sweep, against an APM-style line.

For each model, every power-of-two batch is measured (warm-up discarded, several timed iterations). Timed
iterations are split in two interleaved halves: the *fit* half supplies the values the probes see, the
*truth* half is what predictions are scored against, so measurement noise counts against the model.
``fit_latency_curve`` picks 4 probes; srifty's piecewise model and a single least-squares line through the
same 4 probes (APM, after Nexus) are scored by MAPE at the batch sizes that were not probed.

Two sets of curves:

* **CPU**: real PyTorch training iterations on this machine's CPU, swept by this script (about 13 minutes
  on 2 cores) or, with ``--from-raw``, re-scored from the sweeps it saved before
  (``benchmarks/results/compute_sweeps.json``) without measuring again;
* **H200**: the real GPU curves of ``reference/h200/h200_fp32.jsonl`` (8 models, batch 1-1024, measured by
  others on an H200; ``--h200``), fitted as srifty fits a GPU (``flat_floor``: a latency-bound floor).

``--before REV`` also scores the latency module as it was at git revision ``REV`` (loaded with
``git show``), for the before/after columns.

Run: ``python -m benchmarks.compute_accuracy --from-raw --before a019ad7`` (seconds). Writes BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from benchmarks import probe_rules
from benchmarks.common import ROOT, machine_description, write_section
from srifty.compute import latency as current_latency

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
RAW = ROOT / "benchmarks" / "results" / "compute_sweeps.json"
H200 = Path("/work/shared/data/reference/h200/h200_fp32.jsonl")
Raw = dict[int, dict[str, np.ndarray]]


def robust_mean(values: np.ndarray) -> float:
    median = float(np.median(values))
    mad = 1.4826 * float(np.median(np.abs(values - median)))
    kept = values if mad == 0 else values[np.abs(values - median) <= 3 * mad]
    return float(np.mean(kept))


def sweep(name: str, cap: int, seq_len: int, warmup: int, iters: int) -> Raw:
    """Every power-of-two batch up to ``cap``: raw (fw, bw, iter) ms per timed iteration (needs torch)."""
    from srifty.compute.measure.profiler import ProfileOptions, _Trainer
    from srifty.compute.measure.workloads import build_workload

    workload = build_workload(name, seq_len=seq_len or 128, seed=0)
    trainer = _Trainer(workload, ProfileOptions(device="cpu"))
    trainer.iteration(1)
    out: Raw = {}
    for batch in current_latency.default_candidates(cap):
        rows = [trainer.iteration(batch) for _ in range(warmup + iters)][warmup:]
        arr = np.asarray(rows)
        out[batch] = {"fw": arr[:, 0], "bw": arr[:, 1], "iter": arr[:, 3]}
        print(f"  {name} batch {batch}: iter {np.median(arr[:, 3]):.1f} ms", flush=True)
    return out


def mape(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(np.abs(pred - truth) / truth) * 100.0)


def halves(raw: Raw) -> tuple[dict[int, dict[str, float]], dict[int, dict[str, float]]]:
    """Per batch and phase, the robust mean of the even timed iterations (what probes see) and of the odd
    ones (the truth)."""
    batches = sorted(raw)
    fit_half = {b: {ph: robust_mean(raw[b][ph][0::2]) for ph in PHASES} for b in batches}
    truth_half = {b: {ph: robust_mean(raw[b][ph][1::2]) for ph in PHASES} for b in batches}
    return fit_half, truth_half


def score(raw: Raw, flat_floor: bool = False, lat: Any = current_latency) -> dict[str, Any]:
    """MAPE of srifty (and of APM's line) per phase at unprobed batches; ``lat`` is the latency module."""
    batches = sorted(raw)
    fit_half, truth_half = halves(raw)
    kwargs = {"flat_floor": flat_floor} if "flat_floor" in lat.fit_latency_curve.__code__.co_varnames else {}
    model_iter = lat.fit_latency_curve(lambda b: fit_half[b]["iter"], max(batches), n_probes=4, **kwargs)
    probes = sorted(model_iter.probe_batches)
    held_out = [b for b in batches if b not in probes]
    result: dict[str, Any] = {"n_probes": len(probes), "n_scored": len(held_out), "probes": probes}
    phase_fit = getattr(lat, "fit_phase_model", None)
    for ph in PHASES:
        ys = [fit_half[b][ph] for b in probes]
        if ph == "iter":
            ours = model_iter
        elif phase_fit is not None:
            ours = phase_fit(probes, ys, **kwargs)
        else:
            ours = lat.fit_piecewise_linear(probes, ys, **kwargs)
        line = lat.fit_linear(probes, ys)
        truth = np.array([truth_half[b][ph] for b in held_out])
        result[f"srifty_{ph}"] = mape(ours.predict_ms(held_out), truth)
        result[f"apm_{ph}"] = mape(line.predict_ms(held_out), truth)
    return result


def latency_at(revision: str) -> ModuleType:
    """``srifty/compute/latency.py`` as it was at git ``revision``, loaded as a module."""
    text = subprocess.run(
        ["git", "show", f"{revision}:src/srifty/compute/latency.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="srifty-latency-"))
    path = folder / f"latency_{revision}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def load_cpu_raw(path: Path) -> dict[str, Raw]:
    data = json.loads(path.read_text())
    return {m: {int(b): {ph: np.asarray(v) for ph, v in d.items()} for b, d in per.items()} for m, per in data.items()}


def load_h200_raw(path: Path) -> dict[str, Raw]:
    out: dict[str, Raw] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line) if line.strip() else {}
        if rec.get("kind") == "latency":
            out.setdefault(rec["model"], {})[int(rec["batch"])] = {
                ph: np.asarray(rec[f"{ph}_ms"], dtype=float) for ph in PHASES
            }
    return out


KEYS = [f"{who}_{ph}" for who in ("srifty", "apm") for ph in PHASES]


def table(rows: list[tuple[str, Raw, dict[str, Any], dict[str, Any] | None]], paper: bool) -> list[str]:
    """Markdown rows: per model, srifty (before → after where a before exists) and APM."""
    before_cols = " | before fwd | before bwd | before iter" if rows and rows[0][3] is not None else ""
    scored = "srifty fwd | srifty bwd | srifty iter | APM fwd | APM bwd | APM iter"
    head = f"| model | batches | probes{before_cols} | {scored} |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, raw, r, before in rows:
        cells = [f"{r[k]:.1f}%" for k in KEYS]
        prior = "".join(f" | {before[f'srifty_{ph}']:.1f}%" for ph in PHASES) if before is not None else ""
        span = f"{min(raw)}–{max(raw)}"
        lines.append(f"| {name} | {span} | {', '.join(map(str, r['probes']))}{prior} | " + " | ".join(cells) + " |")
    mean = {k: float(np.mean([r[k] for _, _, r, _ in rows])) for k in KEYS}
    prior = ""
    if rows and rows[0][3] is not None:
        prior = "".join(
            f" | {np.mean([b[f'srifty_{ph}'] for _, _, _, b in rows if b is not None]):.1f}%" for ph in PHASES
        )
    ours = " | ".join(f"**{mean[k]:.1f}%**" for k in KEYS[:3])
    theirs = " | ".join(f"{mean[k]:.1f}%" for k in KEYS[3:])
    lines.append(f"| **mean** | | {prior} | {ours} | {theirs} |".replace("|  |", "| |", 1))
    if paper:
        blank = " | | |" if prior else ""
        lines.append(f"| paper (GPU) | | 4{blank} | 6.4% | 5.9% | 4.5% | 12.5% | 9.4% | 8.5% |")
    return lines


def lomo_table(curves: dict[str, Raw], paper: bool) -> tuple[list[str], probe_rules.Rule]:
    """Leave-one-model-out choice among :mod:`benchmarks.probe_rules`' 36 rules: per model, the rule chosen on
    the others and its errors on it; and the rule chosen on all of them."""
    scores = {m: probe_rules.score_rules(*halves(raw)) for m, raw in curves.items()}
    held = probe_rules.leave_one_model_out(scores)
    lines = ["| model held out | rule chosen on the others (placement; segments) | fwd | bwd | iter |",
             "|---|---|---|---|---|"]  # fmt: skip
    for model, (rule, errors) in held.items():
        lines.append(f"| {model} | {rule[0]}; {rule[1]} | " + " | ".join(f"{e:.1f}%" for e in errors) + " |")
    mean = np.mean([errors for _, errors in held.values()], axis=0)
    lines.append("| **mean (leave one model out)** | | " + " | ".join(f"**{e:.1f}%**" for e in mean) + " |")
    if paper:
        lines.append("| paper (GPU) | | 6.4% | 5.9% | 4.5% |")
    picks = {rule for rule, _ in held.values()}
    everything = probe_rules.chosen(scores, list(scores))
    lines += ["", f"Distinct rules chosen over the {len(held)} folds: {len(picks)}. Chosen on all {len(held)} models: "
              f"{everything[0]}; {everything[1]}."]  # fmt: skip
    return lines, everything


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iters", type=int, default=8, help="timed iterations per batch (split in halves)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--raw", type=Path, default=RAW, help="CPU sweeps: written after measuring, read with --from-raw"
    )
    parser.add_argument("--from-raw", action="store_true", help="re-score the saved CPU sweeps, measure nothing")
    parser.add_argument("--h200", type=Path, default=H200, help="the real H200 curves (JSON lines)")
    parser.add_argument("--before", help="git revision whose latency module gives the 'before' columns")
    args = parser.parse_args()
    started = time.time()
    if args.from_raw:
        cpu_raw = load_cpu_raw(args.raw)
    else:
        import torch

        torch.set_num_threads(args.threads)
        cpu_raw = {}
        for name, cap, seq_len in MODELS:
            print(f"sweeping {name} up to batch {cap}", flush=True)
            cpu_raw[name] = sweep(name, cap, seq_len, args.warmup, args.iters)
        serial = {
            m: {str(b): {ph: v.tolist() for ph, v in d.items()} for b, d in r.items()} for m, r in cpu_raw.items()
        }
        args.raw.parent.mkdir(parents=True, exist_ok=True)
        args.raw.write_text(json.dumps(serial, indent=1))
    old = latency_at(args.before) if args.before else None
    cpu_rows = [(m, r, score(r), score(r, lat=old) if old else None) for m, r in cpu_raw.items()]
    gpu_raw = load_h200_raw(args.h200) if args.h200.is_file() else {}
    gpu_rows = [
        (m, r, score(r, flat_floor=True), score(r, flat_floor=True, lat=old) if old else None)
        for m, r in gpu_raw.items()
    ]
    gpu_lomo, gpu_rule = lomo_table(gpu_raw, paper=True) if gpu_raw else ([], ("", ""))
    cpu_lomo, _ = lomo_table(cpu_raw, paper=False)
    measured = "re-scored from the saved sweeps (not measured again)" if args.from_raw else "measured now"
    command = "python -m benchmarks.compute_accuracy" + (" --from-raw" if args.from_raw else f" --iters {args.iters}")
    command += f" --before {args.before}" if args.before else ""
    before_note = (
        f"*Before* is `fit_latency_curve` as of commit `{args.before}` (on a GPU: the two largest, the smallest "
        "and the candidate nearest the estimated knee, piecewise linear with a flat floor), on the same probes' "
        "data; *after* (srifty) is this commit's: on a GPU, probes spread evenly in log batch and a smooth "
        "maximum of a floor and a line (`srifty.compute.latency.fit_floor_line`), the rule chosen by the "
        "leave-one-model-out cross-validation below; on a CPU, unchanged."
        if args.before
        else ""
    )
    body = [
        "MAPE of predicted forward, backward and iteration latency at the batch sizes that were *not* probed,",
        "after fitting from 4 probes chosen by `srifty.compute.fit_latency_curve`. APM is one least-squares",
        "line through the same 4 probes. Probes and truth come from interleaved halves of the timed",
        "iterations per batch, so noise counts against both models.",
        before_note,
        "",
        "**H200 (real GPU curves)**, `reference/h200/h200_fp32.jsonl`: 8 models, batch 1–1024, measured by others",
        "on one H200 (fp32, cuDNN TF32), 5–20 timed iterations per batch; fitted as srifty fits a GPU.",
        "",
        *(table(gpu_rows, paper=True) if gpu_rows else ["(H200 curves not found; pass --h200)"]),
        "",
        "**How the GPU rule was chosen: leave one model out** (issue 27). 36 candidate rules, fixed before scoring",
        "(`benchmarks/probe_rules.py`: six probe placements by six segment models). For each H200 model, the rule",
        "with the least mean error on the *other seven* is chosen and scored on it; the mean over the eight is the",
        "error to expect on a model nobody scored. srifty ships the rule chosen on all eight"
        + (f" ({gpu_rule[0]}; {gpu_rule[1]})." if gpu_raw else "."),
        "",
        *gpu_lomo,
        "",
        f"**CPU** (this machine; fp32, SGD with momentum, synthetic inputs at native size), {measured}:",
        "",
        *table(cpu_rows, paper=False),
        "",
        "Leave one model out over the same 36 rules on the CPU sweeps (for comparison; srifty keeps its CPU rule,",
        "the adaptive placement with piecewise-linear segments, which was chosen on all of these curves before, so",
        "its figures above are in-sample):",
        "",
        *cpu_lomo,
        "",
        f"Command: `{command}` ({time.time() - started:.0f} s). Machine: {machine_description()}.",
        f"Raw CPU sweeps: `{RAW.relative_to(ROOT).as_posix()}` (measured with `python -m benchmarks.compute_accuracy",
        "--iters 8 --threads 2`, 13 min, at commit 8f2fea8).",
        "",
        "Why the H200 forward figure stays above the paper's 6.4%: in the latency-bound region the H200's",
        "forward time jumps between batch sizes by far more than its iteration-to-iteration noise (1–2%):",
        "inception_v3's forward takes 21.8 ms at batches 1–4 and 14.3 ms at 8–32, resnet50's 6.1 ms at batch 2",
        "and 8.8 ms at 1 (host-bound time moving between forward and backward as the pipeline fills). Four",
        "probes see one of those levels; a least-squares floor-plus-line fit through *all* 11 batches averages",
        "them (about 5.5/5.7/4.5% per the issue). The iteration, where the shifts cancel, is the steadier curve.",
    ]
    write_section("Compute latency model accuracy", "\n".join(line for line in body if line is not None))
    print("\n".join(body))


if __name__ == "__main__":
    main()
