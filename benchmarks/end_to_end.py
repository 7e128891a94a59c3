"""End-to-end validation: predicted vs measured iteration time of real DDP training on the testbed.

Each case runs real ``DistributedDataParallel`` training (gloo) with one rank per emulated host: Linux
network namespaces whose links are rate-shaped with ``tc`` to stand for an instance family at 1/50 of its
rated bandwidth (srifty's testbed, an emulation of cloud links on one machine). A slower "instance type"
is emulated with a CPU quota (cgroup v1 ``cpu.cfs_quota_us``, in srifty run's 10 ms periods) and takes a
different local batch.

Predictions use only what srifty would have: a compute profile per emulated type, measured by
``srifty profile`` under that type's CPU quota, and the embedded bandwidth model (fitted on testbed
probes of other allocations; its cloud-unit predictions divided by the emulation scale). srifty's
simulator is compared with APM (linear compute through the profiled batches, alpha-beta allreduce fitted
on the same probe set, compute + communication without overlap, no variance).

Each case's runs get one allocation (the testbed's placement draw from the case's seed). Before the
predictions are written, that allocation is also probed (``srifty probe`` on its hosts under their CPU quotas,
:data:`PROBE_ARGS`), and srifty and APM predict again with their bandwidth models corrected by the probe
(:mod:`srifty.sim.allocation`): what a user can know once the VMs are up, which a plan made before cannot.
``--no-probe`` skips it.

Run as root: ``python -m benchmarks.end_to_end`` (about 20 minutes on 2 cores). Writes BENCHMARKS.md
("End-to-end iteration-time prediction") and ``benchmarks/results/end_to_end.json``. ``--repredict``
(no root, seconds) keeps the last run's measurements and profiles and predicts them again with the current
models; the previous srifty predictions are shown beside the new ones.

Profiles are measured on this machine: a profile in ``--profiles-dir`` is reused only if it records this
machine (:func:`srifty.compute.provenance.require_this_machine`) and was measured within the hour
(:data:`MAX_PROFILE_AGE_S`); otherwise it is measured again here, since predicting this machine's iteration
time from another machine's profile, or from one measured hours before on this VM, whose speed drifts,
mixes two machines.

Everything the benchmark starts (profiling runs, torchrun agents and workers, the testbed's namespaces,
the CPU-quota cgroups) is named after this process and ended or removed on success, on an error, on
Ctrl-C and on SIGTERM. Nothing reaches a shell: every command is an argument vector.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import ROOT, commit_of, cpu_seconds, machine_description, others_cores, write_section
from srifty.artifacts import atomic_write_text
from srifty.catalog import InstanceType, load_catalog
from srifty.compute import Profile, check_one_machine, load_profile, require_this_machine
from srifty.compute.measure.machine import current_machine
from srifty.errors import ProfileError
from srifty.network import load_default_model, load_default_probes, read_probes
from srifty.network.testbed import (
    ENV_TESTBED_HOST,
    ENV_TESTBED_STATE,
    HOST_IFACE,
    down,
    family_from_catalog,
    state_path,
    up,
)
from srifty.plan import AlphaBetaModel, apm_predictor
from srifty.processes import ProcessGuard, signals_as_exit
from srifty.runtime.cpu_quota import WEIGHT_V1, quota_window_us
from srifty.sim import AllocationModel, SimOptions, Simulator, probe_allocation
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
    #: More ``srifty profile`` arguments (``--input-shape`` for a ``module:function`` model).
    profile_args: tuple[str, ...] = ()


CASES = [
    Case("resnet18 2x", "resnet18", "g4dn.8xlarge", (Host(0.9, 16), Host(0.9, 16)), image_size=64),
    Case("resnet18 hetero", "resnet18", "g4dn.8xlarge", (Host(0.9, 16), Host(0.45, 8)), image_size=64),
    Case("resnet18 4x", "resnet18", "g4dn.8xlarge", (Host(0.45, 8),) * 4, image_size=64),
    Case("mlp 2x slow link", "srifty.compute.zoo:mlp", "g4dn.2xlarge", (Host(0.9, 32), Host(0.9, 32))),
    Case("mlp 4x", "srifty.compute.zoo:mlp", "g4dn.8xlarge", (Host(0.45, 16),) * 4),
    Case("gpt2-tiny hetero 3x", "hf:gpt2-tiny", "g4dn.8xlarge", (Host(0.6, 8), Host(0.6, 8), Host(0.3, 4))),
    Case("bert-small 2x", "hf:bert-small", "g4dn.8xlarge", (Host(0.9, 8), Host(0.9, 8)), seq_len=64),
]
#: Run only when named with --only: a quick case for the tests of the benchmark's clean-up.
SMOKE_CASES = [Case("tiny 2x", "srifty.compute.zoo:tiny_mlp", "g4dn.8xlarge", (Host(0.9, 8), Host(0.9, 8)))]
#: This run's names: the testbed (1–6 characters) and the cgroups carry the process id.
RUN_NAME = f"e{os.getpid() % 100000}"


class ScaledBandwidth:
    """A bandwidth model's cloud-unit predictions divided by the testbed's emulation scale."""

    def __init__(self, model, scale: float) -> None:  # type: ignore[no-untyped-def]
        self.model, self.scale = model, scale

    def predict_busbw_bytes_per_s(self, frame):  # type: ignore[no-untyped-def]
        return np.asarray(self.model.predict_busbw_bytes_per_s(frame)) / self.scale

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        """Anything else the model offers (its spread is in ratios, which the scale does not change)."""
        return getattr(self.__dict__["model"], name)


def scaled_models() -> tuple[ScaledBandwidth, ScaledBandwidth]:
    """``(srifty's embedded bandwidth model, APM's alpha-beta fit on the same probes)``, both divided by the
    testbed's emulation scale."""
    return (ScaledBandwidth(load_default_model(), SCALE),
            ScaledBandwidth(AlphaBetaModel().fit(load_default_probes()), SCALE))  # fmt: skip


def saved_profiles(case: Case, folder: Path) -> dict[str, Profile]:
    """The profiles a run of ``case`` measured into ``folder``, by emulated type."""
    return {emulated_type(case, host).name: load_profile(profile_path(case, host, folder)) for host in case.hosts}


def make_cgroup(name: str, quota: float) -> Path:
    """A CPU-quota cgroup (v1) of this run, ``quota`` cores, inside a group of its own without a quota; both
    carry the kernel's largest weight, so the emulated VM's cores are its own on a busy machine. The outer
    group is where the profiler's interference peer goes (it leaves the quota, as another VM would be)."""
    outer = CGROUP_ROOT / f"srifty-e2e-{RUN_NAME}-{name}"
    path = outer / "quota"
    path.mkdir(parents=True, exist_ok=True)
    for group in (outer, path):
        (group / "cpu.shares").write_text(str(WEIGHT_V1))
    quota_us, period_us = quota_window_us(quota)  # srifty run's own short period (see srifty.runtime.cpu_quota)
    (path / "cpu.cfs_period_us").write_text(str(period_us))
    (path / "cpu.cfs_quota_us").write_text(str(quota_us))
    return path


def remove_cgroups() -> None:
    """Remove this run's cgroups, inner ones first (their processes have been ended by then)."""
    for outer in CGROUP_ROOT.glob(f"srifty-e2e-{RUN_NAME}-*"):
        for path in (outer / "quota", outer):
            with contextlib.suppress(OSError):
                path.rmdir()


def joining(cgroup: Path) -> Callable[[], None]:
    """A ``preexec_fn`` that moves the child into ``cgroup`` before it runs anything (no shell involved)."""

    def join() -> None:
        (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    return join


def profile_path(case: Case, host: Host, out: Path) -> Path:
    """Where the profile of ``case``'s model under ``host``'s CPU quota is kept."""
    return out / f"{case.model.replace(':', '-').replace('/', '-')}_q{host.quota}.json"


#: A saved profile is reused only if measured within this many seconds: this VM's speed drifts over hours (the
#: multi-host benchmark's ranks computed their forward passes 25% faster at 21:30 than the profiles measured at
#: 16:00 on 2026-12-04, same machine), so a profile from hours before predicts another machine.
MAX_PROFILE_AGE_S = 3600.0


def stale_reason(profile: Profile, now_s: float) -> str | None:
    """Why a saved profile of this machine is not reused: it lacks the interference measurement, or it is older
    than :data:`MAX_PROFILE_AGE_S` (or its age is unknown); ``None`` to reuse it."""
    if profile.interference is None:
        return "it has no interference measurement"
    try:
        created_s = dt.datetime.fromisoformat(profile.created_at).timestamp()
    except ValueError:
        return f"its measurement time {profile.created_at!r} is unreadable"
    age_s = now_s - created_s
    if age_s > MAX_PROFILE_AGE_S:
        limit_h = MAX_PROFILE_AGE_S / 3600
        return f"measured {age_s / 3600:.1f} h ago (reused only within {limit_h:g} h: this VM's speed drifts)"
    return None


#: Profiles this process has measured: ``remeasure`` measures each once per run, so that a type shared by
#: several cases is not measured again for each, overwriting the profile an earlier case was predicted from.
_MEASURED_THIS_RUN: set[Path] = set()


def profile_type(case: Case, host: Host, cgroup: Path, out: Path, guard: ProcessGuard, remeasure: bool) -> Path:
    """``srifty profile`` of the case's model under the type's CPU quota, unless ``out`` holds a profile
    measured on this machine within the last hour (:func:`stale_reason`; one from elsewhere, or of an unknown
    machine, is measured again); with ``remeasure``, measured again once in this process, then reused."""
    path = profile_path(case, host, out)
    if path.resolve() in _MEASURED_THIS_RUN:
        return path
    if path.exists() and not remeasure:
        try:
            existing = load_profile(path)
            require_this_machine(existing, str(path), current_machine())
            why = stale_reason(existing, time.time())
            if why is None:
                return path
            print(f"re-measuring {path}: {why}", flush=True)
        except ProfileError as why_not:
            print(f"re-measuring: {why_not}", flush=True)
    args = [sys.executable, "-m", "srifty.cli.main", "profile", "--model", case.model, "--threads", "1",
            "--max-batch", str(max(2, 2 * max(h.batch for h in case.hosts))), "--iters", "6", "--warmup", "2",
            "--out", str(path)]  # fmt: skip
    if case.model.startswith("hf:"):  # srifty profile refuses --seq-len for other models
        args += ["--seq-len", str(case.seq_len)]
    if case.image_size:
        args += ["--image-size", str(case.image_size)]
    args += case.profile_args
    proc = guard.popen(args, stdout=subprocess.DEVNULL, preexec_fn=joining(cgroup), start_new_session=True)
    if proc.wait() != 0:
        raise RuntimeError(f"{case.name}: `{' '.join(args[2:])}` failed with exit code {proc.returncode}")
    _MEASURED_THIS_RUN.add(path.resolve())
    return path


def run_ddp(
    case: Case,
    cgroups: list[Path],
    seed: int,
    warmup: int,
    iters: int,
    out: Path,
    guard: ProcessGuard,
    worker: str = "benchmarks.e2e_worker",
    extra_env: dict[str, str] | None = None,
    scale: float = SCALE,
) -> list[float]:
    """Real DDP training across testbed hosts (or another ``worker`` module, given ``extra_env``), links shaped
    to ``scale`` times the family's rated bandwidth; returns rank 0's timed iteration times (s)."""
    result = out / f"run-{case.name.replace(' ', '_')}.json"
    env = {
        "E2E_MODEL": case.model,
        "E2E_IMAGE_SIZE": str(case.image_size),
        "E2E_SEQ_LEN": str(case.seq_len),
        "E2E_WARMUP": str(warmup),
        "E2E_ITERS": str(iters),
        "E2E_OUT": str(result),
        "E2E_CGROUPS": "",
        "SRIFTY_RANK_BATCHES": ",".join(str(h.batch) for h in case.hosts),
        **(extra_env or {}),
    }
    on_testbed(case, cgroups, seed, guard, [worker], env, scale)
    return list(json.loads(result.read_text())["iter_s"])


def on_testbed(
    case: Case,
    cgroups: list[Path],
    seed: int,
    guard: ProcessGuard,
    module_args: list[str],
    extra_env: dict[str, str],
    scale: float = SCALE,
) -> None:
    """``python -m MODULE_ARGS`` under torchrun on every host of the case's testbed allocation (drawn from
    ``seed``: the same seed, the same links), each host's processes in its CPU-quota cgroup; the testbed is
    taken down afterwards."""
    family = family_from_catalog(case.family)
    name = RUN_NAME
    down(name)
    state = up(name, len(case.hosts), family, scale=scale, seed=seed, gpus_per_host=1)
    port = 29500 + seed % 1000
    env = {
        **os.environ,
        "GLOO_SOCKET_IFNAME": HOST_IFACE,
        "OMP_NUM_THREADS": "1",
        ENV_TESTBED_STATE: str(state_path(name)),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        **extra_env,
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
                *module_args,
            ]
            # Join the host's cgroup before entering the namespace: `ip netns exec` remounts /sys, hiding the
            # cgroup tree from the worker. torchrun and its worker inherit the membership.
            procs.append(
                guard.popen(
                    cmd,
                    env={**env, ENV_TESTBED_HOST: host.namespace},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    preexec_fn=joining(cgroups[host.index]),
                    start_new_session=True,
                )
            )
        for proc in procs:
            _, err = proc.communicate(timeout=1800)
            if proc.returncode != 0:
                raise RuntimeError(f"{case.name}: a host failed:\n{err.decode()[-2000:]}")
    finally:
        guard.end()  # torchrun agents and workers of every host, wherever they run
        down(name)


#: The allocation probe: allreduce above the MTU, one transfer at a time (``srifty probe`` on the hosts).
PROBE_ARGS = ["--min-size", "1MiB", "--max-size", "16MiB", "--concurrency", "1", "--repeats", "5", "--warmup", "2"]


def probe_path(case: Case, out: Path) -> Path:
    """Where the case's allocation probe is kept."""
    return out / f"{case.name.replace(' ', '_')}.parquet"


def probe_allocation_of(case: Case, seed: int, out: Path, guard: ProcessGuard) -> Path:
    """``srifty probe`` on the case's allocation (the testbed drawn from ``seed``, as its runs will be), every host
    under its type's CPU quota, before any run: what srifty could measure once the VMs are up."""
    path = probe_path(case, out)
    path.unlink(missing_ok=True)
    cgroups = [make_cgroup(f"h{j}", h.quota) for j, h in enumerate(case.hosts)]
    on_testbed(case, cgroups, seed, guard, ["srifty.cli.main", "probe", "--out", str(path), *PROBE_ARGS], {})
    return path


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


@contextlib.contextmanager
def cleaned_up() -> Iterator[ProcessGuard]:
    """Everything this run starts goes through the guard; on any way out (success, error, Ctrl-C, SIGTERM)
    its processes are ended, its testbed taken down and its cgroups removed."""
    with signals_as_exit(), ProcessGuard("e2e") as guard:
        try:
            yield guard
        finally:
            guard.end()
            down(RUN_NAME)
            remove_cgroups()


def case_profiles(case: Case, args: argparse.Namespace, guard: ProcessGuard) -> dict[str, Profile]:
    """The case's profile per emulated type, measured under its quota here unless already measured here."""
    profiles_dir = Path(args.profiles_dir)
    profiles_dir.mkdir(parents=True, exist_ok=True)
    profiles: dict[str, Profile] = {}
    for j, host in enumerate(case.hosts):
        key = emulated_type(case, host).name
        if key not in profiles:
            cgroup = make_cgroup(f"p{j}", host.quota)
            profiles[key] = load_profile(profile_type(case, host, cgroup, profiles_dir, guard, args.remeasure))
    check_one_machine(profiles)
    return profiles


def predict_cases(cases: list[Case], args: argparse.Namespace, guard: ProcessGuard) -> dict[str, Any]:
    """Every case's predictions (profiling first where needed, then probing the case's allocation unless
    ``--no-probe``), with the time they were written."""
    net, alpha_beta = scaled_models()
    rows = []
    for case in cases:
        profiles = case_profiles(case, args, guard)
        probes = None
        if not args.no_probe:
            Path(args.probes_dir).mkdir(parents=True, exist_ok=True)
            seed = args.seed + CASES_AND_SMOKE.index(case)
            probes = probe_allocation_of(case, seed, Path(args.probes_dir), guard)
        predicted = predict(case, profiles, net, alpha_beta, probes)
        rows.append({"case": case.name, "config": config_of(case).notation(), **predicted})
        times = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in predicted.items() if k.endswith("_s"))
        print(f"predicted {case.name}: {times}", flush=True)
    now = time.time()
    return {"written_unix": now, "written_utc": dt.datetime.fromtimestamp(now, dt.UTC).isoformat(timespec="seconds"),
            "machine": machine_description(), "rows": rows}  # fmt: skip


def measure_cases(cases: list[Case], args: argparse.Namespace, guard: ProcessGuard, repeat: int) -> list[dict]:
    """Run each case once (one repetition) and measure it, with what other processes used of the CPU meanwhile."""
    out = Path(tempfile.mkdtemp(prefix="srifty-e2e-"))
    rows = []
    try:
        for case in cases:
            cgroups = [make_cgroup(f"h{j}", h.quota) for j, h in enumerate(case.hosts)]
            before, started = cpu_seconds(), time.perf_counter()
            seed = args.seed + CASES_AND_SMOKE.index(case)
            measured = run_ddp(case, cgroups, seed, args.warmup, args.iters, out, guard)
            others = others_cores(before, cpu_seconds(), time.perf_counter() - started)
            truth = statistics.mean(measured)
            rows.append({"case": case.name, "repeat": repeat, "measured_s": truth,
                         "measured_std_s": statistics.stdev(measured), "iter_s": measured,
                         "other_processes_cores": others})  # fmt: skip
            print(f"{case.name} (repetition {repeat + 1}): measured {truth * 1e3:.1f} ms, others {others:.2f} cores",
                  flush=True)  # fmt: skip
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return rows


def predict(
    case: Case, profiles: dict[str, Profile], net: Any, alpha_beta: Any, probes: Path | None = None
) -> dict[str, Any]:
    """Predicted mean iteration time (s) of ``case``: srifty with the profiles' measured interference
    (``srifty_s``), srifty with the paper's perfect overlap (``srifty_perfect_s``, the model before issue 27),
    APM (``apm_s``); and which iteration model srifty used. Given the allocation's probe (``probes``), srifty
    both ways again with the bandwidth model corrected by it (``srifty_probed_s``, ``srifty_probed_perfect_s``:
    :mod:`srifty.sim.allocation`) and what the probe found (its level and saturated bus bandwidth)."""
    config = config_of(case)
    rng = np.random.default_rng

    def both(model: Any) -> tuple[Any, Any]:
        ours = Simulator(profiles, model, SimOptions(iters=500)).simulate(config, rng(0))
        perfect = Simulator(profiles, model, SimOptions(iters=500, interference=False)).simulate(config, rng(0))
        return ours, perfect

    ours, perfect = both(net)
    out = {"srifty_s": ours.iter_mean_s, "srifty_perfect_s": perfect.iter_mean_s,
           "apm_s": apm_predictor(profiles, alpha_beta).predict(config).iter_mean_s,
           "iteration_model": ours.iteration_model}  # fmt: skip
    if probes is not None:
        probed = probe_allocation(net.model, read_probes(probes), [g.instance for g in config.groups])
        ours, perfect = both(ScaledBandwidth(AllocationModel(net.model, probed), SCALE))
        out |= {"srifty_probed_s": ours.iter_mean_s, "srifty_probed_perfect_s": perfect.iter_mean_s,
                "apm_probed_s": apm_probed_s(case, profiles, alpha_beta, probes),
                "allocation_level": probed.level,
                "allocation_correction": CORRECTION_BY_SIZE,
                "allocation_saturated_gbps": probed.saturated_busbw_bytes_per_s * 8 / 1e9 / SCALE}  # fmt: skip
    return out


#: How :class:`srifty.sim.AllocationModel` corrects the model, recorded with each probed prediction: since
#: commit c6da2c6 by the allocation's ratio at each size; predictions without the field took one level for all.
CORRECTION_BY_SIZE = "ratio by size"


def probe_correction(rows: list[dict[str, Any]]) -> str:
    """How the probed predictions in ``rows`` corrected the bandwidth model, in words."""
    if all(row.get("allocation_correction") == CORRECTION_BY_SIZE for row in rows):
        return (
            "the model times the allocation's ratio to it at each size, interpolated in log size between "
            "the probed sizes and the nearest one's beyond them, at most the probed saturated bus bandwidth"
        )
    return "the model times the allocation's level, one for every size, at most the probed saturated bus bandwidth"


def apm_probed_s(case: Case, profiles: dict[str, Profile], alpha_beta: Any, probes: Path) -> float:
    """APM's prediction (s) with its alpha-beta model corrected by the same allocation probe, the same way
    (:class:`srifty.sim.AllocationModel`: its own ratios against the probe, at most the probed saturated bus
    bandwidth), so that what the probe is worth shows apart from srifty's iteration model."""
    config = config_of(case)
    probed = probe_allocation(alpha_beta.model, read_probes(probes), [g.instance for g in config.groups])
    corrected = ScaledBandwidth(AllocationModel(alpha_beta.model, probed), SCALE)
    return float(apm_predictor(profiles, corrected).predict(config).iter_mean_s)


def probed_apm_after(pred: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The saved run's predictions with APM corrected by each case's saved allocation probe beside them
    (``apm_probed_after_s``), from the run's profiles: computed after its runs, and labelled so."""
    _, alpha_beta = scaled_models()
    by_name = {case.name: case for case in CASES_AND_SMOKE}
    rows = []
    for row in pred["rows"]:
        case = by_name[row["case"]]
        probes = probe_path(case, Path(args.probes_dir))
        profiles = saved_profiles(case, Path(args.profiles_dir))
        rows.append({**row, "apm_probed_after_s": apm_probed_s(case, profiles, alpha_beta, probes)})
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return {**pred, "rows": rows, "apm_probed_after": {"utc": now, "machine": machine_description()}}


def repredict_cases(saved: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The saved run's predictions made again from its profiles with the current models (nothing measured)."""
    net, alpha_beta = scaled_models()
    by_name = {case.name: case for case in CASES_AND_SMOKE}
    rows = []
    for old in saved["predictions"]["rows"]:
        case = by_name[old["case"]]
        probes = probe_path(case, Path(args.probes_dir))
        probed = probes if probes.exists() else None
        rows.append({**old, **predict(case, saved_profiles(case, Path(args.profiles_dir)), net, alpha_beta, probed)})
    return {**saved["predictions"], "rows": rows, "repredicted_utc": dt.datetime.now(dt.UTC).isoformat()}


CASES_AND_SMOKE = CASES + SMOKE_CASES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of every case (after all predictions)")
    parser.add_argument("--seed", type=int, default=7, help="allocation seed (not one the default model saw)")
    parser.add_argument("--only", nargs="*", help="case names (also the smoke case 'tiny 2x')")
    parser.add_argument("--profiles-dir", default=str(ROOT / "benchmarks" / "results" / "end_to_end_profiles"))
    parser.add_argument("--remeasure", action="store_true", help="measure every profile again")
    parser.add_argument("--probes-dir", default=str(ROOT / "benchmarks" / "results" / "end_to_end_probes"))
    parser.add_argument("--no-probe", action="store_true", help="predict without probing each case's allocation")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md and results")
    parser.add_argument("--repredict", action="store_true", help="predict the last run's measurements again")
    parser.add_argument("--render", action="store_true", help="write the section from the raw file; run nothing")
    parser.add_argument(
        "--probed-apm-after",
        action="store_true",
        help="add APM corrected by each case's saved allocation probe to the last run (after its runs; labelled so)",
    )
    args = parser.parse_args()
    started = time.time()
    cases = [c for c in CASES_AND_SMOKE if c.name in args.only] if args.only else CASES
    saved: dict[str, Any] = json.loads(RAW.read_text(encoding="utf-8")) if RAW.exists() else {}
    if args.render or args.probed_apm_after:
        if args.probed_apm_after:
            saved["predictions"] = probed_apm_after(saved["predictions"], args)
            atomic_write_text(RAW, json.dumps(saved, indent=1) + "\n")
        write_section(SECTION, render(saved, 0.0, repredicted=False))
        return
    if args.repredict:
        saved["predictions"] = repredict_cases(saved, args)
    else:
        try:
            with cleaned_up() as guard:
                predictions = predict_cases(cases, args, guard)
                if not args.no_write:  # written down before any run
                    atomic_write_text(RAW, json.dumps({**saved, "next_predictions": predictions}, indent=1) + "\n")
                rows = [row for r in range(args.repeats) for row in measure_cases(cases, args, guard, r)]
        except KeyboardInterrupt:
            print("interrupted (Ctrl-C); the run's processes, namespaces and cgroups are removed", file=sys.stderr)
            sys.exit(130)
        saved.pop("next_predictions", None)
        if "measurements" in saved:
            saved.setdefault("earlier", []).append({k: saved[k] for k in ("predictions", "measurements")})
        saved["predictions"] = predictions
        saved["measurements"] = {"rows": rows, "machine": machine_description(), "elapsed_s": time.time() - started,
                                 "warmup": args.warmup, "iters": args.iters}  # fmt: skip
    body = render(saved, time.time() - started, args.repredict)
    print(body)
    if args.no_write:
        return
    atomic_write_text(RAW, json.dumps(saved, indent=1) + "\n")
    write_section(SECTION, body)


SECTION = "End-to-end iteration-time prediction"
RAW = ROOT / "benchmarks" / "results" / "end_to_end.json"
#: The last run before issue 27 (one measurement per case, srifty with perfect overlap), kept for the before line.
BEFORE_RAW = ROOT / "benchmarks" / "results" / "end_to_end_before27.json"
#: The last run with 100 ms CPU-quota periods (commit 0733aa7; its profiles beside it).
QUOTA100_RAW = ROOT / "benchmarks" / "results" / "quota100ms" / "end_to_end.json"


def _pct(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured * 100


def render(saved: dict[str, Any], elapsed_s: float, repredicted: bool) -> str:
    """The section's Markdown: this run (every repetition) against srifty with and without the measured
    interference and APM, then the run before issue 27."""
    pred, meas = saved["predictions"], saved["measurements"]
    by_case: dict[str, list[dict[str, Any]]] = {}
    for row in meas["rows"]:
        by_case.setdefault(row["case"], []).append(row)
    keys = ("srifty_perfect_s", "srifty_s", "apm_s")
    errors: dict[str, list[float]] = {k: [] for k in keys}
    lines = [
        "| case | config | measured mean (ms): all (each repetition) | srifty, perfect overlap (ms) | error "
        "| srifty, measured interference (ms) | error | APM (ms) | error | other processes' CPU (cores) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in pred["rows"]:
        runs = by_case.get(p["case"], [])
        if not runs:
            continue
        truth = statistics.fmean(r["measured_s"] for r in runs)
        each = " / ".join(f"{r['measured_s'] * 1e3:.0f}" for r in runs)
        cells = [p["case"], f"`{p['config']}`", f"{truth * 1e3:.0f} ({each})"]
        for k in keys:
            errors[k].append(_pct(p[k], truth))
            cells += [f"{p[k] * 1e3:.0f}", f"{errors[k][-1]:+.1f}%"]
        cells.append(" / ".join(f"{r['other_processes_cores']:.2f}" for r in runs))
        lines.append("| " + " | ".join(cells) + " |")
    mape = {k: statistics.fmean(abs(e) for e in v) for k, v in errors.items()}
    worst = {k: max(abs(e) for e in v) for k, v in errors.items()}
    under = {k: sum(e < 0 for e in v) / len(v) * 100 for k, v in errors.items()}
    goal = _goal(mape, worst, "srifty_s", "apm_s")
    repetitions = max(len(v) for v in by_case.values())
    how = (
        f"Predictions recomputed with `python -m benchmarks.end_to_end --repredict` ({elapsed_s:.0f} s) from the "
        "run's profiles. "
        if repredicted
        else ""
    )
    return "\n".join([
        "Real DDP training (gloo, 1 rank per emulated host) on the namespace testbed, links at 1/50 of the",
        "family's rated bandwidth; slower types emulated by cgroup CPU quotas (cores in the type name; 10 ms",
        "periods, closer to a slower CPU than 100 ms: see \"Testbed CPU quotas: the period\").",
        f"Measured: mean of {meas['iters']} timed iterations after {meas['warmup']} warm-up ones, on rank 0, in",
        f"each of {repetitions} repetitions (every case once, then again); the column gives their mean and each.",
        f"Predictions written at {pred['written_utc']}, before the first run, from profiles measured by `srifty",
        "profile` under each type's quota (with its interference measurement) and the embedded bandwidth model.",
        "*srifty, perfect overlap* is the paper's `t_fw + max(t_bwd, t_pe) + t_step` (srifty before issue 27);",
        "*srifty, measured interference* slows backward and communication while they overlap by the factors",
        "each profile measured (`srifty.sim.overlap`).",
        "Other processes' CPU: cores used by processes outside this",
        "run during each repetition (at least; the machine is shared).",
        "",
        *lines,
        "",
        "| | srifty, perfect overlap | srifty, measured interference | APM | paper: srifty | paper: APM |",
        "|---|---|---|---|---|---|",
        "| MAPE | " + " | ".join(f"{mape[k]:.1f}%" for k in keys) + " | 8.3% | 24% |",
        "| largest error | " + " | ".join(f"{worst[k]:.1f}%" for k in keys) + " | | |",
        "| cases underestimated | " + " | ".join(f"{under[k]:.0f}%" for k in keys) + " | 52% | 93% |",
        "",
        "Issue 27's goal (srifty ≤ 6% MAPE, below APM, no case off by more than 12%): "
        + ("met." if goal else "missed."),
        "",
        *_probed_lines(pred, by_case, mape["apm_s"]),
        f"{how}Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.end_to_end` (as root; "
        f"{meas['elapsed_s'] / 60:.0f} min). Machine: {meas['machine']}.",
        "Profiles: `benchmarks/results/end_to_end_profiles/`; raw: `benchmarks/results/end_to_end.json`.",
        *_repeatability_lines(saved),
        *_earlier_lines(saved),
        *_quota100_line(),
        *_before_line(),
    ])  # fmt: skip


def _probed_lines(pred: dict[str, Any], by_case: dict[str, list[dict[str, Any]]], apm_mape: float) -> list[str]:
    """The same cases predicted once each allocation was probed (:mod:`srifty.sim.allocation`), if it was."""
    rows = [p for p in pred["rows"] if "srifty_probed_s" in p and by_case.get(p["case"])]
    if not rows:
        return []
    apm_key = next((k for k in ("apm_probed_s", "apm_probed_after_s") if all(k in p for p in rows)), None)
    keys = ("srifty_probed_perfect_s", "srifty_probed_s", *((apm_key,) if apm_key else ()))
    errors: dict[str, list[float]] = {k: [] for k in keys}
    lines = [
        "| case | allocation's level (probed / model) | saturated bus bandwidth probed (Gbps) | measured (ms) "
        "| srifty, perfect overlap (ms) | error | srifty, measured interference (ms) | error |"
        + (" APM, same probe (ms) | error |" if apm_key else ""),
        "|---|---|---|---|---|---|---|---|" + ("---|---|" if apm_key else ""),
    ]
    for p in rows:
        truth = statistics.fmean(r["measured_s"] for r in by_case[p["case"]])
        cells = [p["case"], f"x{p['allocation_level']:.2f}", f"{p['allocation_saturated_gbps']:.3f}",
                 f"{truth * 1e3:.0f}"]  # fmt: skip
        for k in keys:
            errors[k].append(_pct(p[k], truth))
            cells += [f"{p[k] * 1e3:.0f}", f"{errors[k][-1]:+.1f}%"]
        lines.append("| " + " | ".join(cells) + " |")
    mape = {k: statistics.fmean(abs(e) for e in v) for k, v in errors.items()}
    worst = {k: max(abs(e) for e in v) for k, v in errors.items()}
    apm_line = ""
    if apm_key:
        apm_line = (
            f" APM corrected by the same probe the same way (its own ratios against it, the same ceiling): "
            f"{mape[apm_key]:.1f}% (largest {worst[apm_key]:.1f}%)"
            + (
                ", computed after the runs from the same profiles and probes (`--probed-apm-after`, "
                f"{pred.get('apm_probed_after', {}).get('utc', '?')}): not a prediction made before them."
                if apm_key == "apm_probed_after_s"
                else "."
            )
        )
    return [
        "**Once the allocation is probed.** The predictions above are made before any VM exists, so they take",
        "the bandwidth model's average allocation; each case's runs get one allocation (the testbed's placement",
        "draw from the case's seed), whose links differ from the average by as much as the model's noise floor",
        'between allocations (20.5% MAPE above the MTU, "Bus-bandwidth model accuracy"). Here each case\'s',
        "allocation was probed before the predictions were written (`srifty probe` on its hosts, each under its",
        "CPU quota: allreduce of 1-16 MiB, 5 repeats; `benchmarks/results/end_to_end_probes/`), and the model",
        "corrected by the probe (`srifty simulate --allocation-probes`, `srifty.sim.allocation`: "
        f"{probe_correction(pred['rows'])}). Still predictions made before the runs: the probe measures the links, "
        "not the training.",
        "",
        *lines,
        "",
        f"MAPE once probed: perfect overlap {mape['srifty_probed_perfect_s']:.1f}% (largest "
        f"{worst['srifty_probed_perfect_s']:.1f}%), measured interference {mape['srifty_probed_s']:.1f}% (largest "
        f"{worst['srifty_probed_s']:.1f}%); APM, not probed, {apm_mape:.1f}%.{apm_line}",
        "",
        "Issue 27's goal once the allocation is probed (srifty with its measured interference ≤ 6% MAPE, below APM "
        "with the same probe where there is one, no case off by more than 12%): "
        + ("met." if _goal(mape, worst, "srifty_probed_s", apm_key or "") else "missed."),
        "",
    ]


def _goal(mape: dict[str, float], worst: dict[str, float], ours: str, theirs: str) -> bool:
    """Issue 27's goal: ``ours`` at most 6% MAPE, below ``theirs`` (if scored), no case off by more than 12%."""
    return mape[ours] <= 6 and mape[ours] < mape.get(theirs, float("inf")) and worst[ours] <= 12


def _mape_parts(predictions: dict[str, Any], measurements: dict[str, Any]) -> str:
    """``name a% (largest b%)`` for srifty with and without the measured interference and APM, one run, and
    srifty and APM once probed where the run has them."""
    truth = _case_means(measurements)
    parts = []
    names = (("srifty_perfect_s", "srifty, perfect overlap"), ("srifty_s", "srifty, measured interference"),
             ("apm_s", "APM"), ("srifty_probed_s", "once probed: srifty, measured interference"),
             ("apm_probed_s", "APM with the same probe"),
             ("apm_probed_after_s", "APM with the same probe (computed after)"))  # fmt: skip
    for key, name in names:
        errors = [abs(_pct(r[key], truth[r["case"]])) for r in predictions["rows"]
                  if r["case"] in truth and key in r]  # fmt: skip
        if errors:
            parts.append(f"{name} {statistics.fmean(errors):.1f}% (largest {max(errors):.1f}%)")
    return ", ".join(parts)


def _earlier_lines(saved: dict[str, Any]) -> list[str]:
    """One line per earlier run the raw file keeps (each re-run moves the one before into ``earlier``), newest
    first; the run with 100 ms quota periods has a line of its own below."""
    quota100 = ""
    if QUOTA100_RAW.exists():
        quota100 = commit_of(json.loads(QUOTA100_RAW.read_text())["measurements"]["machine"])
    lines = []
    for run in reversed(saved.get("earlier", [])):
        machine = run["measurements"]["machine"]
        if commit_of(machine) == quota100:
            continue
        lines += [
            "",
            f"An earlier run (same command, predictions written at {run['predictions']['written_utc']} before its "
            f"runs; machine: {machine}; kept under `earlier` in the raw file): MAPE "
            + _mape_parts(run["predictions"], run["measurements"])
            + ". Each run measures its profiles, interference factors and (since session 16) allocation probes "
            "again, so runs differ by those too, on the same machine or not.",
        ]
    return lines


def _case_means(measurements: dict[str, Any]) -> dict[str, float]:
    """Each case's measured mean iteration time (s) over a run's repetitions."""
    truth: dict[str, list[float]] = {}
    for row in measurements["rows"]:
        truth.setdefault(row["case"], []).append(row["measured_s"])
    return {case: statistics.fmean(values) for case, values in truth.items()}


def _repeatability_lines(saved: dict[str, Any]) -> list[str]:
    """How far this run's measured means moved from the run before it, where that run predicted from the same
    profiles (its perfect-overlap predictions are this run's to the microsecond): what a predictor exact for one
    run would score on the other, the testbed's floor under any MAPE here. Then that run's measurements against
    this run's predictions (made after its runs, so not a prediction of them)."""
    earlier = saved.get("earlier", [])
    if not earlier:
        return []
    before, now = earlier[-1], saved["predictions"]
    same = {r["case"]: r["srifty_perfect_s"] for r in before["predictions"]["rows"] if "srifty_perfect_s" in r}
    if not same or any(abs(same.get(r["case"], -1.0) - r["srifty_perfect_s"]) > 1e-6 for r in now["rows"]):
        return []
    then, latest = _case_means(before["measurements"]), _case_means(saved["measurements"])
    moved = {case: _pct(latest[case], then[case]) for case in latest if case in then}
    worst = max(moved, key=lambda case: abs(moved[case]))
    return [
        "",
        f"Repeatability: the run before this one (predictions written at {before['predictions']['written_utc']}) "
        "measured the same cases from the same profiles on the same machine. This run's means moved from its by "
        f"{statistics.fmean(abs(v) for v in moved.values()):.1f}% on average (largest {moved[worst]:+.1f}%, "
        f"{worst}): a predictor exact for one run would score that MAPE on the other. That run's measurements "
        "against this run's predictions (made after its runs; srifty changed in between): MAPE "
        + _mape_parts(now, before["measurements"])
        + ".",
    ]


def _quota100_line() -> list[str]:
    """The run before the testbed's quotas moved to 10 ms periods, as its section reported it."""
    if not QUOTA100_RAW.exists():
        return []
    saved = json.loads(QUOTA100_RAW.read_text(encoding="utf-8"))
    return [
        "",
        "Before the testbed's CPU quotas moved to 10 ms periods (3 repetitions at commit 0733aa7 with 100 ms "
        "periods, under which a rank computed at a full core after waiting on the network; raw and profiles: "
        "`benchmarks/results/quota100ms/`): MAPE " + _mape_parts(saved["predictions"], saved["measurements"]) + ".",
    ]


def _before_line() -> list[str]:
    """The last run before issue 27 (one measurement per case), as its section reported it."""
    if not BEFORE_RAW.exists():
        return []
    rows = json.loads(BEFORE_RAW.read_text(encoding="utf-8"))
    parts = []
    for key, name in (("srifty_s", "srifty (perfect overlap)"), ("apm_s", "APM")):
        errors = [abs(_pct(r[key], r["measured_s"])) for r in rows]
        parts.append(f"{name} {statistics.fmean(errors):.1f}% (largest {max(errors):.1f}%)")
    return [
        "",
        "Before issue 27 (one run per case at commit a4255a2, predictions redone at fb1c8cb after the bandwidth "
        "model changed; raw: `benchmarks/results/end_to_end_before27.json`): MAPE " + ", ".join(parts) + ".",
    ]


if __name__ == "__main__":
    main()
