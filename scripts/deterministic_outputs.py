"""Write every deterministic output a refactor must leave unchanged, or compare two such folders.

    python scripts/deterministic_outputs.py write OUT     # with this checkout's srifty on the path
    python scripts/deterministic_outputs.py compare BEFORE AFTER

``write`` plans every ``examples/*.yaml`` (``srifty plan --json``), replays the Figure 8 scenario on the
EMULATED cloud for seeds 0-4 (decision log, timeline, summary) and judges the paper cases on it at seed 0
(``srifty eval cases --seed 0 --out``). ``compare`` says, file by file, whether the two are identical, or
identical but for the keys that time the computation (``solve_time_s``, ``solve_s``, ``truth_s``, ``fit_s``,
``probe_s``, ``elapsed_s``, ``search_s``), and exits 1 when anything else differs. ``write`` replaces the checkout's own
folder in the plans (the path of a profile) by ``<checkout>``, so two checkouts in different folders compare.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: Keys whose values time the computation (seconds of wall time), not what it computed.
TIMING_KEYS = frozenset({"solve_time_s", "solve_s", "truth_s", "fit_s", "probe_s", "elapsed_s", "search_s"})
FIG8_SEEDS = range(5)


def write(out: Path) -> None:
    """Every deterministic output of this checkout into ``out``."""
    from srifty.evaluate import run_scenario
    from srifty.spec import load_spec

    srifty = [sys.executable, "-m", "srifty.cli.main"]
    (out / "plans").mkdir(parents=True, exist_ok=True)
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        written = out / "plans" / f"{path.stem}.json"
        subprocess.run([*srifty, "plan", str(path), "--json", str(written)], check=False)
        if written.is_file():
            written.write_text(written.read_text(encoding="utf-8").replace(str(ROOT), "<checkout>"), encoding="utf-8")
    base = load_spec(ROOT / "examples" / "fig8-preemption.yaml")
    assert base.emulation is not None
    for seed in FIG8_SEEDS:
        spec = base.model_copy(update={"emulation": base.emulation.model_copy(update={"seed": seed})})
        run_scenario(spec, out / "fig8" / str(seed))
    subprocess.run([*srifty, "eval", "cases", "--seed", "0", "--out", str(out / "cases")], check=True)


def without_timing(value: Any) -> Any:
    """``value`` with every timing key left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def _documents(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines()]
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix == ".csv":
        return list(csv.DictReader(io.StringIO(text)))
    return text


def compare(before: Path, after: Path) -> int:
    """Print one line per file of ``before``; returns the number of files that differ beyond timing."""
    differ = 0
    for old in sorted(p for p in before.rglob("*") if p.is_file()):
        rel = old.relative_to(before)
        new = after / rel
        if not new.is_file():
            verdict, differ = "missing after", differ + 1
        elif old.read_bytes() == new.read_bytes():
            verdict = "identical"
        elif without_timing(_documents(old)) == without_timing(_documents(new)):
            verdict = "identical but for timing"
        else:
            verdict, differ = "DIFFERENT", differ + 1
        print(f"{verdict}: {rel}")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("write").add_argument("out", type=Path)
    both = sub.add_parser("compare")
    both.add_argument("before", type=Path)
    both.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.what == "write":
        write(args.out)
        return
    differ = compare(args.before, args.after)
    print(f"{differ} file(s) differ beyond timing")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
