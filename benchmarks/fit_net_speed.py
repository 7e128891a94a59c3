"""How long ``srifty fit-net`` takes with default settings (40 Optuna trials per side, 5 folds, all cores).

Target (issue #14): a user's own probes refit in under a minute on 2 cores. A user's probe set is stood in
for by one family of the embedded testbed set (g4dn.8xlarge: 5 allocations × world sizes 2–8 × 23 sizes ×
concurrency 1, 2, 4 × 3 repeats = 4,140 rows, what ``srifty probe`` writes over a few runs), fitted alone
and with ``--base public`` (the bundled nccl-tests tables beside it); the whole testbed set (14,490 rows,
four families) is the large case. Each is the real command in a fresh process (imports included), timed
from start to exit.

Run (heavy; hold the CPU lock): ``flock /tmp/srifty-cpu.lock python -m benchmarks.fit_net_speed``.
Writes BENCHMARKS.md ("Bandwidth-model refit time").
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import machine_description, write_section
from srifty.network import append_probes, load_default_probes

CASES = (
    ("one family (g4dn.8xlarge)", "g4dn.8xlarge", ()),
    ("one family + `--base public`", "g4dn.8xlarge", ("--base", "public")),
    ("whole testbed set (4 families)", None, ()),
)


def fit_seconds(probes: Path, extra: tuple[str, ...], out: Path) -> float:
    command = [sys.executable, "-m", "srifty.cli.main", "fit-net", str(probes), "--out", str(out), *extra]
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    probes = load_default_probes()
    rows = []
    with tempfile.TemporaryDirectory(prefix="srifty-fitnet-") as tmp:
        for label, family, extra in CASES:
            subset = probes if family is None else probes[probes["instance_type"] == family]
            path = Path(tmp) / f"{family or 'all'}.parquet"
            if not path.exists():
                append_probes(path, subset)
            repeats = args.repeats if family is not None else 1
            times = [fit_seconds(path, extra, Path(tmp) / "net.json") for _ in range(repeats)]
            rows.append((label, len(subset), repeats, statistics.median(times)))
            print(rows[-1], flush=True)
    lines = ["| probes | rows | runs | wall time (median) |", "|---|---|---|---|"]
    lines += [f"| {label} | {n:,} | {k} | {t:.0f} s |" for label, n, k, t in rows]
    body = "\n".join(
        [
            "`srifty fit-net PROBES --out net.json` with default settings (40 Optuna trials per side of the MTU,",
            "5 allocation-grouped folds, interval calibration, all cores), in a fresh process. Target (issue",
            "#14): a user's own probes refit in under a minute on 2 cores. The probe files are subsets of the",
            "embedded testbed set (see the module docstring); `--base public` adds the 366 rows of the bundled",
            "nccl-tests tables.",
            "",
            *lines,
            "",
            "Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.fit_net_speed`. "
            f"Machine: {machine_description()}.",
        ]
    )
    write_section("Bandwidth-model refit time", body)
    print(body)


if __name__ == "__main__":
    main()
