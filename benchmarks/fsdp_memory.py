"""The per-GPU memory model of DDP, FSDP and HSDP against measured peaks, on this machine's CPU.

Each case trains a real model under ``torchrun`` (gloo on 127.0.0.1) with ``srifty.torch.fsdp.parallelize``
and measures every rank's peak memory in one iteration from the CPU allocator's own counter, as the torch
profiler reports each allocation and free (:mod:`benchmarks.fsdp_memory_worker`: the profiler runs from
before the model is built, so DDP's buckets and FSDP's buffers are counted). The prediction is
:func:`srifty.compute.sharding.peak_memory` from the model's profile, measured beforehand by ``srifty
profile`` in one process (no DDP, no sharding): its forward peaks, parameters and optimizer. The figure is the
error of the prediction against the highest rank's peak (ranks of one configuration differ by little).

Peak memory does not depend on the machine's load, so no CPU lock is needed: ``nice -n 19 python -m
benchmarks.fsdp_memory`` (16 min on the busy 2-core machine).
Writes ``benchmarks/results/fsdp_memory.json`` and the BENCHMARKS.md section "Sharded data parallelism:
memory model against measured peaks (CPU)"; ``--from-results`` re-renders the section only.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, machine_description, write_section
from srifty.artifacts import atomic_write_text

SECTION = "Sharded data parallelism: memory model against measured peaks (CPU)"
RESULTS = ROOT / "benchmarks" / "results" / "fsdp_memory.json"
PROFILES = ROOT / "benchmarks" / "results" / "fsdp_memory_profiles"
#: (zoo factory, profile arguments)
MODELS = {
    "tiny_decoder": ("--max-batch", "16"),
    "decoder": ("--max-batch", "8"),
}
#: (strategy, ranks, shard group, checkpointing)
LAYOUTS = [
    ("ddp", 2, 1, False),
    ("fsdp", 2, 2, False),
    ("fsdp", 4, 4, False),
    ("hsdp", 4, 2, False),
    ("fsdp", 2, 2, True),
]
BATCHES = (2, 8)


def profile(model: str) -> Path:
    """The model's profile (adam, every block's checkpointing measured too), measured once and kept."""
    path = PROFILES / f"{model}.json"
    if not path.is_file():
        PROFILES.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "srifty.cli.main", "profile", "--model", f"srifty.compute.zoo:{model}"]
        cmd += [*MODELS[model], "--optimizer", "adam", "--threads", "1", "--checkpointing", "--no-op-counts"]
        subprocess.run([*cmd, "--out", str(path)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return path


def measure(model: str, strategy: str, ranks: int, shard: int, checkpointing: bool, batch: int) -> list[dict]:
    """Every rank's peaks (bytes) of one configuration."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "GLOO_SOCKET_IFNAME": "lo",
        "FSDP_MEMORY_MODEL": model,
        "FSDP_MEMORY_BATCH": str(batch),
        "SRIFTY_PARALLELISM": strategy,
        "SRIFTY_SHARD_GROUP_SIZE": str(shard),
        "SRIFTY_ACTIVATION_CHECKPOINTING": "1" if checkpointing else "0",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks)]
    cmd += ["--master-addr", "127.0.0.1", "--master-port", str(port), "benchmarks/fsdp_memory_worker.py"]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith("MEMORY ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"{model} {strategy} x{ranks} failed: {done.stderr[-2000:]}")
    return json.loads(line.removeprefix("MEMORY "))


def predict(path: Path, strategy: str, shard: int, checkpointing: bool, batch: int) -> dict[str, Any]:
    from srifty.compute import load_profile
    from srifty.compute.sharding import MemoryOptions, forward_peak, memory_inputs, peak_memory, step_peak

    inputs = memory_inputs(load_profile(path))
    options = MemoryOptions(strategy, shard if strategy != "ddp" else 1, checkpointing, "tensor")  # type: ignore[arg-type]
    return {
        "predicted_bytes": peak_memory(inputs, options, batch).total_bytes,
        "predicted_forward_bytes": forward_peak(inputs, options, batch).total_bytes,
        "predicted_step_bytes": step_peak(inputs, options).total_bytes,
        "breakdown": peak_memory(inputs, options, batch).describe(),
    }


def run() -> dict[str, Any]:
    rows = []
    for model in MODELS:
        path = profile(model)
        for strategy, ranks, shard, checkpointing in LAYOUTS:
            for batch in BATCHES:
                ranks_peaks = measure(model, strategy, ranks, shard, checkpointing, batch)
                measured = max(max(r["forward_bytes"], r["step_bytes"]) for r in ranks_peaks)
                predicted = predict(path, strategy, shard, checkpointing, batch)
                row = {"model": model, "strategy": strategy, "ranks": ranks, "shard_group": shard,
                       "checkpointing": checkpointing, "local_batch": batch, "measured_bytes": measured,
                       "ranks_measured": ranks_peaks, **predicted}  # fmt: skip
                row["error"] = row["predicted_bytes"] / measured - 1.0
                rows.append(row)
                said = f"measured {measured / 2**20:.1f} MiB, predicted {row['predicted_bytes'] / 2**20:.1f} MiB"
                print(f"{model} {strategy} x{ranks} b{batch}: {said} ({100 * row['error']:+.1f} %)", flush=True)
    return {"machine": machine_description(), "rows": rows}


def render(results: dict[str, Any]) -> str:
    rows = results["rows"]
    errors = [abs(r["error"]) for r in rows]
    lines = [
        "Per-GPU peak memory predicted by srifty's memory model (`srifty.compute.sharding.peak_memory`, from each",
        "model's one-process CPU profile) against the peak measured on every rank of a real run (`torchrun`, gloo",
        "on 127.0.0.1, `srifty.torch.fsdp.parallelize`, AdamW; the CPU allocator's counter as the torch profiler",
        "reports it, from before the model is built; the highest rank). Goal: within 10 %.",
        "",
        "| model | strategy | ranks | shard group | checkpointing | local batch | measured MiB | predicted MiB "
        "| error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['strategy']} | {r['ranks']} | {r['shard_group']} | "
            f"{'yes' if r['checkpointing'] else 'no'} | {r['local_batch']} | {r['measured_bytes'] / 2**20:.1f} | "
            f"{r['predicted_bytes'] / 2**20:.1f} | {100 * r['error']:+.1f} % |"
        )
    lines += [
        "",
        f"Absolute error: median {100 * statistics.median(errors):.1f} %, largest {100 * max(errors):.1f} % over "
        f"{len(rows)} configurations ({sum(e <= 0.10 for e in errors)} within 10 %).",
        *_missed(rows),
        "",
        "Command: `nice -n 19 python -m benchmarks.fsdp_memory` (peak memory does not depend on the load: no CPU "
        "lock). Machine: " + results["machine"] + ".",
    ]
    return "\n".join(lines)


def _missed(rows: list[dict[str, Any]]) -> list[str]:
    """A line naming the configurations beyond the 10 % goal, if any."""
    missed = [r for r in rows if abs(r["error"]) > 0.10]
    if not missed:
        return []
    named = ", ".join(
        f"{r['model']} {r['strategy']}×{r['ranks']}{' checkpointed' if r['checkpointing'] else ''} batch "
        f"{r['local_batch']} ({100 * r['error']:+.1f} %)"
        for r in missed
    )
    return ["", f"Goal missed by: {named}."]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-results", action="store_true", help="re-render the section from saved results")
    args = parser.parse_args()
    if args.from_results:
        results = json.loads(RESULTS.read_text())
    else:
        results = run()
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(RESULTS, json.dumps(results, indent=1))
    write_section(SECTION, render(results))


if __name__ == "__main__":
    main()
