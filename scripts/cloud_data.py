"""Copy the measurements the emulated cloud's truth is built from into the package (``srifty/cloud/data``).

Run: ``python scripts/cloud_data.py`` (a few seconds). It writes, with provenance in the README there:

* ``h200_fp32.jsonl``: the real H200 latency curves, gradient-ready times and the 400-iteration run, copied
  verbatim from ``shared/data/reference/h200`` (the only GPU measurements of the project);
* ``gpu_throughput.csv``: the public single-GPU rows the cross-GPU part is calibrated and checked on (ResNet-50
  training, and the T4/V100 ResNet-50 inference batch sweeps), from ``shared/data/reference/gpu_perf``;
* ``workloads.json``: what each bundled model is, independent of any device: its parameters in the order their
  gradients become ready (with ready fractions where no GPU measured them), and per phase the FLOPs per sample
  of convolutions, matrix products and the rest, bytes moved per sample, and how many kernel-launching ops it
  runs. Counted by srifty's profiler on this project's CPU (the bundled profiles' op counts); counts do not
  depend on the device, only times do, and no time is copied.

The emulated cloud reads these files only; it does not import srifty's compute package.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
from pathlib import Path
from typing import Any

from srifty.compute.bundled import bundled_profile_paths
from srifty.compute.profile import load_profile
from srifty.evaluate.workloads import workload_from_profile

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "srifty" / "cloud" / "data"


def default_shared() -> Path:
    """The nearest ``shared/data/reference`` folder above the checkout."""
    for folder in ROOT.parents:
        if (folder / "shared" / "data" / "reference").is_dir():
            return folder / "shared" / "data" / "reference"
    return ROOT.parent / "shared" / "data" / "reference"


def workload(path: Path) -> dict[str, Any]:
    """Device-independent facts about the model of one bundled profile."""
    return workload_from_profile(
        load_profile(path), source=f"srifty's bundled CPU profile {path.name} (op counts only)"
    )


def public_rows(path: Path) -> list[dict[str, Any]]:
    """ResNet-50 single-GPU rows: training (FP32/TF32), and the T4/V100 FP32 inference batch sweeps."""
    keep = []
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["n_gpus"] != "1":
                continue
            dle = r["model"] == "ResNet50v1.5 (ImageNet)"
            lambda_row = r["model"] == "resnet50" and r["source_repo"].startswith("lambdal")
            if not (dle or lambda_row) or r["precision"] not in ("FP32", "TF32"):
                continue
            if r["mode"] == "inference" and r["gpu"] not in ("T4", "V100-16GB"):
                continue
            if r["gpu"].startswith(("RTX", "Quadro")):
                continue  # workstation cards: not rented in the catalog, and no datasheet row in the cloud's table
            keep.append(
                {
                    "gpu_label": r["gpu"],
                    "mode": r["mode"],
                    "batch": int(r["batch_per_gpu"]),
                    "precision": r["precision"],
                    "samples_per_s": float(r["throughput"]),
                    "source_repo": r["source_repo"],
                    "path": r["path"],
                    "container": r["container"],
                }
            )
    return keep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=default_shared(), help="shared/data/reference folder")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.shared / "h200" / "h200_fp32.jsonl", OUT / "h200_fp32.jsonl")
    rows = public_rows(args.shared / "gpu_perf" / "throughput.csv")
    with (OUT / "gpu_throughput.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    models = [workload(p) for p in bundled_profile_paths() if p.name.endswith("__cpu.json")]
    doc = {"schema_version": 1, "models": {m["model"]: m for m in models}}
    (OUT / "workloads.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} public rows and {len(models)} workloads to {OUT}")


if __name__ == "__main__":
    main()
