"""Copy the public allreduce measurements srifty's network default uses into the package.

Reads the shared reference tables (nccl-tests ``all_reduce_perf`` and torch.distributed sweeps, transcribed
from public READMEs and issues; see their README) and writes the rows of every table listed in
``src/srifty/network/data/public-tables.csv`` to ``src/srifty/network/data/public-allreduce.csv``, with
each row's source URL. Values are copied as published (out-of-place columns); nothing is recomputed here.

    python scripts/import_public_allreduce.py /path/to/shared/data/reference/nccl
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

DATA = Path(__file__).resolve().parents[1] / "src" / "srifty" / "network" / "data"
COLUMNS = ["table_id", "size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "source_url"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path, help="folder with all_reduce.csv and torch_allreduce.csv")
    args = parser.parse_args()
    tables = pd.read_csv(DATA / "public-tables.csv")
    nccl = pd.read_csv(args.reference / "all_reduce.csv")
    torch = pd.read_csv(args.reference / "torch_allreduce.csv")
    torch["time_us"] = float("nan")  # all_reduce_bench.py prints bandwidths only
    rows = pd.concat([nccl[COLUMNS], torch[COLUMNS]], ignore_index=True)
    rows = rows[rows["table_id"].isin(set(tables["table_id"]))]
    missing = sorted(set(tables["table_id"]) - set(rows["table_id"]))
    if missing:
        raise SystemExit(f"tables not found in {args.reference}: {', '.join(missing)}")
    out = DATA / "public-allreduce.csv"
    rows.to_csv(out, index=False)
    print(f"wrote {len(rows)} rows of {rows['table_id'].nunique()} tables to {out}")


if __name__ == "__main__":
    main()
