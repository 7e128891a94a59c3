"""``srifty run --hosts`` on a 4-host network testbed, under each fault a cloud delivers.

Real torchrun on every host namespace, real gloo DDP across tc-shaped links, heartbeats and progress over
HTTP to the controller, `examples/train_tiny.py` paced at 0.05 s per step. Scenarios: no fault; a host
vanishes (its processes SIGKILLed, its link down); a partition (link down, processes alive); the controller
itself killed with SIGKILL and resumed with ``srifty run --resume``; with the netns launcher and, where
sshd is installed, the ssh launcher (a real sshd per namespace). For each: detection time (fault to the
host declared lost), recovery time (fault to the first iteration after the relaunch), iterations lost
(rolled back to the last checkpoint), the final iteration count, how far the losses after the relaunch are
from the uninterrupted run's at the same iterations (the data is deterministic per step and gradients are
reweighted, so they agree up to floating point), and processes left behind.

Needs root and iproute2. Run: ``flock /tmp/srifty-cpu.lock python -m benchmarks.multihost`` (about 4 min).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import ROOT, machine_description, write_section
from srifty.network import testbed as tb
from srifty.network.testbed import down, family_from_catalog, up
from srifty.processes import pids_marked

ITERATIONS = 200
CKPT_EVERY = 20
FAULT_AT = 70
PACE_S = "0.05"
RESULTS = ROOT / "benchmarks" / "results" / "multihost.json"
#: The line each training example prints per iteration on rank 0 (the workers' own record of their progress).
ITERATION_LINE = re.compile(r"^iteration=(\d+) rank=0 time=([\d.]+)", re.M)


@dataclass(frozen=True)
class Job:
    """What one scenario runs: the configuration, the training command and how the run is watched."""

    config: str = "4xg4dn.xlarge@16"
    command: tuple[str, ...] = ("python", "examples/train_tiny.py")
    env: dict[str, str] = field(default_factory=lambda: {"TRAIN_TINY_STEP_S": PACE_S})
    iterations: int = ITERATIONS
    ckpt_every: int = CKPT_EVERY
    fault_at: int = FAULT_AT
    heartbeat_timeout_s: float = 3.0
    lease_s: float = 8.0
    #: After the checkpoint before ``fault_at``, how long the controller kill waits (the workers run on).
    kill_after_s: float = 0.4
    #: More ``srifty run`` arguments (``--window``).
    extra_args: tuple[str, ...] = ()


TINY = Job()
#: The slow fault: host 2's CPU quota drops to 0.1 cores while each step does 0.03 s of CPU work (about 0.5 s
#: of compute per step there, about ten times the others'); the job's deadline (SLOW_DEADLINE_S) is met on
#: schedule and missed at the slowed pace; the 8 s window holds the 5 iterations a projection needs. Until
#: December 2026 the quota was 0.02 cores (0.01 s of work): on a slower machine the host's keep-alive thread
#: then went silent past the heartbeat timeout and the host counted as lost, not slow.
SLOW_JOB = Job(env={"TRAIN_TINY_STEP_S": PACE_S, "TRAIN_TINY_CPU_S": "0.03"}, extra_args=("--window", "8"))
SLOW_CORES = 0.1
SLOW_FAULT = f"slow@{FAULT_AT}:2:cpu={SLOW_CORES:g}"
SLOW_DEADLINE_S = 45.0


def worker_iterations(run_dir: Path) -> list[tuple[int, float]]:
    """``(iteration, unix time)`` of every iteration rank 0 printed in the hosts' logs, in the order found."""
    found = []
    for log in sorted((run_dir / "hosts").glob("*.log")):
        text = log.read_text(encoding="utf-8", errors="replace")
        found += [(int(n), float(t)) for n, t in ITERATION_LINE.findall(text)]
    return found


def _spec(folder: Path, deadline_s: float | None = None) -> Path:
    doc = yaml.safe_load((ROOT / "examples" / "tiny-local.yaml").read_text())
    doc["model"]["profiles"] = [str(ROOT / "examples" / p) for p in doc["model"]["profiles"]]
    doc.update(iterations=ITERATIONS, goal="min_time")
    if deadline_s is not None:
        doc["deadline_s"] = deadline_s
    path = folder / ("job.yaml" if deadline_s is None else "job-deadline.yaml")
    path.write_text(yaml.safe_dump(doc))
    return path


def _namespace_pids(namespaces: list[str], keep: set[int]) -> list[int]:
    found = []
    for ns in namespaces:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False).stdout
        found += [int(p) for p in out.split() if int(p) not in keep]
    return found


def _srifty_run(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "srifty.cli.main", "run", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def run_scenario(
    name: str,
    spec: Path,
    hostfile: Path,
    folder: Path,
    launcher: list[str],
    fault: str | None,
    kill: bool,
    job: Job = TINY,
) -> dict[str, Any]:
    """One run; returns its timeline, decisions and wall times."""
    run_dir = folder / name
    env = {**os.environ, **job.env}
    args = [str(spec), "--hosts", str(hostfile), *launcher, "--config", job.config, "--run-dir", str(run_dir)]
    args += ["--ckpt-every", str(job.ckpt_every), "--heartbeat-timeout", f"{job.heartbeat_timeout_s:g}"]
    args += ["--lease", f"{job.lease_s:g}", *(x for var in job.env for x in ("--forward-env", var))]
    args += ["--fault", fault] if fault else []
    args += job.extra_args
    started = time.time()
    proc = _srifty_run([*args, "--", *job.command], env)
    killed_at = None
    if kill:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                step = json.loads((run_dir / "run.json").read_text()).get("checkpoint_step") or 0
            except (OSError, ValueError):
                step = 0
            if step >= job.fault_at - job.fault_at % job.ckpt_every:
                break
            time.sleep(0.05)
        time.sleep(job.kill_after_s)  # a few iterations past the checkpoint
        killed_at = time.time()
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        proc = _srifty_run(["--resume", str(run_dir)], env)
    _, err = proc.communicate(timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed: {err.decode()[-2000:]}")
    state = json.loads((run_dir / "run.json").read_text())
    return {
        "name": name,
        "timeline": json.loads((run_dir / "timeline.json").read_text()),
        "decisions": [json.loads(x) for x in (run_dir / "decisions.jsonl").read_text().splitlines()],
        "started_unix": started,
        "run_started_unix": state["started_unix"],
        "killed_unix": killed_at,
        "mark": state["mark"],
        "wall_s": time.time() - started,
        "worker_iterations": worker_iterations(run_dir),
    }


def measure(run: dict[str, Any], baseline: dict[int, float], iterations_total: int = ITERATIONS) -> dict[str, Any]:
    """Detection, recovery, iterations lost, final count, loss agreement with the uninterrupted run."""
    timeline = run["timeline"]
    iterations = [e for e in timeline if e["event"] == "iteration"]
    fault = next((e for e in timeline if e["event"].startswith("inject_")), None)
    if run["killed_unix"] is not None:
        fault_s = run["killed_unix"] - run["run_started_unix"]
    else:
        fault_s = fault["time_s"] if fault else None
    # detection: the host declared lost; for a slow host, the first thing srifty did about it (set it aside, or
    # re-plan or keep because the window's projection missed the deadline)
    acted = (
        ("host_lost", "slow_host", "switch", "keep") if fault and fault["event"] == "inject_slow" else ("host_lost",)
    )
    lost = next((e for e in timeline if e["event"] in acted and (fault_s is None or e["time_s"] >= fault_s)), None)
    launches = [e for e in timeline if e["event"] == "launch"]
    relaunch_s = launches[-1]["time_s"] if len(launches) > 1 else None
    first_after = next((e for e in iterations if relaunch_s is not None and e["time_s"] > relaunch_s), None)
    rollbacks = [e["from_iteration"] - e["to_iteration"] for e in timeline if e["event"] == "rollback"]
    resume = next((d for d in run["decisions"] if d["action"] == "resume"), None)
    printed: list[int] = []
    if resume is not None:
        # the killed controller recorded progress only up to its last save; the workers ran on until the kill:
        # count from their own per-iteration lines (rank 0), else from what the controller had recorded
        killed = run["killed_unix"]
        printed = [n for n, t in run.get("worker_iterations", []) if killed is not None and t < killed]
        last_seen = max(printed, default=max((e["iteration"] for e in iterations if e["time_s"] < fault_s), default=0))
        rollbacks.append(max(0, last_seen - resume["iteration"]))
    counted_from = ("workers" if printed else "controller") if resume is not None else None
    after = [e for e in iterations if relaunch_s is not None and e["time_s"] > relaunch_s]
    before = [e for e in iterations if fault_s is not None and e["time_s"] <= fault_s]
    same_world = len(launches) > 1 and launches[-1]["config"] == launches[0]["config"]
    # rank 0 reports the loss of its own slice: comparable with the uninterrupted run on the same world only
    diffs = [abs(e["loss"] - baseline[e["iteration"]]) for e in after if e["iteration"] in baseline and same_world]
    first = [abs(e["loss"] - baseline[e["iteration"]]) for e in after[:5] if e["iteration"] in baseline and same_world]
    # what was done: the controller's record, and rank 0's own lines (a killed controller never recorded the
    # iterations after its last save, which the workers did and the resumed run does not redo)
    done = {e["iteration"] for e in iterations} | {n for n, _ in run.get("worker_iterations", [])}
    return {
        "detection_s": (lost["time_s"] - fault_s) if lost and fault_s is not None else None,
        "recovery_s": (first_after["time_s"] - fault_s) if first_after and fault_s is not None else None,
        "iterations_lost": sum(rollbacks),
        "final_iteration": max(done),
        "all_iterations_done": done >= set(range(min(done), iterations_total + 1)),
        "max_loss_diff": max(diffs) if diffs else None,
        "max_loss_diff_first5": max(first) if first else None,
        "kill_lost_counted_from": counted_from,
        "loss_first": statistics.fmean(e["loss"] for e in iterations[:5]),
        "loss_before": statistics.fmean(e["loss"] for e in before[-5:]) if before else None,
        "loss_after": statistics.fmean(e["loss"] for e in after[:5]) if after else None,
        "configs": [e["config"] for e in launches],
        "actions": [d["action"] for d in run["decisions"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3, help="runs per scenario (medians are reported)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--from-results", action="store_true", help="only rewrite the BENCHMARKS.md section from the saved results"
    )
    parser.add_argument(
        "--only", nargs="+", help="run only these scenarios and replace their rows in the saved results"
    )
    args = parser.parse_args()
    if args.from_results:
        saved = json.loads(RESULTS.read_text())
        body = _table(saved["runs"], saved["elapsed_s"], saved["machine"], rerun_note(saved.get("reruns", [])))
        write_section("Multi-host runs under faults (testbed)", body)
        return
    started = time.perf_counter()
    name = f"bm{os.getpid() % 10000}"
    sys.path.insert(0, str(ROOT))
    from tests.sshd import sshd_missing, start_sshd

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="srifty-multihost-") as tmp:
        folder = Path(tmp)
        spec = _spec(folder)
        slow_spec = _spec(folder, SLOW_DEADLINE_S)
        state = up(name, 4, family_from_catalog("g4dn.xlarge"))
        servers = None
        try:
            tb.attach_controller(name)
            namespaces = tb.host_namespaces(state)
            hostfile = folder / "hosts.txt"
            hostfile.write_text(tb.hostfile_text(state))
            netns = ["--launcher", "netns", "--testbed", name]
            scenarios = [("none", netns, None, False), ("vanish", netns, f"vanish@{FAULT_AT}:2", False)]
            scenarios += [
                ("partition", netns, f"partition@{FAULT_AT}:2", False),
                ("controller kill -9", netns, None, True),
                ("slow", netns, SLOW_FAULT, False),
            ]
            if sshd_missing() is None:
                servers = start_sshd(namespaces, folder / "ssh")
                ssh = ["--launcher", "ssh", "--testbed", name, "--ssh-key", str(servers.key), "--ssh-user", "root"]
                ssh += ["--ssh-port", "2222", *(x for o in servers.options for x in ("--ssh-option", o))]
                scenarios += [("none (ssh)", ssh, None, False)]
                scenarios += [("vanish (ssh)", ssh, f"vanish@{FAULT_AT}:2", False)]
                scenarios += [("partition (ssh)", ssh, f"partition@{FAULT_AT}:2", False)]
            baseline: dict[int, float] = {}
            if args.only:
                unknown = set(args.only) - {s[0] for s in scenarios}
                if unknown:
                    raise SystemExit(f"--only: no scenario {sorted(unknown)}; known: {[s[0] for s in scenarios]}")
            for number, (label, launcher, fault, kill) in enumerate(scenarios):
                if args.only and label not in args.only:
                    continue
                job, job_spec = (SLOW_JOB, slow_spec) if label == "slow" else (TINY, spec)
                for repeat in range(args.repeats):
                    if servers is not None and "ssh" in label:  # a vanished host's sshd is gone: start them again
                        servers.stop()
                        servers = start_sshd(namespaces, folder / f"ssh{label[:3]}{repeat}")
                        launcher = [*launcher]
                        launcher[launcher.index("--ssh-key") + 1] = str(servers.key)
                    run = run_scenario(f"s{number}-{repeat}", job_spec, hostfile, folder, launcher, fault, kill, job)
                    if label == "none" and not baseline:
                        baseline = {e["iteration"]: e["loss"] for e in run["timeline"] if e["event"] == "iteration"}
                    keep = {p.pid for p in servers.guard.children} if servers is not None else set()
                    time.sleep(9)  # a partitioned ssh host's workers end themselves within their 8 s lease
                    left = _namespace_pids(list(namespaces.values()), keep) + pids_marked(run["mark"])
                    row = {"scenario": label, "repeat": repeat, "leftovers": len(left), **measure(run, baseline)}
                    results.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            if servers is not None:
                servers.stop()
            tb.detach_controller(name)
            down(name)
    if not args.no_write:
        saved = {"elapsed_s": time.perf_counter() - started, "machine": machine_description(), "runs": results}
        if args.only:  # keep the other scenarios' rows from the last full run (or the partial runs since)
            old = json.loads(RESULTS.read_text())
            order = [s for s in dict.fromkeys(r["scenario"] for r in old["runs"])] + list(args.only)
            kept = [r for r in old["runs"] if r["scenario"] not in args.only]
            runs = sorted(kept + results, key=lambda r: order.index(r["scenario"]))
            rerun = {"scenarios": list(args.only), "elapsed_s": saved["elapsed_s"], "machine": saved["machine"]}
            saved = {**old, "runs": runs, "reruns": [*old.get("reruns", []), rerun]}
            saved.pop("note", None)
        RESULTS.write_text(json.dumps(saved, indent=1) + "\n")
        body = _table(saved["runs"], saved["elapsed_s"], saved["machine"], rerun_note(saved.get("reruns", [])))
        write_section("Multi-host runs under faults (testbed)", body)
    print(f"done in {time.perf_counter() - started:.0f} s")


def rerun_note(reruns: list[dict[str, Any]]) -> str:
    """Which rows come from which ``--only`` run (a later run of a scenario replaces an earlier one's row), with
    what a run replaced where its entry says (``before``, written by hand); empty when every row is from the full
    run."""
    parts, later = [], set()
    for rerun in reversed(reruns):
        still = [s for s in rerun["scenarios"] if s not in later]
        later.update(rerun["scenarios"])
        if still:
            before = f"; before it, {rerun['before']}" if rerun.get("before") else ""
            parts.append(f"{', '.join(still)} with `--only` ({rerun['elapsed_s']:.0f} s, {rerun['machine']}{before})")
    return f"partly rerun: {'; '.join(reversed(parts))}; the other rows from the run below" if parts else ""


def _median(rows: list[dict[str, Any]], key: str, digits: int = 1) -> str:
    values = [r[key] for r in rows if r[key] is not None]
    return f"{statistics.median(values):.{digits}f}" if values else "—"


def _table(results: list[dict[str, Any]], elapsed_s: float, machine: str, note: str = "") -> str:
    lines = [
        "| scenario | runs | detection (s) | recovery (s) | iterations lost | final iteration | every iteration "
        "done | loss: start / before fault / after relaunch | max \\|Δloss\\| vs uninterrupted | leftover "
        "processes | configurations |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label in dict.fromkeys(r["scenario"] for r in results):
        rows = [r for r in results if r["scenario"] == label]
        diffs = [r["max_loss_diff"] for r in rows if r["max_loss_diff"] is not None]
        lost = ", ".join(str(r["iterations_lost"]) for r in rows)
        final = ", ".join(sorted({str(r["final_iteration"]) for r in rows}))
        losses = " / ".join(_median(rows, k, 2) for k in ("loss_first", "loss_before", "loss_after"))
        lines.append(
            f"| {label} | {len(rows)} | {_median(rows, 'detection_s')} | {_median(rows, 'recovery_s')} | {lost} | "
            f"{final} | {sum(r['all_iterations_done'] for r in rows)}/{len(rows)} | {losses} | "
            f"{f'{max(diffs):.1e}' if diffs else '—'} | {sum(r['leftovers'] for r in rows)} | "
            f"{' → '.join(rows[0]['configs'])} |"
        )
    runs = max(Counter(r["scenario"] for r in results).values())
    if any(r.get("kill_lost_counted_from") == "workers" for r in results):
        kill_count = (
            "for the controller kill, from the highest iteration rank 0 printed in its host's log before the "
            "SIGKILL, the workers' own record, down to the checkpoint `--resume` continued from"
        )
    else:
        kill_count = (
            "for the controller kill, what the killed controller had recorded, which ends at its last checkpoint, "
            "so it undercounts: the workers ran about 0.4 s, some 8 iterations, past it before the kill"
        )
    return "\n".join(
        [
            "**Network testbed: 4 hosts as network namespaces on one machine (emulated g4dn.xlarge links, tc-shaped; "
            "no added latency), real torchrun and gloo DDP between them.** `examples/train_tiny.py` (a tiny MLP), "
            f"global batch 64, {ITERATIONS} iterations at 0.05 s per step, checkpoint every {CKPT_EVERY}, starting "
            f"on `4xg4dn.xlarge@16`; the fault hits host 2 at iteration {FAULT_AT} (the controller kill: a few "
            f"iterations after the checkpoint at {FAULT_AT - FAULT_AT % CKPT_EVERY}). Heartbeat timeout 3 s, "
            "worker lease 8 s, goal min_time (re-plans over the hosts left). Detection: fault to the host declared "
            "lost (a vanished host: its launch killed or its ssh connection lost; a partition: its heartbeats "
            "stop while the others' arrive). Recovery: fault to the first iteration after the relaunch (for the "
            "controller kill: SIGKILL to the first iteration under `srifty run --resume`, started at once). "
            f"Iterations lost: rolled back to the last checkpoint (one entry per run; {kill_count}). Loss: rank 0's "
            "loss, mean of "
            "the first 5 iterations, the last 5 before the fault and the first 5 after the relaunch (medians over "
            "runs; continuity means no jump back towards the start; rank 0 reports its own slice, so a smaller "
            "world's loss is over more samples). Δloss: on the same world size only (the controller kill), the "
            "resumed run's loss against the uninterrupted run's at the same iteration (same data per step: equal "
            "up to floating point). Leftover processes: what remained in the testbed's "
            "namespaces (sshd aside) or carried the run's mark, 9 s after the run (after the workers' 8 s lease).",
            "",
            *lines,
            "",
            f"Slow: each step also does {SLOW_JOB.env['TRAIN_TINY_CPU_S']} s of CPU work (`TRAIN_TINY_CPU_S`) and "
            f"reports its compute time; at iteration {FAULT_AT} host 2's CPU quota drops to {SLOW_CORES:g} cores "
            f"(`--fault {SLOW_FAULT}`, a cgroup on this "
            f"machine); the job has a deadline of {SLOW_DEADLINE_S:g} s (met on schedule, missed at the slowed "
            "pace) and an 8 s throughput window. Detection: the fault to srifty's first decision about it (the "
            "host set aside as slow once the window's optimistic bound misses the deadline). An ssh partition's "
            "leftover (the cut-off connection's sshd session) is dropped by the test sshd's `ClientAliveInterval 2`.",
            "",
            "A real model (resnet18), the slow-host fault and the predicted against measured multi-host iteration "
            'time: section "Multi-host iteration-time prediction and faults with resnet18 (testbed)".'
            + (f" This table is {note}." if note else ""),
            "",
            f"Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.multihost --repeats {runs}` "
            f"({elapsed_s:.0f} s). Machine: {machine}.",
        ]
    )


if __name__ == "__main__":
    main()
