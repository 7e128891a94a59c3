"""Walk the README as a new user would: every command of its code blocks, in order, on a fresh copy.

``python scripts/readme_walk.py [--keep DIR]`` copies the tracked files of this checkout (what a clone holds)
to a new folder and runs, there, each command the README shows, in the order it shows them, and `srifty plan`
on each job spec it shows. Every README command must have a rule below (a README that gains a command the walk
does not know fails it), and each rule says how the command runs:

* **as printed**: exactly the README's text;
* **shortened**: the same command with options that make it small (fewer seeds, one case, a short job), said
  in the table it prints;
* **stubbed**: something close that can run here (``make test`` as a dry run, since this walk runs inside it);
* **skipped**: with the reason (real VMs over ssh, root-only namespaces) and the test that runs that path.

The files the README leaves to the user are written first, small: ``job.yaml`` (the tiny example job, 60
iterations), ``train.py`` (``examples/train_tiny.py``) and ``hosts.txt`` (two hosts on 127.0.0.x). The copy
uses this checkout's virtual environment (``.venv`` is a link to it: creating one takes minutes) and imports
srifty from the copy's own ``src``. Exit code 0 when every command that runs ends as the README says.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SHORT_EVAL = "--methods srifty --allocations 1 --iters 5 --fit-trials 1"
ONE_CASE = "examples/case4-dlrm.yaml"


@dataclass(frozen=True)
class Rule:
    """How one README command runs: ``how`` is as printed, shortened, stubbed or skipped; ``run`` the command
    run (``None`` when skipped); ``why`` says what changed and why."""

    how: str
    run: str | None = None
    why: str = ""


#: Every command the README shows, by its text (comments and line continuations removed).
RULES: dict[str, Rule] = {
    "make demo": Rule(
        "stubbed",
        "make -o .venv/.stamp-core -o .venv/bin/python demo",
        "the demo target as is, in this checkout's virtual environment (creating one installs for minutes)",
    ),
    "make test": Rule(
        "stubbed", "make -n -o .venv/.stamp-dev -o .venv-sky/.stamp test", "a dry run: the walk runs inside it"
    ),
    ".venv/bin/srifty catalog list --gpu T4 --cloud aws": Rule("as printed"),
    ".venv/bin/srifty plan examples/case1-resnet50.yaml": Rule("as printed"),
    "srifty plan job.yaml --json plan.json": Rule("as printed"),
    "srifty run job.yaml --plan plan.json -- python train.py": Rule("as printed"),
    "srifty run examples/tiny-local.yaml -- python examples/train_tiny.py": Rule("as printed"),
    "srifty run examples/fig8-preemption.yaml --emulated": Rule("as printed"),
    "srifty report --timeline runs/latest/timeline.json --out run.html": Rule("as printed"),
    "srifty run job.yaml --hosts hosts.txt -- python train.py": Rule(
        "skipped", why="ssh to real VMs; the next command runs the same multi-host path with the local launcher"
    ),
    "srifty run job.yaml --hosts hosts.txt --fault vanish@50:1 --launcher local -- python train.py": Rule("as printed"),
    "srifty run job.yaml --hosts hosts.txt --fault slow@50:1:cpu=0.1 --launcher local --window 30 "
    "-- python train.py": Rule(
        "skipped", why="root-only CPU quotas and a 30 s window (tests/test_runtime_cluster.py runs a slow host)"
    ),
    "srifty run --resume runs/latest": Rule(
        "skipped", why="needs a killed controller (tests/test_runtime_cluster.py kills one and resumes it)"
    ),
    "srifty testbed up --name tb --hosts 4 --instance-type g4dn.xlarge": Rule(
        "skipped", why="root-only network namespaces (tests/test_network_testbed.py)"
    ),
    "srifty run examples/tiny-local.yaml --hosts examples/hosts-testbed.txt --launcher netns --testbed tb "
    "--config 4xg4dn.xlarge@16 --fault partition@100:2 -- python examples/train_tiny.py": Rule(
        "skipped", why="needs the testbed above (tests/test_runtime_cluster.py runs a partition on it)"
    ),
    "srifty eval cases --out results/": Rule(
        "shortened", f"srifty eval cases {ONE_CASE} {SHORT_EVAL} --out results/", "one case, srifty only, small fits"
    ),
    "srifty eval cases --seeds 10 --out results/": Rule(
        "shortened", f"srifty eval cases {ONE_CASE} --seeds 2 {SHORT_EVAL} --out results/", "2 seeds, one case"
    ),
    "srifty eval suite --seeds 10 --out results/": Rule(
        "shortened", f"srifty eval suite --seeds 1 --size 1 {SHORT_EVAL} --out results/", "one spec, one seed"
    ),
    "srifty eval accuracy --out results/": Rule(
        "shortened",
        "srifty eval accuracy --models resnet18 --types g4dn.xlarge --world-sizes 2 --max-batch 8 --iters 3 "
        "--fit-trials 1 --out results/",
        "one model, type and world size",
    ),
    "srifty report results/seeds.json --out report.html": Rule("as printed"),
}

HOSTS = "127.0.0.2 g4dn.xlarge spot\n127.0.0.3 g4dn.xlarge spot\n"


def readme_steps(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` in README order: ``("command", line)`` for each shell command and ``("spec", yaml)`` for
    each job spec (a YAML block that has a ``model``; a block without one adds its keys to the spec before)."""
    steps: list[tuple[str, str]] = []
    last_spec: dict[str, object] | None = None
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M):
        if lang == "yaml":
            data = yaml.safe_load(body)
            if "model" in data:
                last_spec = data
            elif last_spec is not None:
                data = {**last_spec, **data}
            steps.append(("spec", yaml.safe_dump(data)))
            continue
        joined = re.sub(r"\\\n\s*", "", body)
        for line in joined.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                steps.append(("command", " ".join(command.split())))
    return steps


def fresh_copy(into: Path) -> Path:
    """The tracked files of this checkout (a clone's content, with uncommitted edits) under ``into``."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, names.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (into / ".venv").symlink_to(Path(sys.prefix))
    return into


def user_files(folder: Path) -> None:
    """What the README leaves to the user, small: a job, a training script, a host file."""
    tiny = yaml.safe_load((folder / "examples" / "tiny-local.yaml").read_text())
    tiny["model"]["profiles"] = ["examples/profiles/" + Path(p).name for p in tiny["model"]["profiles"]]
    (folder / "job.yaml").write_text(yaml.safe_dump({**tiny, "iterations": 60}))
    shutil.copy2(folder / "examples" / "train_tiny.py", folder / "train.py")
    (folder / "hosts.txt").write_text(HOSTS)


def run(command: str, folder: Path, env: dict[str, str]) -> tuple[int, float, str]:
    started = time.perf_counter()
    done = subprocess.run(shlex.split(command), cwd=folder, env=env, capture_output=True, text=True)
    return done.returncode, time.perf_counter() - started, (done.stdout + done.stderr)[-3000:]


def walk(folder: Path) -> bool:
    """Run every README step in ``folder``; print a table; whether all passed."""
    env = dict(os.environ)
    env["PATH"] = f"{folder / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(folder / "src")
    user_files(folder)
    ok = True
    rows = []
    for index, (kind, text) in enumerate(readme_steps((folder / "README.md").read_text())):
        if kind == "spec":
            path = folder / f"readme-spec-{index}.yaml"
            path.write_text(text)
            rule = Rule("as printed", f"srifty plan {path.name}", "a job spec the README shows")
            shown = f"(spec) {text.splitlines()[0]} …"
        else:
            shown = text
            if text not in RULES:
                rows.append((shown, "unknown", "—", "the README shows a command the walk has no rule for"))
                ok = False
                continue
            rule = RULES[text]
        if rule.how == "skipped":
            rows.append((shown, "skipped", "—", rule.why))
            continue
        command = rule.run or text
        code, seconds, output = run(command, folder, env)
        passed = code == 0
        ok &= passed
        note = rule.why if passed else f"exit {code}: {output.strip().splitlines()[-1] if output.strip() else ''}"
        rows.append((shown, rule.how if passed else "FAILED", f"{seconds:.1f} s", note))
        if not passed:
            print(f"--- {command}\n{output}", file=sys.stderr)
    for shown, how, took, note in rows:
        print(f"{how:10} {took:>8}  {shown}" + (f"  [{note}]" if note else ""))
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="Walk in this (new) folder and keep it.")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True)
        sys.exit(0 if walk(fresh_copy(args.keep)) else 1)
    with tempfile.TemporaryDirectory(prefix="srifty-readme-") as tmp:
        sys.exit(0 if walk(fresh_copy(Path(tmp))) else 1)


if __name__ == "__main__":
    main()
