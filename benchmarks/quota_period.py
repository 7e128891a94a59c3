"""Does a cgroup CPU quota emulate a slower CPU? The testbed's quota period, before (100 ms) and after (10 ms).

The testbed emulates a slower VM type with a cgroup v1 CPU quota (``cpu.cfs_quota_us`` per
``cpu.cfs_period_us``). A quota lets a group run at full speed until its time for the period is spent, then
stops it until the next period. A DDP rank alternates compute with waits on the network; if a wait is
longer than a period, its next compute starts with a whole period's quota. This benchmark runs one resnet18
training step (forward, backward, SGD step; 8 images of 64x64, one torch thread, as the multi-host
benchmark's ranks) in a child process under each quota and period: back to back, and each after a pause
of ``--idle-s`` (a rank waiting on its allreduce). A slower CPU takes the same time either way.

Run as root (cgroup v1 cpu controller): ``flock /tmp/srifty-cpu.lock python -m benchmarks.quota_period``
(about a minute). Writes BENCHMARKS.md ("Testbed CPU quotas: the period").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common import machine_description, write_section
from srifty.runtime.cpu_quota import quota_window_us

SECTION = "Testbed CPU quotas: the period"
GROUP = Path("/sys/fs/cgroup/cpu") / f"srifty-bench-period-{os.getpid()}"
BEFORE_PERIOD_US = 100_000

CHILD = """
import json, statistics, sys, time, torch, torchvision
torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=10)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x, y = torch.randn(8, 3, 64, 64), torch.randint(0, 10, (8,))
def step():
    start = time.perf_counter()
    opt.zero_grad(); torch.nn.functional.cross_entropy(model(x), y).backward(); opt.step()
    return (time.perf_counter() - start) * 1e3
for _ in range(3): step()
steps, idle_s = int(sys.argv[1]), float(sys.argv[2])
back_to_back = [step() for _ in range(steps)]
after_idle = []
for _ in range(steps):
    time.sleep(idle_s); after_idle.append(step())
print(json.dumps({"back_to_back_ms": statistics.median(back_to_back), "after_idle_ms": statistics.median(after_idle)}))
"""


def run_child(quota_us: int | None, period_us: int, steps: int, idle_s: float) -> dict[str, float]:
    """One child process's medians under ``quota_us`` per ``period_us`` (``None``: no quota)."""
    GROUP.mkdir(exist_ok=True)
    (GROUP / "cpu.cfs_period_us").write_text(str(period_us))
    (GROUP / "cpu.cfs_quota_us").write_text(str(quota_us if quota_us is not None else -1))
    procs = GROUP / "cgroup.procs"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps), str(idle_s)],
        preexec_fn=lambda: procs.write_text(str(os.getpid())),
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=15, help="timed steps of each kind")
    parser.add_argument("--idle-s", type=float, default=0.3, help="pause before each 'after idle' step")
    args = parser.parse_args()
    rows = []
    try:
        free = run_child(None, BEFORE_PERIOD_US, args.steps, args.idle_s)
        for cores in (0.6, 0.3):
            for label, (quota_us, period_us) in (
                ("before: 100 ms", (round(cores * BEFORE_PERIOD_US), BEFORE_PERIOD_US)),
                ("after: 10 ms", quota_window_us(cores)),
            ):
                got = run_child(quota_us, period_us, args.steps, args.idle_s)
                rows.append((cores, label, got))
                print(cores, label, got, flush=True)
    finally:
        if GROUP.exists():
            GROUP.rmdir()
    table = [
        "| CPU quota | period | step back to back (ms) | step after idle (ms) | after idle / back to back "
        "| back to back × quota / no quota |",
        "|---|---|---|---|---|---|",
        f"| none | — | {free['back_to_back_ms']:.0f} | {free['after_idle_ms']:.0f} | "
        f"{free['after_idle_ms'] / free['back_to_back_ms']:.2f} | 1.00 |",
    ]
    for cores, label, got in rows:
        table.append(
            f"| {cores:g} cores | {label} | {got['back_to_back_ms']:.0f} | {got['after_idle_ms']:.0f} | "
            f"{got['after_idle_ms'] / got['back_to_back_ms']:.2f} | "
            f"{got['back_to_back_ms'] * cores / free['back_to_back_ms']:.2f} |"
        )
    body = "\n".join(
        [
            "The testbed emulates a slower VM type with a cgroup CPU quota (issue 27 found the flaw below). One "
            "resnet18 training step (8 images of 64x64, one torch thread, as the multi-host benchmark's ranks) in "
            f"a process under each quota: medians of {args.steps} steps run back to back, and of {args.steps} "
            f"steps each after {args.idle_s:g} s idle (a rank waiting on its allreduce). A slower CPU takes the "
            "same time either way (ratio 1). With the kernel's 100 ms period (before), a step after idling runs "
            "on a whole period's quota at a full core, so the emulated VM is slow only while it computes "
            "without pause; `srifty profile` (which does) then overstated every real run's compute. srifty run's "
            "`cpu=`, the slow-host fault and the benchmarks' groups now use 10 ms periods "
            "(`srifty.runtime.cpu_quota`). The last column: the quota's cores at its measured speed, over one "
            "core (1: the quota gives its share exactly).",
            "",
            *table,
            "",
            "Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.quota_period` (as root). "
            f"Machine: {machine_description()}.",
        ]
    )
    write_section(SECTION, body)
    print(body)


if __name__ == "__main__":
    main()
