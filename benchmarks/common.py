"""Helpers shared by the benchmark scripts: machine description and the commit it names, Markdown tables,
BENCHMARKS.md section updates, and what other processes used of the CPU during a run."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from srifty.artifacts import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"


def machine_description() -> str:
    """One line naming the machine: CPU model with its family and model numbers and widest vector instructions
    (this machine's ``"AMD EPYC"`` has been a Zen 5 and a Zen 1, three times apart on a CPU convolution), cores,
    memory, OS, and the git commit measured."""
    from srifty.compute.measure.device import (
        available_memory_bytes,
        cpu_fields,
        cpu_model_name,
        cpu_signature,
        cpu_vector_isa,
    )

    commit = "unknown"
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=True
        ).stdout.strip()
    cores = os.cpu_count() or 0
    mem_gib = available_memory_bytes() / 2**30
    cpu = cpu_fields()
    return (
        f"{cpu_model_name(cpu)} ({', '.join(filter(None, (cpu_signature(cpu), cpu_vector_isa(cpu))))}), {cores} cores, "
        f"{mem_gib:.0f} GiB available, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, commit {commit}"
    )


def commit_of(machine: str) -> str:
    """The commit a :func:`machine_description` line names, or ``"unknown"`` where it names none."""
    return machine.rsplit("commit ", 1)[-1] if "commit " in machine else "unknown"


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table's lines: ``head``, the rule, and one line per row (each cell as ``str``)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def write_section(heading: str, body: str, path: Path = BENCHMARKS_MD) -> None:
    """Replace the ``## heading`` section of BENCHMARKS.md with ``body`` (or append it), atomically."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    block = f"## {heading}\n\n{body.strip()}\n\n"
    pattern = re.compile(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", re.S | re.M)
    found = pattern.search(text)
    text = pattern.sub(lambda _m: block, text, count=1) if found else text.rstrip("\n") + "\n\n" + block
    atomic_write_text(path, text.rstrip("\n") + "\n")


BEFORE_HEADING = "### Before: as published at "


def published_section(heading: str, revision: str, root: Path = ROOT) -> str:
    """The body of ``## heading`` in BENCHMARKS.md as committed at git ``revision`` (of the repository at
    ``root``), without its own "before" block or interim remarks, for a regenerated section's "before".

    Raises:
        SystemExit: ``revision`` unknown, or its BENCHMARKS.md has no such section (the message says which).
    """
    shown = subprocess.run(
        ["git", "show", f"{revision}:BENCHMARKS.md"], capture_output=True, text=True, cwd=root, check=False
    )
    if shown.returncode != 0:
        raise SystemExit(f"--before {revision}: git cannot show BENCHMARKS.md there ({shown.stderr.strip()})")
    pattern = re.compile(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", re.S | re.M)
    found = pattern.search(shown.stdout)
    if found is None:
        raise SystemExit(f"--before {revision}: its BENCHMARKS.md has no section '## {heading}'")
    body = found.group(1).split(f"\n{BEFORE_HEADING}")[0]
    kept = [p.strip() for p in body.strip().split("\n\n") if p.strip() and not p.strip().startswith("(Interim:")]
    return "\n\n".join(kept)


def with_before(body: str, heading: str, revisions: str | Sequence[str] | None, root: Path = ROOT) -> str:
    """``body`` with, for each of ``revisions`` (newest first), the section as published there beneath it."""
    if revisions is None:
        return body
    for revision in [revisions] if isinstance(revisions, str) else revisions:
        body = f"{body.rstrip()}\n\n{BEFORE_HEADING}{revision}\n\n{published_section(heading, revision, root)}"
    return body


def cpu_seconds() -> dict[int, tuple[bool, float]]:
    """Every process's CPU time so far (s), and whether it is this checkout's (its command or working folder is
    under the repository: the benchmark, srifty, torchrun and the workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            cpu_s = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            command = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            ours = str(ROOT) in command or os.readlink(f"/proc/{entry}/cwd").startswith(str(ROOT))
            found[int(entry)] = (ours, cpu_s)
    return found


def others_cores(before: dict[int, tuple[bool, float]], after: dict[int, tuple[bool, float]], wall_s: float) -> float:
    """Cores used on average by processes not of this checkout between two snapshots (those that ended in
    between are not counted: a lower bound)."""
    used = sum(cpu - before.get(pid, (ours, 0.0))[1] for pid, (ours, cpu) in after.items() if not ours)
    return used / wall_s
