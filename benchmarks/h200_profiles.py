"""srifty's own profiles measured on a real GPU (an NVIDIA H200), and what srifty said about that GPU before.

Two parts:

``python -m benchmarks.h200_profiles measure --out DIR`` runs on a machine with the GPU (this project borrows
one for minutes at a time): ``srifty profile --device cuda`` on each model in :data:`MODELS`, in that
order, one process each, until ``--budget-s`` is spent, with the profiler's defaults except ``--max-batch``
(1024, where ``shared/data/reference/h200`` stopped too). Each profile measures its interference (gloo's
host-staged exchange on a GPU; see :mod:`srifty.compute.measure.interference`) unless a first small
profile's measurement failed. Logs, versions and ``nvidia-smi`` go beside the profiles.

``python -m benchmarks.h200_profiles report`` (here, no GPU) reads the profiles committed under
``benchmarks/results/h200_profiles/`` and writes the BENCHMARKS.md section: for each model, the
iteration latency srifty's H200 estimate gave before the GPU was measured (``srifty profile estimate`` from the
bundled CPU profile, or ``srifty profile count`` from op counts on the meta device where none is bundled,
both with the bundled calibration) against the profile measured; which of the models the calibration was
fitted on (those are not held out); the profiler's 4-probe latency fit against the dense public H200 curve
where the model has one; and the interference factors measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from srifty.artifacts import atomic_write_text

#: (model, extra profile options), in the order they are measured: the models with a released H200 curve,
#: and models the GPU calibration never saw, alternating, so a budget cut keeps both kinds.
MODELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("resnet50", ()),
    ("hf:gpt2-small", ()),
    ("densenet121", ()),
    ("hf:bert-small", ()),
    ("vgg16", ()),
    ("efficientnet_b0", ()),
    ("convnext_tiny", ()),
    ("mobilenet_v2", ()),
    ("resnet34", ()),
    ("vit_b_16", ()),
    ("srifty.compute.zoo:dlrm", ()),
    ("resnet18", ()),
)
MAX_BATCH = 1024


def file_stem(model: str) -> str:
    """A profile file's stem for ``model`` (``hf:gpt2-small`` -> ``hf-gpt2-small__h200``)."""
    from srifty.compute.bundled import profile_filename

    return profile_filename(model, "h200").removesuffix(".json")


def _run(args: list[str], log: Path, timeout_s: float) -> tuple[int, float]:
    """Run ``args`` with output to ``log``; ``(exit status, seconds)`` (124 when it ran out of time)."""
    start = time.monotonic()
    with log.open("w") as out:
        try:
            proc = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            status = 124
    return status, time.monotonic() - start


def _srifty(*args: str) -> list[str]:
    return [sys.executable, "-c", "from srifty.cli.main import run; run()", "profile", *args]


def measure(out: Path, budget_s: float, per_model_s: float, device: str, max_batch: int) -> None:
    """Profile :data:`MODELS` on ``device`` into ``out`` until ``budget_s`` is spent (see the module docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    started = time.monotonic()
    env_lines = []
    for cmd in (["nvidia-smi"], [sys.executable, "-c", "import torch,sys;print(sys.version);print(torch.__version__)"]):
        try:
            env_lines.append(subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout)
        except (OSError, subprocess.TimeoutExpired) as err:
            env_lines.append(f"{cmd[0]}: {err}")
    atomic_write_text(out / "environment.txt", "\n".join(env_lines))
    record: dict[str, object] = {"device": device, "max_batch": max_batch, "runs": []}
    runs: list[dict[str, object]] = []
    # A first small profile: the CUDA path, and whether the interference exchange works on this GPU.
    smoke = out / "smoke__resnet18-64px.json"
    status, wall = _run(
        _srifty(
            "--model",
            "resnet18",
            "--device",
            device,
            "--max-batch",
            "32",
            "--image-size",
            "64",
            "--interference-reps",
            "1",
            "--out",
            str(smoke),
        ),
        logs / "smoke.log",
        per_model_s,
    )
    interference_ok = smoke.exists() and json.loads(smoke.read_text()).get("interference") is not None
    runs.append(
        {"model": "smoke resnet18 64px", "status": status, "wall_s": round(wall, 1), "interference": interference_ok}
    )
    print(
        f"smoke: status {status}, {wall:.0f} s, interference {'measured' if interference_ok else 'failed'}", flush=True
    )
    for model, extra in MODELS:
        left = budget_s - (time.monotonic() - started)
        if left < 30:
            runs.append({"model": model, "status": "skipped: budget spent"})
            continue
        path = out / f"{file_stem(model)}.json"
        flags = [] if interference_ok else ["--no-interference"]
        args = _srifty(
            "--model", model, "--device", device, "--max-batch", str(max_batch), *flags, *extra, "--out", str(path)
        )
        status, wall = _run(args, logs / f"{file_stem(model)}.log", min(per_model_s, left))
        runs.append({"model": model, "status": status, "wall_s": round(wall, 1), "written": path.exists()})
        print(f"{model}: status {status}, {wall:.0f} s, {'written' if path.exists() else 'no profile'}", flush=True)
    record["runs"] = runs
    record["total_s"] = round(time.monotonic() - started, 1)
    atomic_write_text(out / "runs.json", json.dumps(record, indent=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="part", required=True)
    m = sub.add_parser("measure", help="on the GPU machine: profile the models")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--budget-s", type=float, default=330.0)
    m.add_argument("--per-model-s", type=float, default=120.0)
    m.add_argument("--device", default="cuda")
    m.add_argument("--max-batch", type=int, default=MAX_BATCH)
    sub.add_parser("report", help="here: compare the committed profiles with srifty's estimates")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if args.part == "measure":
        measure(args.out, args.budget_s, args.per_model_s, args.device, args.max_batch)
        return 0
    from benchmarks.h200_report import report

    report()
    return 0


if __name__ == "__main__":
    sys.exit(main())
