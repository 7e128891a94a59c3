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

``--quick`` (the walk ``make test`` runs, tests/test_readme_walk.py) still checks that every README command has a
rule, but leaves each command whose rule names a test that runs the same path (``covered``) to that test, and
plans the README's job specs in one process: it runs the README's own workflow (plan, ``plan --json``, ``run
--plan``, ``report --timeline``) in about a fifth of the full walk's time. The full walk is run by hand.
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
ZONE_TRACES = " ".join(
    f"--trace src/srifty/spot/data/traces/availability-1node-aws-02-15-2023/us-west-2{zone}_v100_1.json"
    for zone in "abc"
)


@dataclass(frozen=True)
class Rule:
    """How one README command runs: ``how`` is as printed, shortened, stubbed or skipped; ``run`` the command
    run (``None`` when skipped); ``why`` says what changed and why; ``covered`` names the test that runs the
    same path, where the quick walk (``--quick``) leaves the command to it (empty: the quick walk runs it too)."""

    how: str
    run: str | None = None
    why: str = ""
    covered: str = ""


#: Every command the README shows, by its text (comments and line continuations removed).
RULES: dict[str, Rule] = {
    "make demo": Rule(
        "stubbed",
        "make -o .venv/.stamp-core -o .venv/bin/python demo",
        "the demo target as is, in this checkout's virtual environment (creating one installs for minutes)",
        covered="tests/test_output_plain.py plans examples/case5-bert.yaml, the demo's spec",
    ),
    "make test": Rule(
        "stubbed", "make -n -o .venv/.stamp-dev -o .venv-sky/.stamp test", "a dry run: the walk runs inside it"
    ),
    ".venv/bin/srifty catalog list --gpu T4 --cloud aws": Rule(
        "as printed", covered="tests/test_cli.py::test_catalog_list_t4_aws_shows_g4dn_with_prices"
    ),
    ".venv/bin/srifty plan examples/case1-resnet50.yaml": Rule("as printed"),
    "srifty plan job.yaml --json plan.json": Rule("as printed"),
    "srifty run job.yaml --plan plan.json -- python train.py": Rule("as printed"),
    "srifty run examples/tiny-local.yaml -- python examples/train_tiny.py": Rule(
        "as printed",
        covered="tests/test_runtime_local.py runs this example; tests/test_run_polish.py a second run in a used folder",
    ),
    "srifty run examples/fig8-preemption.yaml --emulated": Rule("as printed", covered="tests/test_scenario.py"),
    "srifty report --timeline runs/latest/timeline.json --out run.html": Rule("as printed"),
    "srifty run job.yaml --hosts hosts.txt -- python train.py": Rule(
        "skipped", why="ssh to real VMs; the next command runs the same multi-host path with the local launcher"
    ),
    "srifty run job.yaml --hosts hosts.txt --fault vanish@50:1 --launcher local -- python train.py": Rule(
        "as printed", covered="tests/test_runtime_cluster.py::test_local_hosts_lose_one_and_finish_on_the_others"
    ),
    "srifty run job.yaml --hosts hosts.txt --fault slow@50:1:cpu=0.1 --launcher local --window 30 "
    "-- python train.py": Rule(
        "skipped", why="root-only CPU quotas and a 30 s window (tests/test_runtime_cluster.py runs a slow host)"
    ),
    "srifty run --resume runs/latest": Rule(
        "skipped",
        why="needs an interrupted run (tests/test_run_interrupt.py stops one with Ctrl-C and resumes it; "
        "tests/test_runtime_cluster.py kills a controller and resumes it)",
    ),
    "srifty testbed up --name tb --hosts 4 --instance-type g4dn.xlarge": Rule(
        "skipped", why="root-only network namespaces (tests/test_network_testbed.py)"
    ),
    "srifty run examples/tiny-local.yaml --hosts examples/hosts-testbed.txt --launcher netns --testbed tb "
    "--config 4xg4dn.xlarge@16 --fault partition@100:2 -- python examples/train_tiny.py": Rule(
        "skipped", why="needs the testbed above (tests/test_runtime_cluster.py runs a partition on it)"
    ),
    "srifty eval cases --out results/": Rule(
        "shortened",
        f"srifty eval cases {ONE_CASE} {SHORT_EVAL} --out results/",
        "one case, srifty only, small fits",
        covered="tests/test_evaluate.py",
    ),
    "srifty eval cases --seeds 10 --out results/": Rule(
        "shortened",
        f"srifty eval cases {ONE_CASE} --seeds 2 {SHORT_EVAL} --out results/",
        "2 seeds, one case",
        covered="tests/test_evaluate.py",
    ),
    "srifty eval suite --seeds 10 --out results/": Rule(
        "shortened",
        f"srifty eval suite --seeds 1 --size 1 {SHORT_EVAL} --out results/",
        "one spec, one seed",
        covered="tests/test_evaluate.py",
    ),
    "srifty eval suite --seeds 10 --jobs 2 --out results/": Rule(
        "shortened",
        f"srifty eval suite --seeds 2 --jobs 2 --size 1 {SHORT_EVAL} --out results/",
        "one spec, two seeds at once",
        covered="tests/test_evaluate.py",
    ),
    "srifty eval accuracy --out results/": Rule(
        "shortened",
        "srifty eval accuracy --models resnet18 --types g4dn.xlarge --world-sizes 2 --max-batch 8 --iters 3 "
        "--fit-trials 1 --out results/",
        "one model, type and world size",
        covered="tests/test_evaluate.py",
    ),
    "srifty report results/seeds.json --out report.html": Rule("as printed", covered="tests/test_report.py"),
    "python3 -m venv ~/.sky-venv && ~/.sky-venv/bin/pip install 'skypilot[aws]==0.14.1' "
    "&& ~/.sky-venv/bin/sky check": Rule(
        "skipped",
        why="installs SkyPilot from the network (make test builds .venv-sky from local disk for tests/test_export.py)",
    ),
    "srifty launch job.yaml --sky ~/.sky-venv/bin/sky --install git+https://github.com/OWNER/srifty@COMMIT --dryrun "
    "-- python train.py": Rule(
        "skipped", why="SkyPilot with cloud credentials (tests/test_launch.py dry-runs it with a SkyPilot stand-in)"
    ),
    "srifty launch job.yaml --sky ~/.sky-venv/bin/sky --install dist/srifty-0.1.0-py3-none-any.whl "
    "-- python train.py": Rule(
        "skipped", why="rents VMs (tests/test_launch.py launches and tears down through a SkyPilot stand-in)"
    ),
    "srifty launch --down runs/srifty-job": Rule("skipped", why="needs the launch above (tests/test_launch.py)"),
    "~/.sky-venv/bin/pip install git+https://github.com/OWNER/srifty@COMMIT": Rule(
        "skipped", why="a placeholder URL and the network"
    ),
    "~/.sky-venv/bin/python examples/skypilot_estimator.py examples/auto-resnet50.yaml 2": Rule(
        "skipped", why="needs ~/.sky-venv (tests/test_skypilot_estimator.py)"
    ),
    "srifty eval spot examples/spot-resnet50-tight.yaml --trace src/srifty/spot/data/traces/"
    "preemption-4node-aws-08-03-2023/us-west-2c_v100_1.json --starts 50": Rule(
        "shortened",
        "srifty eval spot examples/spot-resnet50-tight.yaml --trace src/srifty/spot/data/traces/"
        "preemption-4node-aws-08-03-2023/us-west-2c_v100_1.json --starts 2",
        "2 start times",
        covered="tests/test_spot_replay.py",
    ),
    f"srifty eval spot examples/spot-vgg16-medium.yaml --starts 30 {ZONE_TRACES}": Rule(
        "shortened",
        f"srifty eval spot examples/spot-vgg16-medium.yaml --starts 3 {ZONE_TRACES}",
        "3 start times",
        covered="tests/test_spot_replay.py",
    ),
}

HOSTS = "127.0.0.2 g4dn.xlarge spot\n127.0.0.3 g4dn.xlarge spot\n"

#: README job specs (by model) that srifty plans as infeasible, exit 2 naming the binding constraint: reported
#: in the table, not failed. None today: the inception_v3 spec (infeasible at 90 % confidence with spot VMs
#: alone since issue 23's spot model) names on-demand p3.8xlarge too.
KNOWN_INFEASIBLE: dict[str, str] = {}


def known_infeasible(spec_path: Path) -> str:
    """Why the README spec at ``spec_path`` is known to plan as infeasible, or ``""``."""
    model = yaml.safe_load(spec_path.read_text()).get("model")
    return KNOWN_INFEASIBLE.get(model, "") if isinstance(model, str) else ""


def readme_steps(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` in README order: ``("command", line)`` for each shell command and ``("spec", yaml)`` for
    each job spec (a YAML block that has a ``model`` and a ``goal``; any other block adds its keys to the spec
    before, all but a ``model`` line, which shows the fields with placeholders such as ``profiles: [...]``)."""
    steps: list[tuple[str, str]] = []
    last_spec: dict[str, object] | None = None
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M):
        if lang == "yaml":
            data = yaml.safe_load(body)
            if "model" in data and "goal" in data:
                last_spec = data
            elif last_spec is not None:
                data = {**last_spec, **{k: v for k, v in data.items() if k != "model"}}
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


#: The longest one README command may take here before the walk gives up on it.
STEP_TIMEOUT_S = 600.0


def run(command: str, folder: Path, env: dict[str, str]) -> tuple[int, float, str]:
    """Run one command (an argument vector: no shell) under a process guard, so that whatever it started
    is ended when it finishes, times out, or the walk itself is stopped."""
    from srifty.processes import ProcessGuard, signals_as_exit

    started = time.perf_counter()
    with signals_as_exit(), ProcessGuard("readme") as guard:
        proc = guard.popen(shlex.split(command), cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            output, _ = proc.communicate(timeout=STEP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return 124, time.perf_counter() - started, f"timed out after {STEP_TIMEOUT_S:.0f} s"
    text = output.decode("utf-8", errors="replace")
    return proc.returncode, time.perf_counter() - started, text[-3000:]


def plan_specs(paths: list[str]) -> int:
    """``srifty plan PATH`` for each path in this one process (the quick walk's README specs: one start-up
    instead of one per spec); prints each exit code; 0 when every plan succeeded."""
    from srifty.cli.main import run as srifty

    failed = 0
    for path in paths:
        try:
            srifty(["plan", path])
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        why = known_infeasible(Path(path)) if code == 2 else ""
        print(f"exit {code}: srifty plan {path}" + (f" ({why})" if why else ""), flush=True)
        failed += code != 0 and not why
    return 1 if failed else 0


def walk(folder: Path, quick: bool = False) -> bool:
    """Run every README step in ``folder``; print a table; whether all passed. ``quick``: leave each command
    whose rule names a covering test to that test, and plan the README's job specs in one process."""
    env = dict(os.environ)
    env["PATH"] = f"{folder / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(folder / "src")
    user_files(folder)
    ok = True
    rows = []
    steps = readme_steps((folder / "README.md").read_text())
    specs = [f"readme-spec-{index}.yaml" for index, (kind, _) in enumerate(steps) if kind == "spec"]
    for index, (kind, text) in enumerate(steps):
        if kind == "spec":
            (folder / f"readme-spec-{index}.yaml").write_text(text)
    for index, (kind, text) in enumerate(steps):
        if kind == "spec":
            path = folder / f"readme-spec-{index}.yaml"
            rule = Rule("as printed", f"srifty plan {path.name}", "a job spec the README shows")
            shown = f"(spec) {text.splitlines()[0]} …"
            if quick:
                if path.name != specs[0]:
                    continue
                walker = folder / "scripts" / "readme_walk.py"
                rule = Rule("as printed", f"python {walker} --plan-specs {' '.join(specs)}", "in one process")
                shown = f"(specs) srifty plan on the {len(specs)} job specs the README shows"
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
        if quick and rule.covered:
            rows.append((shown, "covered", "—", rule.covered))
            continue
        command = rule.run or text
        code, took_s, output = run(command, folder, env)
        passed = code == 0
        if kind == "spec" and not quick and code == 2 and known_infeasible(folder / f"readme-spec-{index}.yaml"):
            passed, rule = True, Rule(rule.how, rule.run, known_infeasible(folder / f"readme-spec-{index}.yaml"))
        if kind == "spec" and quick and passed and "known infeasible" not in rule.why:
            infeasible = [line for line in output.splitlines() if line.startswith("exit 2")]
            rule = Rule(rule.how, rule.run, "; ".join([rule.why, *infeasible]))
        ok &= passed
        note = rule.why if passed else f"exit {code}: {output.strip().splitlines()[-1] if output.strip() else ''}"
        rows.append((shown, rule.how if passed else "FAILED", f"{took_s:.1f} s", note))
        if not passed:
            print(f"--- {command}\n{output}", file=sys.stderr)
    for shown, how, took, note in rows:
        print(f"{how:10} {took:>8}  {shown}" + (f"  [{note}]" if note else ""))
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="Walk in this (new) folder and keep it.")
    parser.add_argument(
        "--quick", action="store_true", help="Leave the commands a named test covers to it (make test's walk)."
    )
    parser.add_argument("--plan-specs", nargs="+", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plan_specs:
        sys.exit(plan_specs(args.plan_specs))
    if args.keep is not None:
        args.keep.mkdir(parents=True)
        sys.exit(0 if walk(fresh_copy(args.keep), args.quick) else 1)
    with tempfile.TemporaryDirectory(prefix="srifty-readme-") as tmp:
        sys.exit(0 if walk(fresh_copy(Path(tmp)), args.quick) else 1)


if __name__ == "__main__":
    main()
