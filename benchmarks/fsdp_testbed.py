"""A real small transformer sharded with FSDP (and, beside it, replicated with DDP) on the network testbed:
predicted against measured iteration time on 2, 3 (heterogeneous) and 4 hosts, with srifty's FSDP timeline and
a Galvatron-style analytical baseline.

``srifty.compute.zoo:decoder`` (a 5.8 M-parameter decoder-only transformer, 6 blocks, 128 tokens, AdamW, FSDP2
``fully_shard`` over gloo, explicit prefetch) runs on testbed hosts (network namespaces, links ``tc``-shaped to
g4dn.8xlarge's rated 50 Gbps at 1/50: an emulation of cloud links on one machine), one process per host, each
host's processes under a CPU quota (0.6 or 0.3 cores) standing for two VM types, as in the resnet18 benchmark.

Predictions are made and **saved with a timestamp before any run starts**: srifty's simulator (FSDP: the per-unit
timeline of :mod:`srifty.sim.fsdp` with the embedded bandwidth model's all-gather and reduce-scatter answers; DDP:
its event-driven allreduce; both with the interference the profile measured), and the Galvatron-style baseline:
``t_fw + max(t_bwd, AG + RS) + t_step / d`` with a forward all-gather ``AG`` exposed before the first block's
compute, communication times from APM's alpha-beta model (fitted on the same testbed probes, every collective as an
allreduce of the same bus bandwidth, the analytical models' usual assumption), no overlap slowdown. Compute of each
type comes from ``srifty profile`` of the model under the type's quota. Measured: real training on the testbed hosts
(``torchrun`` in each host's namespace, one process a host in a cgroup of its quota:
:func:`benchmarks.end_to_end.run_ddp` with :mod:`benchmarks.fsdp_worker`, the model, optimizer and
``srifty.torch.fsdp.parallelize`` of ``examples/train_fsdp.py``), rank 0's iteration times after ``WARMUP``
iterations, with the cores other processes used meanwhile (a lower bound). Not under ``srifty run --hosts``: that
needs the testbed's controller address, which a leaked testbed of another run held on this machine when this was
written; ``make test`` runs an FSDP job under ``srifty run`` on the testbed.

HSDP is not run here: it needs several processes per host, and these hosts stand for one-GPU VMs.

Needs root, iproute2 and cgroup v1's cpu controller. Run under the CPU lock:
``flock /tmp/srifty-cpu.lock python -m benchmarks.fsdp_testbed`` (about 20 min). Writes
``benchmarks/results/fsdp_testbed.json`` and the BENCHMARKS.md section "Sharded data parallelism: iteration
time on the testbed"; ``--from-results`` re-renders the section only.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import end_to_end as e2e
from benchmarks.common import ROOT, cpu_seconds, machine_description, others_cores, write_section
from srifty.artifacts import atomic_write_text
from srifty.catalog import InstanceType, load_catalog
from srifty.compute import Profile, load_profile
from srifty.sim import SimOptions, Simulator
from srifty.sim.fsdp import REDUCE_BYTES, gather_bytes_each, unit_shares
from srifty.sim.netquery import feature_frame
from srifty.vocab import Config, ConfigGroup
from srifty.vocab.busbw import bus_bytes

SECTION = "Sharded data parallelism: iteration time on the testbed"
RESULTS = ROOT / "benchmarks" / "results" / "fsdp_testbed.json"
#: The last run with 100 ms CPU-quota periods (commit 6205d77; its profiles beside it).
QUOTA100_RESULTS = ROOT / "benchmarks" / "results" / "quota100ms" / "fsdp_testbed.json"
PROFILES = ROOT / "benchmarks" / "results" / "fsdp_testbed_profiles"
FAMILY = "g4dn.8xlarge"
MODEL = "srifty.compute.zoo:decoder"
FAST = e2e.Host(0.6, 4)
SLOW = e2e.Host(0.3, 2)
STANDS_FOR = {FAST.quota: "g4dn.8xlarge", SLOW.quota: "g4dn.4xlarge"}
CASES = [
    ("2 hosts", (FAST, FAST)),
    ("3 hosts, heterogeneous", (FAST, SLOW, SLOW)),
    ("4 hosts", (SLOW,) * 4),
]
STRATEGIES = ("fsdp", "ddp")
WARMUP = 4
MEASURED = 14
SEED = 11
LINE = re.compile(r"^iteration=(\d+) rank=0 time=([\d.]+) loss=", re.M)


def emulated(host: e2e.Host) -> InstanceType:
    """The family's record with one 'GPU' (a CPU at the host's quota) per VM. It keeps the family's name, so
    that the bandwidth model answers for the family it probed on this testbed; profiles are looked up by the
    GPU name, which carries the quota."""
    base = load_catalog().get(FAMILY, region="us-east-1")
    return replace(base, gpu_name=f"cpu-q{host.quota}", gpus_per_vm=1, vcpus=host.quota, gpu=None)


def config(hosts: tuple[e2e.Host, ...], parallelism: str) -> Config:
    groups: dict[e2e.Host, int] = {}
    for host in hosts:
        groups[host] = groups.get(host, 0) + 1
    return Config(
        tuple(ConfigGroup(emulated(h), n, h.batch) for h, n in groups.items()),
        parallelism=parallelism,  # type: ignore[arg-type]
    )


def host_config(hosts: tuple[e2e.Host, ...]) -> str:
    counts: dict[e2e.Host, int] = {}
    for host in hosts:
        counts[host] = counts.get(host, 0) + 1
    return ",".join(f"{n}x{STANDS_FOR[h.quota]}@{h.batch}" for h, n in counts.items())


def galvatron_s(cfg: Config, profiles: dict[str, Profile], alpha_beta: Any) -> float:
    """The Galvatron-style analytical iteration time (see the module docstring)."""
    times = []
    for group in cfg.groups:
        profile = profiles[group.instance.gpu_name]
        fw, bwd, step = (float(profile.predict_ms(ph, group.local_batch)) / 1e3 for ph in ("fw", "bw", "step"))
        times.append((fw, bwd, step, profile))
    fw, bwd, step, profile = max(times, key=lambda t: t[0] + t[1])
    n = cfg.world_size
    if cfg.parallelism == "ddp":
        sizes = np.array([float(b.size_bytes) for b in profile.buckets])
        busbw = _busbw(alpha_beta, sizes, cfg)
        return fw + max(bwd, float(np.sum(bus_bytes(sizes, n) / busbw))) + step
    units = unit_shares(profile).units
    gathers = np.array([u.numel * gather_bytes_each(profile) for u in units])
    reduces = np.array([u.numel * REDUCE_BYTES for u in units])
    ag = float(np.sum(bus_bytes(gathers, n, "all_gather") / _busbw(alpha_beta, gathers, cfg)))
    rs = float(np.sum(bus_bytes(reduces, n, "reduce_scatter") / _busbw(alpha_beta, reduces, cfg)))
    first_gather = ag / len(units)
    return first_gather + max(fw, ag) + max(bwd, ag + rs) + step / n


def _busbw(model: Any, sizes: Any, cfg: Config) -> Any:
    instance = cfg.groups[0].instance
    frame = feature_frame([(np.asarray(sizes, dtype=float), cfg.world_size, cfg.n_vms, instance, "allreduce", 1)])
    return np.asarray(model.predict_busbw_bytes_per_s(frame))


def profile_all(guard: Any) -> dict[str, Profile]:
    """``srifty profile`` of the model under each type's quota (kept, unless measured on another machine)."""
    PROFILES.mkdir(parents=True, exist_ok=True)
    case = e2e.Case("decoder", MODEL, FAMILY, (FAST, SLOW), profile_args=("--optimizer", "adam"))
    out = {}
    for host in (FAST, SLOW):
        cgroup = e2e.make_cgroup(f"profile{host.quota}", host.quota)
        out[f"cpu-q{host.quota}"] = load_profile(e2e.profile_type(case, host, cgroup, PROFILES, guard, False))
    return out


def predict_all(guard: Any) -> dict[str, Any]:
    profiles = profile_all(guard)
    net, alpha_beta = e2e.scaled_models()
    rows = []
    for name, hosts in CASES:
        for strategy in STRATEGIES:
            cfg = config(hosts, strategy)
            sim = Simulator(profiles, net, SimOptions(iters=500)).simulate(cfg, np.random.default_rng(0))
            rows.append({"case": name, "strategy": strategy, "host_config": host_config(hosts),
                         "srifty_s": sim.iter_mean_s, "galvatron_s": galvatron_s(cfg, profiles, alpha_beta),
                         "srifty_comm_exposed_s": sim.comm_exposed_mean_s})  # fmt: skip
            print(f"predicted {name} {strategy}: srifty {sim.iter_mean_s * 1e3:.0f} ms", flush=True)
    now = time.time()
    return {"written_unix": now, "written_utc": datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
            "machine": machine_description(), "rows": rows}  # fmt: skip


def measure(
    index: int, hosts: tuple[e2e.Host, ...], strategy: str, guard: Any, out: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """Real training on testbed hosts (:func:`benchmarks.end_to_end.run_ddp` with :mod:`benchmarks.fsdp_worker`),
    each host's processes in a cgroup of its quota; rank 0's iteration times after the warm-up."""
    case = e2e.Case(f"decoder {strategy} {index}", MODEL, FAMILY, hosts)
    cgroups = [e2e.make_cgroup(f"h{j}", h.quota) for j, h in enumerate(hosts)]
    env = {"SRIFTY_PARALLELISM": strategy, "SRIFTY_SHARD_GROUP_SIZE": str(len(hosts))}
    before, started = cpu_seconds(), time.perf_counter()
    worker = "benchmarks.fsdp_worker"
    times = e2e.run_ddp(case, cgroups, SEED + index, args.warmup, args.iters, out, guard, worker, env)
    others = others_cores(before, cpu_seconds(), time.perf_counter() - started)
    return {"intervals_s": times, "measured_mean_s": statistics.fmean(times),
            "measured_std_s": statistics.stdev(times), "other_processes_cores": others}  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    with e2e.cleaned_up() as guard:
        predictions = predict_all(guard)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(RESULTS, json.dumps({"predictions": predictions}, indent=1))
        measured = []
        out = Path(tempfile.mkdtemp(prefix="srifty-fsdp-"))
        try:
            for index, (row, (name, hosts)) in enumerate(
                zip(predictions["rows"], [c for c in CASES for _ in STRATEGIES], strict=True)
            ):
                result = measure(index, hosts, row["strategy"], guard, out, args)
                measured.append({**row, **result})
                said = f"{result['measured_mean_s'] * 1e3:.0f} ms, others {result['other_processes_cores']:.2f} cores"
                print(f"measured {name} {row['strategy']}: {said}", flush=True)
        finally:
            shutil.rmtree(out, ignore_errors=True)
    return {"predictions": predictions, "rows": measured, "machine": machine_description(), "warmup": args.warmup,
            "iters": args.iters}  # fmt: skip


def _mape(rows: list[dict[str, Any]], key: str) -> float:
    return 100 * statistics.fmean(abs(r[key] / r["measured_mean_s"] - 1) for r in rows)


def render(results: dict[str, Any]) -> str:
    rows = results["rows"]
    lines = [
        "A 5.8 M-parameter decoder-only transformer (`srifty.compute.zoo:decoder`, 6 blocks, 128 tokens, AdamW)",
        "trained with `srifty.torch.fsdp.parallelize` on testbed hosts (g4dn.8xlarge links at 1/50; one process a",
        "host under a CPU quota,",
        "0.6 or 0.3 cores, in 10 ms periods: see 'Testbed CPU quotas: the period'), FSDP2 `fully_shard` over gloo",
        "and, beside it, DDP. Predictions saved at " + results["predictions"]["written_utc"] + " before the first run.",
        "",
        "| case | hosts | strategy | measured ms | srifty ms (error) | Galvatron-style ms (error) "
        "| other processes, cores |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        m = r["measured_mean_s"]
        lines.append(
            f"| {r['case']} | {r['host_config']} | {r['strategy']} | "
            f"{m * 1e3:,.0f} ± {r['measured_std_s'] * 1e3:,.0f} | "
            f"{r['srifty_s'] * 1e3:,.0f} ({100 * (r['srifty_s'] / m - 1):+.1f} %) | "
            f"{r['galvatron_s'] * 1e3:,.0f} ({100 * (r['galvatron_s'] / m - 1):+.1f} %) | "
            f"{r.get('other_processes_cores', float('nan')):.2f} |"
        )
    for strategy in STRATEGIES:
        picked = [r for r in rows if r["strategy"] == strategy]
        lines.append("")
        lines.append(
            f"MAPE over the {strategy.upper()} runs: srifty {_mape(picked, 'srifty_s'):.1f} %, Galvatron-style "
            f"{_mape(picked, 'galvatron_s'):.1f} % (goal: 10 %)."
        )
    warmup, iters = results.get("warmup", WARMUP), results.get("iters", MEASURED)
    flags = "" if (warmup, iters) == (WARMUP, MEASURED) else f" --warmup {warmup} --iters {iters}"
    lines += ["", f"Measured: the mean ± std of rank 0's {iters} iterations after {warmup} of warm-up, one run a row.",
              "", f"Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.fsdp_testbed{flags}`. Machine: "
              + results["machine"] + "."]  # fmt: skip
    if QUOTA100_RESULTS.exists():
        before = json.loads(QUOTA100_RESULTS.read_text())["rows"]
        said = ", ".join(
            f"{s.upper()} srifty {_mape(picked, 'srifty_s'):.1f} % "
            f"(Galvatron-style {_mape(picked, 'galvatron_s'):.1f} %)"
            for s in STRATEGIES
            for picked in [[r for r in before if r["strategy"] == s]]
        )
        lines += ["", "Before the testbed's CPU quotas moved to 10 ms periods (commit 6205d77, 100 ms periods; raw and "
                  f"profiles: `benchmarks/results/quota100ms/`): MAPE {said}."]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-results", action="store_true")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="iterations left out of each run")
    parser.add_argument("--iters", type=int, default=MEASURED, help="iterations measured in each run")
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if args.from_results else run(args)
    if not args.from_results:
        atomic_write_text(RESULTS, json.dumps(results, indent=1))
    write_section(SECTION, render(results))


if __name__ == "__main__":
    main()
