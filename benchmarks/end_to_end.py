"""End-to-end validation: predicted vs measured iteration time of real DDP training on the testbed.

Each case runs real ``DistributedDataParallel`` training (gloo) with one rank per emulated host: Linux
network namespaces whose links are rate-shaped with ``tc`` to stand for an instance family at 1/50 of its
rated bandwidth (srifty's testbed, an emulation of cloud links on one machine). A slower "instance type"
is emulated with a CPU quota (cgroup v1 ``cpu.cfs_quota_us``) and takes a different local batch.

Predictions use only what srifty would have: a compute profile per emulated type, measured by
``srifty profile`` under that type's CPU quota, and the embedded bandwidth model (fitted on testbed
probes of other allocations; its cloud-unit predictions divided by the emulation scale). srifty's
simulator is compared with APM (linear compute through the profiled batches, alpha-beta allreduce fitted
on the same probe set, compute + communication without overlap, no variance).

Run as root: ``python -m benchmarks.end_to_end`` (about 20 minutes on 2 cores). Writes BENCHMARKS.md
("End-to-end iteration-time prediction") and ``benchmarks/results/end_to_end.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.common import ROOT, machine_description, write_section
from srifty.artifacts import atomic_write_text
from srifty.catalog import InstanceType, load_catalog
from srifty.compute import load_profile
from srifty.network import load_default_model, load_default_probes
from srifty.network.testbed.namespaces import HOST_IFACE, down, family_from_catalog, up
from srifty.plan.methods.additive import apm_predictor
from srifty.plan.methods.alpha_beta import AlphaBetaModel
from srifty.sim import SimOptions, Simulator
from srifty.vocab import Config, ConfigGroup

CGROUP_ROOT = Path("/sys/fs/cgroup/cpu")
SCALE = 50.0


@dataclass(frozen=True)
class Host:
    """One emulated VM of a case: its CPU quota (cores) and local batch."""

    quota: float
    batch: int


@dataclass(frozen=True)
class Case:
    name: str
    model: str
    family: str
    hosts: tuple[Host, ...]
    image_size: int = 0
    seq_len: int = 128


CASES = [
    Case("resnet18 2x", "resnet18", "g4dn.8xlarge", (Host(0.9, 16), Host(0.9, 16)), image_size=64),
    Case("resnet18 hetero", "resnet18", "g4dn.8xlarge", (Host(0.9, 16), Host(0.45, 8)), image_size=64),
    Case("resnet18 4x", "resnet18", "g4dn.8xlarge", (Host(0.45, 8),) * 4, image_size=64),
    Case("mlp 2x slow link", "srifty.compute.zoo:mlp", "g4dn.2xlarge", (Host(0.9, 32), Host(0.9, 32))),
    Case("mlp 4x", "srifty.compute.zoo:mlp", "g4dn.8xlarge", (Host(0.45, 16),) * 4),
    Case("gpt2-tiny hetero 3x", "hf:gpt2-tiny", "g4dn.8xlarge", (Host(0.6, 8), Host(0.6, 8), Host(0.3, 4))),
    Case("bert-small 2x", "hf:bert-small", "g4dn.8xlarge", (Host(0.9, 8), Host(0.9, 8)), seq_len=64),
]


class ScaledBandwidth:
    """A bandwidth model's cloud-unit predictions divided by the testbed's emulation scale."""

    def __init__(self, model, scale: float) -> None:  # type: ignore[no-untyped-def]
        self.model, self.scale = model, scale

    def predict_busbw_bytes_per_s(self, frame):  # type: ignore[no-untyped-def]
        return np.asarray(self.model.predict_busbw_bytes_per_s(frame)) / self.scale


def make_cgroup(name: str, quota: float) -> Path:
    path = CGROUP_ROOT / f"srifty-e2e-{name}"
    path.mkdir(exist_ok=True)
    (path / "cpu.cfs_period_us").write_text("100000")
    (path / "cpu.cfs_quota_us").write_text(str(int(quota * 100000)))
    return path


def profile_type(case: Case, host: Host, cgroup: Path, out: Path) -> Path:
    """``srifty profile`` of the case's model under the type's CPU quota."""
    path = out / f"{case.model.replace(':', '-').replace('/', '-')}_q{host.quota}.json"
    if path.exists():
        return path
    args = [sys.executable, "-m", "srifty.cli.main", "profile", "--model", case.model, "--threads", "1",
            "--max-batch", str(max(2, 2 * max(h.batch for h in case.hosts))), "--iters", "6", "--warmup", "2",
            "--seq-len", str(case.seq_len), "--out", str(path)]  # fmt: skip
    if case.image_size:
        args += ["--image-size", str(case.image_size)]
    script = f"echo $$ > {cgroup}/cgroup.procs && exec " + " ".join(args)
    subprocess.run(["sh", "-c", script], check=True, stdout=subprocess.DEVNULL)
    return path


def run_ddp(case: Case, cgroups: list[Path], seed: int, warmup: int, iters: int, out: Path) -> list[float]:
    """Real DDP training across testbed hosts; returns rank 0's timed iteration times (s)."""
    family = family_from_catalog(case.family)
    name = "e2e"
    down(name)
    state = up(name, len(case.hosts), family, scale=SCALE, seed=seed, gpus_per_host=1)
    result = out / f"run-{case.name.replace(' ', '_')}.json"
    port = 29500 + seed % 1000
    env = {
        **os.environ,
        "GLOO_SOCKET_IFNAME": HOST_IFACE,
        "OMP_NUM_THREADS": "1",
        "E2E_MODEL": case.model,
        "E2E_IMAGE_SIZE": str(case.image_size),
        "E2E_SEQ_LEN": str(case.seq_len),
        "E2E_WARMUP": str(warmup),
        "E2E_ITERS": str(iters),
        "E2E_OUT": str(result),
        "E2E_CGROUPS": "",
        "SRIFTY_RANK_BATCHES": ",".join(str(h.batch) for h in case.hosts),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    procs = []
    try:
        for host in state.hosts:
            cmd = [
                "ip",
                "netns",
                "exec",
                host.namespace,
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes",
                str(len(state.hosts)),
                "--node-rank",
                str(host.index),
                "--nproc-per-node",
                "1",
                "--master-addr",
                state.hosts[0].ip,
                "--master-port",
                str(port),
                "-m",
                "benchmarks.e2e_worker",
            ]
            # Join the host's cgroup before entering the namespace: `ip netns exec` remounts /sys, hiding the
            # cgroup tree from the worker. torchrun and its worker inherit the membership.
            joined = f"echo $$ > {cgroups[host.index] / 'cgroup.procs'} && exec {shlex.join(cmd)}"
            procs.append(
                subprocess.Popen(["sh", "-c", joined], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            )
        for proc in procs:
            _, err = proc.communicate(timeout=1800)
            if proc.returncode != 0:
                raise RuntimeError(f"{case.name}: a host failed:\n{err.decode()[-2000:]}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        down(name)
    return list(json.loads(result.read_text())["iter_s"])


def emulated_type(case: Case, host: Host) -> InstanceType:
    """The catalog family's record, renamed for this CPU quota, one 'GPU' per VM."""
    base = load_catalog().get(case.family, region="us-east-1")
    return InstanceType(
        name=f"{case.family}-q{host.quota}", cloud="testbed", region="local", zones=(), gpu_name=f"cpu-q{host.quota}",
        gpus_per_vm=1, gpu_memory_bytes=base.gpu_memory_bytes, vcpus=host.quota, ram_bytes=None,
        on_demand_usd_per_hour=base.on_demand_usd_per_hour, spot_usd_per_hour_by_zone=(),
        rated_network_gbps=base.rated_network_gbps, gpu=None,
    )  # fmt: skip


def config_of(case: Case) -> Config:
    groups: dict[tuple[float, int], int] = {}
    for host in case.hosts:
        groups[(host.quota, host.batch)] = groups.get((host.quota, host.batch), 0) + 1
    return Config(tuple(ConfigGroup(emulated_type(case, Host(q, b)), n, b) for (q, b), n in groups.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7, help="allocation seed (not one the default model saw)")
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    started = time.time()
    out = Path(tempfile.mkdtemp(prefix="srifty-e2e-"))
    profiles_dir = ROOT / "benchmarks" / "results" / "end_to_end_profiles"
    profiles_dir.mkdir(parents=True, exist_ok=True)
    net = ScaledBandwidth(load_default_model(), SCALE)
    alpha_beta = ScaledBandwidth(AlphaBetaModel().fit(load_default_probes()), SCALE)
    rows = []
    for i, case in enumerate(CASES):
        if args.only and case.name not in args.only:
            continue
        cgroups = [make_cgroup(f"h{j}", h.quota) for j, h in enumerate(case.hosts)]
        profiles = {}
        for host, cgroup in zip(case.hosts, cgroups, strict=True):
            key = emulated_type(case, host).name
            if key not in profiles:
                profiles[key] = load_profile(profile_type(case, host, cgroup, profiles_dir))
        measured = run_ddp(case, cgroups, args.seed + i, args.warmup, args.iters, out)
        config = config_of(case)
        sim = Simulator(profiles, net, SimOptions(iters=500))
        ours = sim.simulate(config, np.random.default_rng(0)).iter_mean_s
        apm = apm_predictor(profiles, alpha_beta).predict(config).iter_mean_s
        truth = statistics.mean(measured)
        rows.append({"case": case.name, "config": config.notation(), "measured_s": truth,
                     "measured_std_s": statistics.stdev(measured), "srifty_s": ours, "apm_s": apm})  # fmt: skip
        print(f"{case.name}: measured {truth * 1e3:.1f} ms, srifty {ours * 1e3:.1f}, APM {apm * 1e3:.1f}", flush=True)
    atomic_write_text(ROOT / "benchmarks" / "results" / "end_to_end.json", json.dumps(rows, indent=1))

    def err(key: str, row: dict) -> float:
        return (row[key] - row["measured_s"]) / row["measured_s"] * 100

    lines = [
        "| case | config | measured (ms) | srifty (ms) | error | APM (ms) | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | `{r['config']}` | {r['measured_s'] * 1e3:.1f} ± {r['measured_std_s'] * 1e3:.1f} | "
            f"{r['srifty_s'] * 1e3:.1f} | {err('srifty_s', r):+.1f}% | "
            f"{r['apm_s'] * 1e3:.1f} | {err('apm_s', r):+.1f}% |"
        )
    mape = {k: statistics.mean(abs(err(k, r)) for r in rows) for k in ("srifty_s", "apm_s")}
    under = {k: sum(err(k, r) < 0 for r in rows) / len(rows) * 100 for k in ("srifty_s", "apm_s")}
    body = "\n".join([
        "Real DDP training (gloo, 1 rank per emulated host) on the namespace testbed, links at 1/50 of the",
        "family's rated bandwidth; slower types emulated by cgroup CPU quotas (cores in the type name).",
        f"Mean of {args.iters} timed iterations after {args.warmup} warm-up ones, on rank 0.",
        "",
        *lines,
        "",
        "| | srifty | APM | paper: srifty | paper: APM |",
        "|---|---|---|---|---|",
        f"| MAPE | **{mape['srifty_s']:.1f}%** | {mape['apm_s']:.1f}% | 8.3% | 24% |",
        f"| cases underestimated | {under['srifty_s']:.0f}% | {under['apm_s']:.0f}% | 52% | 93% |",
        "",
        f"Command: `python -m benchmarks.end_to_end` (as root; {(time.time() - started) / 60:.0f} min). "
        f"Machine: {machine_description()}.",
        "Profiles: `benchmarks/results/end_to_end_profiles/`; raw: `benchmarks/results/end_to_end.json`.",
    ])  # fmt: skip
    write_section("End-to-end iteration-time prediction", body)
    print(body)


if __name__ == "__main__":
    main()
