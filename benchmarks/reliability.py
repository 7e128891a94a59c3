"""Reliability: the bad-input matrix and the fault matrix, counted for BENCHMARKS.md ("Reliability").

Bad input: every family of ``tests/badinput.py`` (job specs, each artefact srifty reads, command-line
options) is drawn ``--cases`` times by hypothesis and run in-process; each case must end with exit code 2
(or 0 for odd-but-valid input), no traceback, and a message naming the file, field or option.

Faults: ``tests/faults.py`` kills ``srifty plan --json``, ``srifty fit-net``, ``srifty profile`` and a
checkpoint save with SIGKILL at random points (``--kills`` per command) and checks the files they write:
each must be the old one or the new one, never torn. It also stops ``srifty run`` and a testbed launch
with SIGTERM/SIGINT/SIGKILL and counts what is left behind.

Run: ``flock /tmp/srifty-cpu.lock python -m benchmarks.reliability`` (as root for the testbed faults;
about 10 minutes on 2 cores). ``--no-write`` prints without touching BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as seed_with
from tests.badinput import FAMILIES, Case, Outcome, run_case

from benchmarks.common import ROOT, machine_description, write_section
from srifty.artifacts import atomic_write_text

RESULTS = ROOT / "benchmarks" / "results" / "reliability.json"


def bad_input_matrix(cases: int, seed: int, only: list[str] | None) -> dict[str, list[Outcome]]:
    """Run ``cases`` draws of each family; returns the outcomes per family."""
    found: dict[str, list[Outcome]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="srifty-reliability-") as base:
        for family, strategy in FAMILIES.items():
            if only and family not in only:
                continue

            started = time.perf_counter()
            _draw(strategy, cases, seed, functools.partial(_collect, found[family], Path(base)))
            elapsed = time.perf_counter() - started
            bad = [o for o in found[family] if not o.ok]
            print(f"{family}: {len(found[family])} cases in {elapsed:.0f} s, {len(bad)} not ok", flush=True)
            for outcome in bad[:5]:
                print("  " + outcome.explain().replace("\n", "\n  ")[:1500], flush=True)
    return found


def _collect(sink: list[Outcome], base: Path, case: Case) -> None:
    """Run ``case`` in ``base`` and keep its outcome in ``sink``."""
    sink.append(run_case(case, base))


def _draw(strategy: Any, cases: int, seed: int, sink: Callable[[Case], None]) -> None:
    """Draw ``cases`` values of ``strategy`` (seeded) into ``sink``; no shrinking, so each is a raw case."""

    @seed_with(seed)
    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.generate,),
    )
    @given(strategy)
    def draw(case: Case) -> None:
        sink(case)

    draw()


def bad_input_rows(found: dict[str, list[Outcome]]) -> list[dict[str, object]]:
    rows = []
    for family, outcomes in found.items():
        rows.append(
            {
                "family": family,
                "cases": len(outcomes),
                "exit_2": sum(o.code == 2 for o in outcomes),
                "accepted": sum(o.code == 0 for o in outcomes),
                "tracebacks": sum(o.traceback is not None for o in outcomes),
                "wrong_exit": sum(o.wrong_exit for o in outcomes),
                "unnamed": sum(o.traceback is None and o.code == 2 and not o.named for o in outcomes),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=200, help="draws per bad-input family")
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs per command in the fault matrix")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", help="bad-input families to run (default: all)")
    parser.add_argument("--no-faults", action="store_true", help="skip the fault matrix")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    started = time.time()
    found = bad_input_matrix(args.cases, args.seed, args.only)
    rows = bad_input_rows(found)
    faults: list[dict[str, object]] = []
    if not args.no_faults:
        from tests.faults import fault_matrix

        faults = fault_matrix(args.kills, args.seed)
    for row in rows + faults:
        print(row)
    if args.no_write:
        return
    atomic_write_text(RESULTS, json.dumps({"bad_input": rows, "faults": faults}, indent=1))
    write_section("Reliability", render(rows, faults, args, time.time() - started))


def _before() -> dict[str, dict[str, int]]:
    """The rows measured on srifty before issue 16 (see benchmarks/results/reliability-before.json)."""
    path = ROOT / "benchmarks" / "results" / "reliability-before.json"
    if not path.exists():
        return {}
    return {str(r["family"]): r for r in json.loads(path.read_text())["bad_input"]}


def render(
    rows: list[dict[str, object]], faults: list[dict[str, object]], args: argparse.Namespace, took_s: float
) -> str:
    lines = [
        "Bad input (`tests/badinput.py`): hypothesis draws per family, each run as the command that reads it;",
        "a case passes with exit code 2, a message naming the file, field or option, and no traceback (exit 0",
        "counts for odd-but-valid input such as a field changed to another valid value). *Unnamed*: exit 2 with a",
        "message that names none of the file, field or option.",
        "",
        "| family | inputs tried | exit 2 | accepted (valid) | tracebacks | wrong exit codes | unnamed "
        "| before: tb / wrong / unnamed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    before = _before()
    for r in rows:
        b = before.get(str(r["family"]))
        was = f"{b['tracebacks']} / {b['wrong_exit']} / {b['unnamed']}" if b else "—"
        lines.append(
            f"| {r['family']} | {r['cases']} | {r['exit_2']} | {r['accepted']} | **{r['tracebacks']}** | "
            f"**{r['wrong_exit']}** | {r['unnamed']} | {was} |"
        )
    keys = ("cases", "tracebacks", "wrong_exit", "unnamed")
    total = {k: sum(int(str(r[k])) for r in rows) for k in keys}
    was_total = {k: sum(int(b[k]) for b in before.values()) for k in keys}
    lines.append(
        f"| **all** | **{total['cases']}** | | | **{total['tracebacks']}** | **{total['wrong_exit']}** | "
        f"{total['unnamed']} | {was_total['tracebacks']} / {was_total['wrong_exit']} / {was_total['unnamed']} "
        f"(of {was_total['cases']}) |"
    )
    lines += [
        "",
        "*Before*: the same families and checks run against srifty before this work (commit 1a49d80, 200 draws per",
        "family; `benchmarks/results/reliability-before.json` has the rows and the command).",
    ]
    if faults:
        lines += [
            "",
            "Faults (`tests/faults.py`): each command killed at random points, or stopped by a signal. *Leftovers*:",
            "processes the run started still alive 15 s after the stop (2 s for the writing commands) and, for the",
            "testbed, namespaces still there after `srifty testbed down`.",
            "",
            "| command | fault | injected | old file kept | new file complete | torn files | leftovers |",
            "|---|---|---|---|---|---|---|",
        ]
        for f in faults:
            lines.append(
                f"| {f['command']} | {f['fault']} | {f['injected']} | {f.get('old', '—')} | {f.get('new', '—')} | "
                f"**{f.get('torn', 0)}** | **{f.get('leftovers', 0)}** |"
            )
        named = [(f["command"], f["fault"], name) for f in faults for name in _leftover_names(f)]
        if named:
            lines += ["", "What each leftover was (`pid (command line)`, or the namespace):", ""]
            lines += [f"- {command}, {fault}: `{name}`" for command, fault, name in named]
    lines += [
        "",
        f"Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.reliability --cases {args.cases} "
        f"--kills {args.kills}` (as root; {took_s / 60:.0f} min). Machine: {machine_description()}.",
        "Raw: `benchmarks/results/reliability.json`.",
    ]
    return "\n".join(lines)


def _leftover_names(row: dict[str, object]) -> list[str]:
    """What a fault row's leftovers were (rows saved before they were named have none)."""
    names = row.get("leftover_names")
    return [str(name) for name in names] if isinstance(names, list) else []


if __name__ == "__main__":
    main()
