"""Copy the measurements the emulated cloud's truth is built from into the package (``srifty/cloud/data``).

Run: ``python scripts/cloud_data.py`` (a few seconds). It writes, with provenance in the README there:

* ``h200_fp32.jsonl``: the real H200 latency curves, gradient-ready times and the 400-iteration run, copied
  verbatim from ``shared/data/reference/h200`` (the only GPU measurements of the project);
* ``gpu_throughput.csv``: the public single-GPU rows the cross-GPU part is calibrated and checked on (ResNet-50
  training, and the T4/V100 ResNet-50 inference batch sweeps), from ``shared/data/reference/gpu_perf``;
* ``allreduce_public.csv``: the public nccl-tests and torch.distributed allreduce tables of real clusters the
  network truth is fitted to (one row per published size: time, and each table's machines, fabric and the
  family group the judge assigns it), from ``src/srifty/network/data/public-*.csv`` (themselves transcribed from
  ``shared/data/reference/nccl`` with every source URL);
* ``allreduce_testbed.csv``: the testbed's gloo probes (``src/srifty/network/data/testbed-probes.parquet``,
  real gloo over ``tc``-shaped links at 1/50 of the represented families' rated bandwidth, times scaled back),
  as the median time per family, node count and size of single transfers.

What each bundled model is (parameters, FLOPs, bytes, ops) is not copied: the emulated cloud counts it from
the models' definitions itself (``srifty.cloud.architectures``).

The emulated cloud reads these files only; it does not import srifty's compute package.
"""

from __future__ import annotations

import argparse
import csv
import shutil
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "srifty" / "cloud" / "data"


def default_shared() -> Path:
    """The nearest ``shared/data/reference`` folder above the checkout."""
    for folder in ROOT.parents:
        if (folder / "shared" / "data" / "reference").is_dir():
            return folder / "shared" / "data" / "reference"
    return ROOT.parent / "shared" / "data" / "reference"


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


#: Which fabric each public table ran on, and the family group whose tables the judge pools (see the README).
FABRIC_GROUPS = {
    "p4d.24xlarge": ("efa-rdma", "p4"),
    "p4de.24xlarge": ("efa-rdma", "p4"),
    "p5.48xlarge": ("efa-rdma", "p5"),
    "p5en.48xlarge": ("efa-rdma", "p5"),
    "p6-b200.48xlarge": ("efa-rdma", "p6"),
    "g4dn.metal": ("efa-host", "g4dn-metal"),
    "dgx-a100": ("ib", "dgx-a100"),
    "dgx-1-v100": ("roce", "dgx-1"),
}


def allreduce_public(network_data: Path) -> list[dict[str, Any]]:
    """The public tables' rows with each table's description (0-byte rows and rounded-away times dropped)."""
    tables = {r["table_id"]: r for r in csv.DictReader((network_data / "public-tables.csv").open(encoding="utf-8"))}
    out = []
    for r in csv.DictReader((network_data / "public-allreduce.csv").open(encoding="utf-8")):
        t = tables[r["table_id"]]
        size, world = int(r["size_bytes"]), int(t["world_size"])
        if size <= 0:
            continue
        if r["time_us"]:
            time_s = float(r["time_us"]) * 1e-6
        elif r["busbw_GBps"] and float(r["busbw_GBps"]) >= 0.1:  # printed to 0.01 GB/s: smaller is too coarse
            time_s = size * 2 * (world - 1) / world / (float(r["busbw_GBps"]) * 1e9)
        else:
            continue
        n_nodes = int(t["n_nodes"])
        fabric, group = FABRIC_GROUPS.get(t["instance_type"], (t["fabric"], t["instance_type"]))
        if n_nodes == 1:
            fabric, group = "nvlink", "node-" + t["gpu"].split("-")[0].replace("H200", "H100")
        out.append(
            {
                "table_id": r["table_id"],
                "use": t["use"],
                "instance_type": t["instance_type"],
                "gpu": t["gpu"],
                "n_nodes": n_nodes,
                "gpus_per_node": int(t["gpus_per_node"]),
                "world_size": world,
                "fabric": fabric,
                "group": group,
                "rated_network_gbps": t["rated_network_gbps"],
                "intra_link_gbps": t["intra_node_link_gbps"],
                "size_bytes": size,
                "time_s": f"{time_s:.6g}",
                "source_url": r["source_url"],
            }
        )
    return out


def allreduce_testbed(network_data: Path) -> list[dict[str, Any]]:
    """Median time of single transfers per represented family, node count and size on the testbed."""
    import pandas as pd

    probes = pd.read_parquet(network_data / "testbed-probes.parquet")
    probes = probes[(probes["n_concurrent"] == 1) & (probes["n_nodes"] >= 2)]
    keys = ["instance_type", "gpu", "n_nodes", "gpus_per_node", "world_size", "rated_network_gbps", "size_bytes"]
    out = []
    for key, rows in probes.groupby(keys):
        family, gpu, n_nodes, gpus, world, rated, size = cast(tuple[Any, ...], key)
        out.append(
            {
                "table_id": f"TB_{family}",
                "use": "train",
                "instance_type": family,
                "gpu": gpu,
                "n_nodes": int(n_nodes),
                "gpus_per_node": int(gpus),
                "world_size": int(world),
                "fabric": "tcp",
                "group": family,
                "rated_network_gbps": rated,
                "intra_link_gbps": 128,
                "size_bytes": int(size),
                "time_s": f"{float(rows['time_s'].median()):.6g}",
                "source_url": "srifty testbed (gloo between network namespaces, tc-shaped links at 1/50, times x 1/50)",
            }
        )
    return out


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as CSV."""
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=default_shared(), help="shared/data/reference folder")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.shared / "h200" / "h200_fp32.jsonl", OUT / "h200_fp32.jsonl")
    rows = public_rows(args.shared / "gpu_perf" / "throughput.csv")
    write_rows(OUT / "gpu_throughput.csv", rows)
    network_data = ROOT / "src" / "srifty" / "network" / "data"
    public = allreduce_public(network_data)
    write_rows(OUT / "allreduce_public.csv", public)
    testbed = allreduce_testbed(network_data)
    write_rows(OUT / "allreduce_testbed.csv", testbed)
    print(f"wrote {len(rows)} throughput rows, {len(public)} public and {len(testbed)} testbed allreduce rows to {OUT}")


if __name__ == "__main__":
    main()
