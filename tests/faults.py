"""The fault matrix: commands killed at random points, and runs stopped by signals.

* **Torn files.** ``srifty plan --json``, ``srifty fit-net``, ``srifty profile`` (a tiny model) and a
  checkpoint save are each started over an existing ("old") output and killed with SIGKILL after a random
  delay, uniform over one unkilled run's duration. Afterwards every output must load and be either the old
  one or a complete new one; anything else is torn.
* **Leftovers.** ``srifty run`` (the tiny example) is stopped with SIGTERM, SIGINT or SIGKILL at a random
  point; as root, a testbed launch too (and then ``srifty testbed down``). Every process a run started
  carries this matrix's mark in its environment; any still alive afterwards is a leftover (and is ended).

``tests/test_faults.py`` runs a few of each; ``benchmarks/reliability.py`` counts many for BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from srifty.processes import describe, end_processes, owner_variable, pids_marked

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
TINY_PROFILE = EXAMPLES / "profiles" / "srifty.compute.zoo-tiny_mlp__cpu.json"
PROBES = REPO / "src" / "srifty" / "network" / "data" / "testbed-probes.parquet"
CAN_USE_TESTBED = os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("tc") is not None


@dataclass
class FaultRow:
    """What one command did under one kind of fault."""

    command: str
    fault: str
    injected: int = 0
    old: int = 0
    new: int = 0
    torn: int = 0
    leftovers: int = 0
    #: What each leftover was: ``pid (command line)`` of a process, ``namespace <name>`` of a namespace.
    leftover_names: list[str] = field(default_factory=list)

    def add(self, other: FaultRow) -> None:
        for name in ("injected", "old", "new", "torn", "leftovers"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.leftover_names += other.leftover_names

    def count_leftovers(self, names: list[str]) -> None:
        """Add leftovers, named."""
        self.leftovers += len(names)
        self.leftover_names += names


def _env(mark: str) -> dict[str, str]:
    path = os.pathsep.join([str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, mark: "1", "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


def _srifty(*args: str) -> list[str]:
    return [sys.executable, "-m", "srifty.cli.main", *args]


def _leftovers(mark: str, settle_s: float = 15.0) -> list[str]:
    """Processes carrying ``mark`` still alive after ``settle_s``, each as ``pid (command line)`` (they are
    ended afterwards): a leftover is named, so that a rare one can be traced to what left it."""
    deadline = time.monotonic() + settle_s
    while pids_marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = pids_marked(mark)
    names = [describe(pid) for pid in left]
    end_processes(left, grace_s=1.0)
    return names


# ------------------------------------------------------------------------------------------- torn files


@dataclass(frozen=True)
class Target:
    """A command that writes files, and how to tell its old output from a new one or a torn one.

    ``prepare(folder)`` writes the inputs and the old output; ``argv`` runs in ``folder``;
    ``classify(folder)`` says ``"old"``, ``"new"`` or ``"torn"``.
    """

    name: str
    argv: list[str]
    prepare: Callable[[Path], None]
    classify: Callable[[Path], str]


def _tiny_spec(iterations: int) -> dict[str, object]:
    return {
        "model": {"name": "srifty.compute.zoo:tiny_mlp", "profiles": ["p.json"]},
        "global_batch": 32,
        "iterations": iterations,
        "goal": "min_cost",
        "region": "us-east-1",
        "candidates": [
            {"instance_type": "g4dn.xlarge", "market": "spot", "quota": 4},
            {"instance_type": "g4dn.2xlarge", "market": "spot", "quota": 2},
        ],
    }


def _plan_target() -> Target:
    def prepare(folder: Path) -> None:
        shutil.copy(TINY_PROFILE, folder / "p.json")
        (folder / "old.yaml").write_text(yaml.safe_dump(_tiny_spec(31)))
        subprocess.run(_srifty("plan", "old.yaml", "--json", "plan.json"), cwd=folder, capture_output=True, check=True)
        (folder / "plan.old").write_bytes((folder / "plan.json").read_bytes())
        (folder / "job.yaml").write_text(yaml.safe_dump(_tiny_spec(30)))

    def classify(folder: Path) -> str:
        from srifty.artifacts import read_json_artifact
        from srifty.errors import SriftyError
        from srifty.plan.result import PLAN_KIND, PLAN_SCHEMA_VERSION

        raw = (folder / "plan.json").read_bytes()
        if raw == (folder / "plan.old").read_bytes():
            return "old"
        try:
            doc = read_json_artifact(folder / "plan.json", PLAN_KIND, PLAN_SCHEMA_VERSION)
        except SriftyError:
            return "torn"
        return "new" if doc.get("best") else "torn"

    return Target("srifty plan --json", _srifty("plan", "job.yaml", "--json", "plan.json"), prepare, classify)


def _small_probes(folder: Path) -> None:
    """400 rows of the embedded probe set (both sides of the MTU), so a fit takes seconds."""
    from srifty.network.dataset import _to_parquet_bytes, read_probes

    frame = read_probes(PROBES).sample(400, random_state=0).reset_index(drop=True)
    (folder / "probes.parquet").write_bytes(_to_parquet_bytes(frame))


def _fit_target() -> Target:
    def prepare(folder: Path) -> None:
        _small_probes(folder)
        subprocess.run(
            _srifty("fit-net", "probes.parquet", "--trials", "0", "--jobs", "1", "--seed", "1", "--mtu-bytes", "4096",
                    "--out", "m/net.json"),
            cwd=folder, capture_output=True, check=True,
        )  # fmt: skip
        (folder / "meta.old").write_bytes((folder / "m" / "net.meta.json").read_bytes())

    def classify(folder: Path) -> str:
        from srifty.errors import SriftyError
        from srifty.network import BandwidthModel

        try:
            BandwidthModel.load(folder / "m" / "net.json")
        except SriftyError:
            return "torn"
        same = (folder / "m" / "net.meta.json").read_bytes() == (folder / "meta.old").read_bytes()
        return "old" if same else "new"

    argv = _srifty("fit-net", "probes.parquet", "--trials", "2", "--folds", "2", "--jobs", "1", "--out", "m/net.json")
    return Target("srifty fit-net", argv, prepare, classify)


def _profile_target() -> Target:
    def prepare(folder: Path) -> None:
        shutil.copy(TINY_PROFILE, folder / "p.json")

    def classify(folder: Path) -> str:
        from srifty.compute import load_profile
        from srifty.errors import SriftyError

        if (folder / "p.json").read_bytes() == TINY_PROFILE.read_bytes():
            return "old"
        try:
            load_profile(folder / "p.json")
        except SriftyError:
            return "torn"
        return "new"

    argv = _srifty(
        "profile", "--model", "srifty.compute.zoo:tiny_mlp", "--max-batch", "16", "--iters", "3", "--warmup", "1",
        "--threads", "1", "--out", "p.json",
    )  # fmt: skip
    return Target("srifty profile (tiny MLP)", argv, prepare, classify)


CHECKPOINT_LOOP = """
import sys, torch
from srifty.torch.training import save_checkpoint
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(1, int(sys.argv[1]) + 1):
    model(torch.randn(8, 256)).sum().backward()
    optimizer.step()
    save_checkpoint("ckpt", step, model, optimizer)
"""

CHECKPOINT_LOAD = """
import json, torch
from srifty.torch.training import load_checkpoint
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
print(json.dumps({"step": load_checkpoint("ckpt", model, optimizer)}))
"""


def _checkpoint_target() -> Target:
    def prepare(folder: Path) -> None:
        subprocess.run([sys.executable, "-c", CHECKPOINT_LOOP, "1"], cwd=folder, capture_output=True, check=True)

    def classify(folder: Path) -> str:
        result = subprocess.run([sys.executable, "-c", CHECKPOINT_LOAD], cwd=folder, capture_output=True, text=True)
        if result.returncode != 0:
            return "torn"
        step = json.loads(result.stdout.strip().splitlines()[-1])["step"]
        return "old" if step == 1 else "new"

    return Target("checkpoint save (DCP, 200 steps)", [sys.executable, "-c", CHECKPOINT_LOOP, "200"], prepare, classify)


# The commands above spend most of their time before they write; these two write all the time, so that
# kills land inside writes too: a 3-file bandwidth model saved over and over, alternating between two
# fitted models, and a 16 MiB file written atomically over and over.
MODEL_SAVE_LOOP = """
import sys
from srifty.network import BandwidthModel
models = [BandwidthModel.load(p) for p in ("a/net.json", "b/net.json")]
for i in range(int(sys.argv[1])):
    models[i % 2].save("m/net.json")
"""

ATOMIC_WRITE_LOOP = """
import sys
from srifty.artifacts import atomic_write_bytes
payloads = [bytes([65]) * (16 << 20), bytes([66]) * (16 << 20)]
for i in range(int(sys.argv[1])):
    atomic_write_bytes("out.bin", payloads[i % 2])
"""


def _model_save_target() -> Target:
    def prepare(folder: Path) -> None:
        _small_probes(folder)
        for sub, seed in (("a", "1"), ("b", "2")):
            subprocess.run(
                _srifty("fit-net", "probes.parquet", "--trials", "0", "--jobs", "1", "--seed", seed, "--mtu-bytes",
                        "4096" if sub == "a" else "9001", "--out", f"{sub}/net.json"),
                cwd=folder, capture_output=True, check=True,
            )  # fmt: skip
        shutil.copytree(folder / "a", folder / "m")

    def classify(folder: Path) -> str:
        from srifty.errors import SriftyError
        from srifty.network import BandwidthModel

        try:
            loaded = BandwidthModel.load(folder / "m" / "net.json")
        except SriftyError:
            return "torn"
        return "old" if loaded.mtu_bytes == 4096 else "new"

    return Target("bandwidth-model save (3 files, looped)", [sys.executable, "-c", MODEL_SAVE_LOOP, "400"], prepare,
                  classify)  # fmt: skip


def _atomic_write_target() -> Target:
    def prepare(folder: Path) -> None:
        (folder / "out.bin").write_bytes(bytes([65]) * (16 << 20))

    def classify(folder: Path) -> str:
        raw = (folder / "out.bin").read_bytes()
        if raw == bytes([65]) * (16 << 20):
            return "old"
        return "new" if raw == bytes([66]) * (16 << 20) else "torn"

    return Target("atomic write (16 MiB, looped)", [sys.executable, "-c", ATOMIC_WRITE_LOOP, "60"], prepare, classify)


TARGETS: dict[str, Callable[[], Target]] = {
    "plan": _plan_target,
    "fit-net": _fit_target,
    "profile": _profile_target,
    "checkpoint": _checkpoint_target,
    "model-save": _model_save_target,
    "atomic-write": _atomic_write_target,
}


def kill_at_random(target: Target, kills: int, rng: random.Random, base: Path) -> FaultRow:
    """Run ``target`` once to time it, then ``kills`` times killed with SIGKILL after a random delay."""
    mark = owner_variable(f"faults{uuid.uuid4().hex[:8]}")
    row = FaultRow(target.name, "SIGKILL at a random point")
    template = Path(tempfile.mkdtemp(dir=base))
    target.prepare(template)  # once: every run starts from a copy of the same files (a fit or a save each)

    def fresh_folder() -> Path:
        folder = Path(tempfile.mkdtemp(dir=base))
        shutil.copytree(template, folder, dirs_exist_ok=True)
        return folder

    folder = fresh_folder()
    started = time.monotonic()
    subprocess.run(target.argv, cwd=folder, env=_env(mark), capture_output=True, check=True)
    duration = time.monotonic() - started
    shutil.rmtree(folder)
    for _ in range(kills):
        folder = fresh_folder()
        proc = subprocess.Popen(
            target.argv, cwd=folder, env=_env(mark), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.0, duration))
        proc.kill()
        proc.wait()
        row.injected += 1
        outcome = target.classify(folder)
        setattr(row, outcome, getattr(row, outcome) + 1)
        row.count_leftovers(_leftovers(mark, settle_s=2.0))
        shutil.rmtree(folder)
    shutil.rmtree(template)
    return row


# ------------------------------------------------------------------------------------------- leftovers


def _signal_and_wait(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Send ``sig``; give the process a minute to clean up and exit (then SIGKILL it: a hang is a finding
    the leftover count will show)."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stop_run_at_random(sig: signal.Signals, count: int, rng: random.Random, base: Path) -> FaultRow:
    """``srifty run examples/tiny-local.yaml`` on 2 ranks (0.1 s per step), stopped with ``sig`` once
    training is under way, ``count`` times; counts processes left behind."""
    row = FaultRow("srifty run (tiny, 2 ranks)", sig.name)
    for _ in range(count):
        mark = owner_variable(f"faults{uuid.uuid4().hex[:8]}")
        folder = Path(tempfile.mkdtemp(dir=base))
        argv = _srifty(
            "run", str(EXAMPLES / "tiny-local.yaml"), "--config", "2xg4dn.xlarge@32", "--run-dir", "run", "--",
            "python", str(EXAMPLES / "train_tiny.py"),
        )  # fmt: skip
        env = {**_env(mark), "TRAIN_TINY_STEP_S": "0.1"}
        proc = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        progress = folder / "run" / "workers" / "progress.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (progress.exists() and progress.read_text().strip()):
            time.sleep(0.1)
        time.sleep(rng.uniform(0.0, 3.0))
        _signal_and_wait(proc, sig)
        row.injected += 1
        row.count_leftovers(_leftovers(mark))
        shutil.rmtree(folder)
    return row


def stop_testbed_launch(sig: signal.Signals, count: int, rng: random.Random, base: Path) -> FaultRow:
    """As root: a 2-host testbed probe launch stopped with ``sig`` mid-run; counts the processes it left
    (before ``srifty testbed down``) and the namespaces ``srifty testbed down`` left."""
    from srifty.network.testbed import down, list_namespaces

    row = FaultRow("srifty testbed launch (2 hosts) + down", sig.name)
    name = f"f{os.getpid() % 100000}"
    for _ in range(count):
        mark = owner_variable(f"faults{uuid.uuid4().hex[:8]}")
        folder = Path(tempfile.mkdtemp(dir=base))
        env = _env(mark)
        subprocess.run(
            _srifty("testbed", "up", "--name", name, "--hosts", "2"), env=env, capture_output=True, check=True
        )
        argv = _srifty(
            "testbed", "launch", "--name", name, "--", "probe", "--out", str(folder / "p.parquet"), "--repeats", "50",
            "--max-size", "1MiB",
        )  # fmt: skip
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(4.0, 8.0))
        _signal_and_wait(proc, sig)
        row.injected += 1
        row.count_leftovers(_leftovers(mark))  # the launch's own clean-up, before `testbed down` would help
        subprocess.run(_srifty("testbed", "down", "--name", name), env=env, capture_output=True, check=False)
        row.count_leftovers([f"namespace {ns}" for ns in list_namespaces(name)])
        down(name)
        shutil.rmtree(folder)
    return row


def fault_matrix(kills: int, seed: int) -> list[dict[str, object]]:
    """Every fault above, ``kills`` SIGKILLs per writing command and ``max(1, kills // 3)`` stops per signal."""
    rng = random.Random(seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="srifty-faults-") as tmp:
        base = Path(tmp)
        for make in TARGETS.values():
            row = kill_at_random(make(), kills, rng, base)
            print(asdict(row), flush=True)
            rows.append(asdict(row))
        stops = max(1, kills // 3)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            row = stop_run_at_random(sig, stops, rng, base)
            print(asdict(row), flush=True)
            rows.append(asdict(row))
        if CAN_USE_TESTBED:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                row = stop_testbed_launch(sig, stops, rng, base)
                print(asdict(row), flush=True)
                rows.append(asdict(row))
    return rows
