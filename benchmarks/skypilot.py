"""srifty and SkyPilot: `srifty launch --dryrun` on every example, and srifty as SkyPilot's time estimator.

1. ``srifty launch EXAMPLE --dryrun`` for every example spec, through SkyPilot 0.14.1's own dry run on an
   EMULATED cloud (tests/sky_stub.py: SkyPilot's optimizer, catalog and zone checks run for real; the cloud
   credentials, machine images and provisioning are stubbed; SkyPilot's catalog is seeded from srifty's
   bundled one). Wall time of each launch, the ``sky`` commands it issued, and its errors.
2. The SkyPilot #4714 candidates (1xH200:8, 2xH100:8, 4xA100:8, 8xL4:8, AWS us-east-1, on-demand) for a
   ResNet-50 and a BERT job: SkyPilot's choice with its default one-hour estimate, with srifty's estimator,
   and srifty's own plan over the same types (counts up to those), with srifty's predicted time and cost.

Run: ``flock /tmp/srifty-cpu.lock .venv/bin/python -m benchmarks.skypilot`` (needs .venv-sky: ``make test``
creates it). Writes the section "SkyPilot: launch dry runs and srifty as SkyPilot's estimator".
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, machine_description, write_section

EXAMPLES = ROOT / "examples"
SECTION = "SkyPilot: launch dry runs and srifty as SkyPilot's estimator"
INSTALL = "git+https://github.com/OWNER/srifty@COMMIT"
JOBS = {
    "ResNet-50": {"model": "resnet50", "global_batch": 1024, "iterations": 1000},
    "BERT-base": {"model": {"name": "hf:bert-base", "seq_len": 128}, "global_batch": 1024, "iterations": 1000},
}
TYPES = {"p5en.48xlarge": 1, "p5.48xlarge": 2, "p4d.24xlarge": 4, "g6.48xlarge": 8}  # the #4714 candidates


def launch_dryruns(work: Path) -> list[dict[str, Any]]:
    from tests.skypilot_env import make_sky_env

    rows = []
    for spec in sorted(EXAMPLES.glob("*.yaml")):
        sky = make_sky_env(work / spec.stem)
        env = {**os.environ, "SKY_RUNTIME_DIR": str(sky.runtime)}
        command = [sys.executable, "-m", "srifty.cli.main", "launch", f"examples/{spec.name}", "--dryrun",
                   "--sky", str(sky.sky), "--install", INSTALL, "--run-dir", str(work / spec.stem / "run"),
                   "--", "python", "train.py"]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
        wall_s = time.perf_counter() - start
        record_path = work / spec.stem / "run" / "launch.json"
        calls = json.loads(record_path.read_text())["calls"] if record_path.exists() else []
        last = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        rows.append({
            "spec": spec.name, "exit": done.returncode, "wall_s": wall_s, "calls": calls,
            "error": last[-1] if last else "",
        })  # fmt: skip
        print(f"{spec.name}: exit {done.returncode}, {wall_s:.1f} s, {len(calls)} sky calls", flush=True)
    return rows


def estimator_rows(work: Path) -> dict[str, Any]:
    from tests.skypilot_env import SKY_PYTHON, seed_catalog

    seed_catalog(work / "runtime")
    results = {}
    for job, fields in JOBS.items():
        spec = work / f"{job}.yaml"
        spec.write_text(json.dumps({**fields, "goal": "min_cost", "region": "us-east-1"}))
        env = {**os.environ, "SKY_RUNTIME_DIR": str(work / "runtime"), "HOME": str(work / "home"),
               "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
        script = ROOT / "tests" / "skypilot_estimator_check.py"
        done = subprocess.run([str(SKY_PYTHON), str(script), str(spec)], env=env, capture_output=True, text=True,
                              timeout=3600, cwd=ROOT)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"{job}: {done.stderr[-3000:]}")
        results[job] = json.loads(done.stdout.strip().splitlines()[-1])
        results[job]["own_plan"] = own_plan(fields)
    return results


def own_plan(fields: dict[str, Any]) -> dict[str, Any]:
    from srifty.plan.api import plan_job
    from srifty.spec import spec_from_mapping

    candidates = [{"instance_type": t, "market": "on_demand", "quota": q} for t, q in TYPES.items()]
    spec = spec_from_mapping({**fields, "goal": "min_cost", "region": "us-east-1", "candidates": candidates})
    plan, _ = plan_job(spec)
    assert plan.best is not None
    best = plan.best
    return {"config": best.config.notation(), "time_s": best.time_s, "cost_usd": best.cost_usd}


def render(launches: list[dict[str, Any]], estimates: dict[str, Any], elapsed_s: float) -> str:
    lines = [
        f"Machine: {machine_description()}. Command: `flock /tmp/srifty-cpu.lock .venv/bin/python -m "
        f"benchmarks.skypilot` ({elapsed_s:.0f} s). SkyPilot 0.14.1 in its own venv (`.venv-sky`), on an "
        "**EMULATED** cloud: `tests/sky_stub.py` runs SkyPilot's own task parsing and dry run (optimizer, "
        "catalog, zone names) with AWS enabled without credentials, as SkyPilot's dry-run tests stub it; "
        "SkyPilot's catalog is seeded from srifty's bundled AWS catalog (taken from SkyPilot's); each `sky` call "
        "is a fresh Python process importing SkyPilot (the real `sky` talks to a warm API server instead).",
        "",
        "### `srifty launch --dryrun` on every example",
        "",
        "| example | exit | wall s | sky calls | sky s | the commands (cluster names shortened) | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in launches:
        commands = "<br>".join(f"`{shorten(c['command'])}` ({c['wall_s']:.1f} s)" for c in row["calls"]) or "—"
        sky_s = sum(c["wall_s"] for c in row["calls"])
        lines.append(f"| {row['spec']} | {row['exit']} | {row['wall_s']:.1f} | {len(row['calls'])} | {sky_s:.1f} | "
                     f"{commands} | {row['error'].removeprefix('error: ')[:160] or '—'} |")  # fmt: skip
    lines += ["", "### SkyPilot #4714 candidates: SkyPilot's choice with and without srifty's estimator", ""]
    for job, result in estimates.items():
        lines += [f"**{job}** (global batch 1024, 1000 iterations, minimum cost, AWS us-east-1 on-demand):", ""]
        lines += ["| nodes | SkyPilot, default 1 h | SkyPilot + srifty's estimator | srifty's order (time s, cost $) |",
                  "|---|---|---|---|"]  # fmt: skip
        for n, row in result["per_nodes"].items():
            default = " > ".join(r["gpu"] for r in row["skypilot_default"])
            ours = " > ".join(r["gpu"] for r in row["skypilot_srifty"])
            srifty = " > ".join(f"{r['gpu']} ({r['time_s']:.0f}, {r['cost_usd']:.2f})" for r in row["srifty"])
            lines.append(f"| {n} | {default} | {ours} | {srifty} |")
        issue = result["issue_4714"]
        lines += ["", "| the #4714 candidates | SkyPilot's estimate, default 1 h | with srifty's estimator | srifty "
                  "predicts |", "|---|---|---|---|"]  # fmt: skip
        by_gpu = {r["gpu"]: r for r in issue["srifty"]}
        by_default = {r["gpu"]: r for r in issue["skypilot_default"]}
        by_ours = {r["gpu"]: r for r in issue["skypilot_srifty"]}
        for gpu in by_gpu:
            lines.append(f"| {by_gpu[gpu]['config']} | ${by_default[gpu]['skypilot_cost_usd']:.2f} (3600 s) | "
                         f"${by_ours[gpu]['skypilot_cost_usd']:.2f} ({by_ours[gpu]['skypilot_runtime_s']:.0f} s) | "
                         f"{by_gpu[gpu]['time_s']:.0f} s, ${by_gpu[gpu]['cost_usd']:.2f} |")  # fmt: skip
        plan = result["own_plan"]
        lines += ["", f"SkyPilot's choice: {issue['skypilot_default'][0]['gpu']} with the one-hour default, "
                      f"{issue['skypilot_srifty'][0]['gpu']} with srifty's estimator; srifty's own plan over the "
                      f"same types (counts up to 1/2/4/8): `{plan['config']}`, {plan['time_s']:.0f} s, "
                      f"${plan['cost_usd']:.2f}.", ""]  # fmt: skip
    return "\n".join(lines)


def shorten(command: str) -> str:
    words = shlex.split(command)
    return shlex.join(w.replace("srifty-", "") if not w.startswith("/") else Path(w).name for w in words)


def main() -> None:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="srifty-sky-bench-") as folder:
        work = Path(folder)
        launches = launch_dryruns(work / "launch")
        estimates = estimator_rows(work / "estimator")
    body = render(launches, estimates, time.perf_counter() - start)
    write_section(SECTION, body)
    print(body)


if __name__ == "__main__":
    main()
