"""How long ``srifty fit-net`` takes with default settings (40 Optuna trials per side, 5 folds, all cores).

Target (issue #14): a user's own probes refit in under a minute on 2 cores. A user's probe set is stood in
for by one family of the embedded testbed set (g4dn.8xlarge: 5 allocations × world sizes 2–8 × 23 sizes ×
concurrency 1, 2, 4 × 3 repeats = 4,140 rows, what ``srifty probe`` writes over a few runs), fitted alone
and with ``--base public`` (the bundled nccl-tests tables beside it); the whole testbed set (14,490 rows,
four families) is the large case. Each is the real command in a fresh process (imports included), timed
from start to exit.

Run (heavy; hold the CPU lock): ``flock /tmp/srifty-cpu.lock python -m benchmarks.fit_net_speed``.
Writes BENCHMARKS.md ("Bandwidth-model refit time") and the raw figures to ``--save``. ``--src DIR`` times
another checkout's ``srifty`` (its ``src`` folder, put first on ``PYTHONPATH``; a case its command line
does not accept is recorded as not run) without touching BENCHMARKS.md; ``--before FILE`` (such a run's
``--save``) puts those times beside these.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import machine_description, write_section
from srifty.network import append_probes, load_default_probes

CASES = (
    ("one family (g4dn.8xlarge)", "g4dn.8xlarge", ()),
    ("one family + `--base public`", "g4dn.8xlarge", ("--base", "public")),
    ("whole testbed set (4 families)", None, ()),
)


def fit_seconds(probes: Path, extra: tuple[str, ...], out: Path, src: Path | None) -> float | None:
    """Wall time (s) of one ``srifty fit-net`` in a fresh process; ``None`` if that srifty rejects it."""
    command = [sys.executable, "-m", "srifty.cli.main", "fit-net", str(probes), "--out", str(out), *extra]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    if done.returncode == 2 and src is not None:  # a usage error: this version has no such option
        return None
    if done.returncode != 0:
        raise SystemExit(f"fit-net failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return time.perf_counter() - started


def _seconds(value: float | None) -> str:
    return "not available" if value is None else f"{value:.0f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--save", type=Path, default=Path("benchmarks/results/fit_net_speed.json"))
    parser.add_argument("--src", type=Path, default=None, help="time another checkout's src/ instead")
    parser.add_argument("--before", type=Path, default=None, help="an earlier run's --save file")
    parser.add_argument("--label", default="", help="what this run measures (kept in --save)")
    args = parser.parse_args()
    probes = load_default_probes()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="srifty-fitnet-") as tmp:
        for label, family, extra in CASES:
            subset = probes if family is None else probes[probes["instance_type"] == family]
            path = Path(tmp) / f"{family or 'all'}.parquet"
            if not path.exists():
                append_probes(path, subset)
            repeats = args.repeats if family is not None else 1
            times = [fit_seconds(path, extra, Path(tmp) / "net.json", args.src) for _ in range(repeats)]
            measured = [t for t in times if t is not None]
            rows.append(
                {
                    "probes": label,
                    "rows": len(subset),
                    "runs": len(measured),
                    "median_s": statistics.median(measured) if measured else None,
                }
            )
            print(rows[-1], flush=True)
    args.save.write_text(json.dumps({"label": args.label, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    if args.src is not None:
        return
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    old = {r["probes"]: r["median_s"] for r in (before or {}).get("rows", [])}
    lines = ["| probes | rows | runs | before: wall time | wall time (median) |", "|---|---|---|---|---|"]
    lines += [
        f"| {r['probes']} | {r['rows']:,} | {r['runs']} | {_seconds(old.get(r['probes']))} | "
        f"{_seconds(r['median_s'])} |"
        for r in rows
    ]
    command = "flock /tmp/srifty-cpu.lock python -m benchmarks.fit_net_speed" + (
        f" --before {args.before}" if args.before else ""
    )
    body = "\n".join(
        [
            "`srifty fit-net PROBES --out net.json` with default settings (40 Optuna trials per side of the MTU,",
            "5 allocation-grouped folds, interval calibration, all cores), in a fresh process. Target (issue",
            "#14): a user's own probes refit in under a minute on 2 cores. The probe files are subsets of the",
            "embedded testbed set (see the module docstring); `--base public` adds the 366 rows of the bundled",
            "nccl-tests tables."
            + (
                f" *Before*: {before['label']} (`--base` did not exist then)." if before and before.get("label") else ""
            ),
            "",
            *lines,
            "",
            f"Command: `{command}`. Machine: {machine_description()}.",
        ]
    )
    write_section("Bandwidth-model refit time", body)
    print(body)


if __name__ == "__main__":
    main()
