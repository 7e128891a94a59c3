"""The BENCHMARKS.md section for the profiles ``srifty profile`` measured on an H200 (see
:mod:`benchmarks.h200_profiles`, whose ``report`` part calls :func:`report`). Nothing is measured here.

Three checks, each against something srifty did not fit on:

1. **The profiler against the released curves.** ``shared/data/reference/h200`` (bundled as
   ``h200_fp32_curves.csv``) timed resnet50, vgg16 and mobilenet_v2 on an H200 at 11 batches with a script of
   its own. srifty's profiler measured 4 of them with the same PyTorch defaults; its measurements are set
   beside those, and its 4-probe latency fit is scored at all 11 batches.
2. **srifty's H200 estimate of a model it was not fitted on** (the calibration, from a CPU profile's op
   counts: ``srifty profile estimate --gpu H200``) against the profile measured, at the probed batches. The
   bundled calibration is fitted on these profiles too (since issue 27's session 15), so each profiled model
   outside the released curves is estimated by the same fit made without it (:func:`held_out_calibration`); the
   released curves' models are shown for reference (fitted on). The roofline estimate (``--method roofline``)
   stands beside as the baseline. CPU profiles: the bundled ones where the package has one, else measured here
   (``benchmarks/results/h200_profiles/cpu_sources/``, ``srifty profile --max-batch 8 --no-interference``).
3. **Interference on the GPU** with gloo's host-staged exchange, with the same DDP-overlap check as the
   CPU section's (:func:`benchmarks.interference.ddp_check`).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import replace
from functools import cache

import numpy as np

from benchmarks.common import ROOT, machine_description, markdown_table, write_section
from benchmarks.interference import H200_PROFILE_GLOB, ddp_check
from srifty.compute import Profile, calibrated_profile, estimate_profile, gpu_fit, load_profile
from srifty.compute.bundled import profile_filename
from srifty.compute.estimate import resolve_gpu
from srifty.compute.gpu_fit import GpuCalibration, default_gpu_calibration
from srifty.compute.gpu_measurements import WORKLOADS, bundled_released_curves, bundled_srifty_curves, op_count_profile
from srifty.compute.gpu_model import phase_times_s, work_features
from srifty.compute.opclass import classify
from srifty.compute.work import OpRecord, OpWork

SECTION = "Profiles measured on a GPU (H200)"
FOLDER = ROOT / "benchmarks" / "results" / "h200_profiles"
CPU_SOURCES = FOLDER / "cpu_sources"
BUNDLED_CPU = ROOT / "src" / "srifty" / "compute" / "data" / "profiles"
#: srifty's model name -> the released curve's.
RELEASED = {"resnet50": "resnet50", "vgg16": "vgg16", "mobilenet_v2": "mobilenet_v2", "resnet18": "resnet18"}
PHASES = ("fw", "bw", "iter")
#: Op classes whose measured time (summed over the models, or in one model) is below this are left out of check 4.
CLASS_SHOWN_MS = 10.0
#: From this batch on, the released curves are throughput-bound (below it, launch-bound: the host sets the pace).
THROUGHPUT_BATCH = 32


def calibrated_models() -> set[str]:
    """The models the bundled GPU calibration was fitted on, but srifty's own H200 profiles': those of its other
    workloads' op-count profiles (the released H200 curves' and the public rows' models)."""
    profiled = {p.model for p in bundled_srifty_curves()}
    sources = (src for w in WORKLOADS if w.h200_name not in profiled for src in (w.fp32_profile, w.bf16_profile) if src)
    return {op_count_profile(src).model for src in sources}


@cache
def _bundled_cases() -> tuple[gpu_fit.Case, ...]:
    """The bundled calibration's cases, built once for every held-out refit."""
    return tuple(gpu_fit.build_cases(gpu_fit.GpuCalibrationData.bundled()))


def held_out_calibration(model: str) -> GpuCalibration:
    """The bundled calibration refitted on its own data without ``model``'s group (the profiled model's curve and
    anything else of the same model), as leave-one-model-out fits it."""
    group = next(w.group for w in WORKLOADS if w.h200_name == model)
    cases = [c for c in _bundled_cases() if c.group != group]
    return replace(default_gpu_calibration(), params=gpu_fit.fit_params(cases))


def measured_profiles() -> list[Profile]:
    """The H200 profiles of :data:`benchmarks.h200_profiles.MODELS` (the small first runs left out)."""
    return [load_profile(p) for p in sorted(FOLDER.glob(H200_PROFILE_GLOB))]


def cpu_source(model: str) -> tuple[Profile, str]:
    """The CPU profile an H200 estimate of ``model`` starts from, and where it came from."""
    stem = profile_filename(model, "cpu")
    for folder, label in ((BUNDLED_CPU, "bundled"), (CPU_SOURCES, "measured here")):
        if (folder / stem).exists():
            return load_profile(folder / stem), label
    raise FileNotFoundError(f"no CPU profile of {model} in {BUNDLED_CPU} or {CPU_SOURCES}")


def _mape(predicted: np.ndarray, measured: np.ndarray) -> float:
    return float(np.mean(np.abs(predicted / measured - 1.0)) * 100)


def released_rows(profiles: list[Profile]) -> list[list[str]]:
    """Check 1: srifty's measurement and 4-probe fit against the released curve of the same model."""
    curves = bundled_released_curves()
    out = []
    for p in profiles:
        if p.model not in RELEASED:
            continue
        points = sorted((c for c in curves if c.model == RELEASED[p.model]), key=lambda c: c.batch)
        by_batch = {c.batch: c for c in points}
        probes = []
        for s in p.samples:
            ref = by_batch.get(s.batch)
            if ref is not None:
                probes.append(f"{s.batch}: {s.mean_ms('iter'):.1f} / {ref.ms['iter']:.1f}")
        batches = np.array([c.batch for c in points], dtype=float)
        fits = [_mape(p.predict_ms(ph, batches), np.array([c.ms[ph] for c in points])) for ph in PHASES]
        large = [c for c in points if c.batch >= THROUGHPUT_BATCH]
        fit_large = _mape(
            p.predict_ms("iter", np.array([c.batch for c in large], dtype=float)),
            np.array([c.ms["iter"] for c in large]),
        )
        small = [s for s in p.samples if s.batch < THROUGHPUT_BATCH and s.batch in by_batch]
        floor = statistics.median(s.mean_ms("iter") / by_batch[s.batch].ms["iter"] for s in small) if small else None
        out.append([
            p.model, "; ".join(probes), " / ".join(f"{f:.1f}%" for f in fits), f"{fit_large:.1f}%",
            "" if floor is None else f"{floor:.2f}",
        ])  # fmt: skip
    return out


def estimate_rows(profiles: list[Profile]) -> tuple[list[list[str]], dict[str, list[float]]]:
    """Check 2: the calibrated and roofline H200 estimates from a CPU profile against the measured profile.

    Returns the rows and, for the held-out models, each method's iteration errors (%, every probed batch)."""
    out = []
    held: dict[str, list[float]] = {"calibrated": [], "roofline": [], "calibrated_1024": [], "roofline_1024": []}
    fitted_on = calibrated_models()
    profiled = {c.model for c in bundled_srifty_curves()}
    for p in profiles:
        source, where = cpu_source(p.model)
        batches = np.array([s.batch for s in p.samples], dtype=float)
        measured = np.array([s.mean_ms("iter") for s in p.samples])
        held_out = p.model not in fitted_on
        fitted = held_out_calibration(p.model) if p.model in profiled else None
        calibrated = calibrated_profile(source, "H200", calibration=fitted)
        roofline = estimate_profile(source, "H200")
        errors = {}
        for name, est in (("calibrated", calibrated), ("roofline", roofline)):
            errors[name] = (est.predict_ms("iter", batches) / measured - 1.0) * 100
        if held_out:
            for name in ("calibrated", "roofline"):
                held[name] += [abs(e) for e in errors[name]]
                held[f"{name}_1024"].append(abs(errors[name][-1]))
        signed = ", ".join(f"{int(b)}: {e:+.0f}%" for b, e in zip(batches, errors["calibrated"], strict=True))
        out.append([
            p.model, "held out" if held_out else "fitted on", where,
            ", ".join(f"{m:.1f}" for m in measured), signed,
            f"{np.mean(np.abs(errors['calibrated'])):.1f}%", f"{np.mean(np.abs(errors['roofline'])):.1f}%",
        ])  # fmt: skip
    return out, held


def interference_rows(profiles: list[Profile]) -> list[list[str]]:
    """Check 3: the factors measured on the GPU and the DDP-overlap check."""
    out = []
    med = statistics.median
    for p in profiles:
        m = p.interference
        if m is None:
            out.append([p.model, "not measured", *[""] * 6])
            continue
        predicted = [ddp_check(p, r) for r in m.repetitions]
        ddp = med(r.ddp_end_ms for r in m.repetitions)
        with_factors, perfect = med(x[0] for x in predicted), med(x[1] for x in predicted)
        b, c = m.bwd_slowdown, m.comm_slowdown
        out.append([
            p.model, f"{m.batch}", f"{b.median:.2f} [{b.low:.2f}–{b.high:.2f}]",
            f"{c.median:.2f} [{c.low:.2f}–{c.high:.2f}]", f"{med(r.bwd_alone_ms for r in m.repetitions):.1f}",
            f"{med(r.comm_alone_ms for r in m.repetitions):.1f}", f"{ddp:.1f}",
            f"{with_factors:.1f} ({with_factors / ddp - 1:+.0%}) / {perfect:.1f} ({perfect / ddp - 1:+.0%})",
        ])  # fmt: skip
    return out


def records_by_class(work: OpWork, classes: frozenset[str] | None = None) -> dict[tuple[str, str], list[OpRecord]]:
    """The timed op records of ``work`` by (phase, op class), host ops left out; only ``classes`` where given."""
    grouped: dict[tuple[str, str], list[OpRecord]] = {}
    for record, op_class in zip(work.records, classify(work), strict=True):
        if op_class != "host" and record.time_s is not None and (classes is None or op_class in classes):
            grouped.setdefault((record.phase, op_class), []).append(record)
    return grouped


def kernel_seconds(records: list[OpRecord], index: int) -> float:
    """The measured seconds of ``records`` at their work's ``index``-th batch (0: the smaller, 1: the larger)."""
    return sum(r.time_s[index] for r in records if r.time_s is not None)


def class_times_ms(p: Profile) -> dict[tuple[str, str], tuple[float, float]]:
    """Check 4: per (phase, op class), the kernel time the profile's instrumented iteration measured at its
    larger op-count batch and what the bundled calibration's GPU model prices the same ops at (ms)."""
    if p.work is None:
        return {}
    work = p.work
    spec = resolve_gpu("H200")
    params = default_gpu_calibration().params
    out = {}
    for key, records in records_by_class(work).items():
        features = work_features(replace(work, records=tuple(records)), [work.batches[1]], spec, p.numeric_settings)
        _, kernel = phase_times_s(features, params)
        predicted = sum(float(k[0]) for k in kernel.values())
        out[key] = (kernel_seconds(records, 1) * 1e3, predicted * 1e3)
    return out


def class_rows(profiles: list[Profile]) -> list[list[str]]:
    """Check 4's table: per (phase, class), summed over the models, with each model's ratio."""
    totals: dict[tuple[str, str], list[float]] = {}
    ratios: dict[tuple[str, str], list[str]] = {}
    for p in profiles:
        for key, (measured, predicted) in class_times_ms(p).items():
            sums = totals.setdefault(key, [0.0, 0.0])
            sums[0] += measured
            sums[1] += predicted
            if measured >= CLASS_SHOWN_MS:
                ratios.setdefault(key, []).append(f"{p.model} {predicted / measured:.2f}")
    rows = []
    for key, (measured, predicted) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        if measured < CLASS_SHOWN_MS:
            continue
        rows.append([key[0], key[1], f"{measured:.0f}", f"{predicted:.0f}", f"{predicted / measured:.2f}",
                     "; ".join(ratios.get(key, []))])  # fmt: skip
    return rows


def render() -> str:
    """The section."""
    profiles = measured_profiles()
    runs = json.loads((FOLDER / "runs.json").read_text())
    calls = [runs, *(json.loads(p.read_text()) for p in sorted(FOLDER.glob("runs_*.json")))]
    call_seconds = " and ".join(f"{c['total_s']:.0f}" for c in calls)
    gpu = profiles[0].device
    est_rows, held = estimate_rows(profiles)
    n_held = sum(1 for r in est_rows if r[1] == "held out")
    summary = (
        f"Held out ({n_held} models, {len(held['calibrated'])} probed batches): calibrated estimate "
        f"**{statistics.fmean(held['calibrated']):.1f}% MAPE** of the iteration (at batch 1024 alone "
        f"{statistics.fmean(held['calibrated_1024']):.1f}%), roofline {statistics.fmean(held['roofline']):.1f}% "
        f"(at 1024 {statistics.fmean(held['roofline_1024']):.1f}%)."
    )
    return "\n".join([
        f"The first profiles `srifty profile --device cuda` measured: one {gpu.name} ({gpu.label}, lent for 15 "
        "minutes), torch 2.11.0+cu130, PyTorch's defaults (cuDNN convolutions in TF32, matmuls in full FP32, "
        f"SGD), `--max-batch {runs['max_batch']}` (where the released curves stopped too), every other option "
        "the profiler's default. Profiles, logs and `nvidia-smi`: `benchmarks/results/h200_profiles/`.",
        "",
        "**The profiler against the released H200 curves** (the same GPU kind, another script and session; "
        "check 1 of `benchmarks/h200_report.py`): iteration mean at the batches srifty probed, srifty / "
        "released (ms); srifty's 4-probe latency fit scored at every released batch (MAPE fw / bw / iter) and at "
        f"those from {THROUGHPUT_BATCH} on (iteration), where the GPU sets the pace; and below {THROUGHPUT_BATCH}, "
        "where the host's kernel launches do, srifty's iteration over the released one at its probed batches "
        "(median): the two hosts' launch-bound floors.",
        "",
        *markdown_table(["model", "probed batch: srifty / released (ms)", "4-probe fit, all 11 released batches",
                 f"4-probe fit, batches ≥ {THROUGHPUT_BATCH}", f"floor ratio, batches < {THROUGHPUT_BATCH}"],
                released_rows(profiles)),
        "",
        "**srifty's H200 estimate of a model it was not fitted on, against the profile measured** (check 2): the "
        "calibration's estimate from the model's CPU profile (`srifty profile estimate CPU_PROFILE --gpu "
        "H200`), signed error of the iteration at each probed batch, and its MAPE beside the roofline "
        "baseline's (`--method roofline`: the CPU's op times scaled by roofline ratios, its host overhead "
        "kept). The bundled calibration is fitted on these profiles too (since issue 27's session 15); each "
        "*held out* model is estimated by the same fit made without it. *Fitted on*: the calibration was fitted "
        "on the released curves of this model (not held out). Before these profiles joined the fit, the held-out "
        "figure (the bundled calibration, which had seen none of them) was 12.8% MAPE.",
        "",
        *markdown_table(["model", "calibration", "CPU profile", "measured iteration (ms) at the probed batches",
                 "calibrated estimate: error by batch", "calibrated MAPE", "roofline MAPE"], est_rows),
        "",
        summary,
        "",
        "**Interference on the GPU** (check 3): the exchange is gloo's, which stages CUDA tensors through "
        "pinned host memory on streams of its own (DDP's `backend=\"gloo\"` on a GPU), with a loopback peer; "
        "not NCCL's, whose kernels take SMs from backward (NCCL refuses two ranks on one GPU). Columns as in "
        "\"Compute/communication interference (measured)\"; the last: the DDP overlap predicted with the "
        "measured factors / with perfect overlap.",
        "",
        *markdown_table(["model", "batch", "backward slowed by communication", "communication slowed by compute",
                 "backward alone (ms)", "allreduce alone, loopback (ms)", "DDP overlap measured (ms)",
                 "predicted: measured factors / perfect overlap"], interference_rows(profiles)),
        "",
        "**Where the GPU model errs, by op class** (check 4): each profile also timed every ATen op of one "
        "instrumented iteration at its larger op-count batch (1024) with CUDA events; those kernel times, summed "
        "by phase and op class over the models, against what the bundled calibration's GPU model prices the "
        "same ops at (kernel time only; predicted / measured per model where the class takes at least "
        f"{CLASS_SHOWN_MS:.0f} ms). The calibration is fitted to whole-phase times only, so it may trade one "
        "class against another and still get the totals right.",
        "",
        *markdown_table(["phase", "op class", "measured (ms)", "model (ms)", "model / measured", "by model"],
                class_rows(profiles)),
        "",
        "Commands: on the GPU machine `python -m benchmarks.h200_profiles measure --out DIR`, two calls ("
        f"{call_seconds} s; the second over the models the first had no time for, `MODELS[6:]`); here `python -m "
        "benchmarks.h200_profiles report` (reads the profiles; nothing measured). Report machine: "
        f"{machine_description()}.",
    ])  # fmt: skip


def report() -> None:
    """Write the section and print it."""
    body = render()
    write_section(SECTION, body)
    print(body)
