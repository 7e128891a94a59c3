"""Cross-GPU estimation against real GPU measurements, every figure leave-one-model-out.

What is scored (all from :mod:`srifty.compute.gpu_fit`'s held-out predictions: the model being
predicted, ResNet-50 or BERT-base in every form it appears in, is never in the fit):

* **H200 curves, CPU-sourced**: each of the 8 models' forward/backward/step/iteration latency at every
  measured batch (1-1024) on the H200, predicted from its CPU profile's op counts.
* **Public rows, CPU-sourced**: published single-GPU training throughput (DeepLearningExamples, Lambda) of
  ResNet-50, BERT-base and BERT-large SQuAD fine-tuning and ResNeXt-101 32x4d on 13 GPUs, FP32/TF32/AMP.
* **GPU-sourced**: the same public rows of ResNet-50, predicted from the H200's *measured* ResNet-50 curve
  scaled by the model's H200-to-target ratio (Habitat-style).

*Before* columns are srifty's previous estimator (``estimate_profile``: each op's measured CPU time scaled by
its roofline ratio, FP32 peaks, no TF32), on the same rows. It cannot scale a GPU measurement that has no
per-op GPU times (the H200 data has phase times only), so GPU-sourced *before* is the same roofline idea
applied to the H200 measurement: the iteration scaled by the ratio of the model's roofline times
(FLOPs/peak + bytes/bandwidth summed over ops) on both GPUs.

Run (under the CPU lock; about 20 minutes on 2 cores: two leave-one-model-out runs, with and without shapes):
``flock /tmp/srifty-cpu.lock python -m benchmarks.cross_gpu report``. ``measure`` re-profiles the
calibration workloads' op counts on this CPU (about 25 minutes) into the package. ``shapes`` adds each
matrix product's shape (issue 27) to every op-count source the fit reads and every bundled profile, by
recording the same model's op work again at the same batches and checking that every record's FLOPs and
bytes come out the same (about 5 minutes); nothing else in the files changes.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any
from unittest import mock

import numpy as np

from benchmarks.common import ROOT, machine_description, write_section
from srifty.catalog import load_catalog
from srifty.compute import H200_GPU, estimate_profile, gpu_model, gpu_peaks, op_count_profile, roofline_time_s, workload
from srifty.compute import gpu_fit as cal
from srifty.compute.gpu_measurements import bundled_released_curves

RESULTS = ROOT / "benchmarks" / "results"
ROWS_CSV = RESULTS / "cross_gpu_rows.csv"
WORKLOAD_DIR = ROOT / "src" / "srifty" / "compute" / "data" / "calibration" / "workloads"
# Issue 27's goals (leave one model out): H200 iteration MAPE and its worst model, public rows, GPU-sourced FP32;
# no GPU of the public rows above TARGET_GPU_MAX is an earlier target, kept as a flag.
TARGET_H200, TARGET_H200_WORST, TARGET_PUBLIC, TARGET_GPU_MAX, TARGET_GPU_SOURCED = 15.0, 30.0, 15.0, 35.0, 10.0

# Calibration workloads not bundled as srifty's default profiles: (file stem, model, precision, CPU batch cap,
# probes). BERT-large runs a different op sequence at batch 1 than at 2, so its op counts need batches 2 and 4.
MEASURE: list[tuple[str, str, str, int, int]] = [
    ("resnet50-bf16", "resnet50", "bf16", 16, 4),
    ("bert-base-squad-fp32", "srifty.compute.zoo:bert_base_squad", "fp32", 4, 4),
    ("bert-base-squad-bf16", "srifty.compute.zoo:bert_base_squad", "bf16", 4, 4),
    ("bert-large-squad-fp32", "srifty.compute.zoo:bert_large_squad", "fp32", 4, 2),
    ("bert-large-squad-bf16", "srifty.compute.zoo:bert_large_squad", "bf16", 4, 2),
    ("resnext101-32x4d-fp32", "srifty.compute.zoo:resnext101_32x4d", "fp32", 8, 4),
    ("resnext101-32x4d-bf16", "srifty.compute.zoo:resnext101_32x4d", "bf16", 8, 4),
]


def measure(only: list[str] | None) -> None:
    """Profile the calibration workloads on this CPU (op counts; run under the CPU lock)."""
    from srifty.compute.measure import profile_model
    from srifty.compute.measure.profiler import ProfileOptions

    for stem, model, precision, cap, probes in MEASURE:
        if only and stem not in only:
            continue
        options = ProfileOptions(
            device="cpu",
            precision=precision,
            max_batch_cap=cap,
            max_probes=probes,
            warmup_iters=1,
            timed_iters=2,
            threads=2,
        )
        started = time.time()
        profile_model(model, options).save(WORKLOAD_DIR / f"{stem}__cpu.json")
        print(f"{stem}: {time.time() - started:.0f} s", flush=True)


def add_shapes(only: list[str] | None) -> None:
    """Graft GEMM shapes onto the op-count sources of every calibration workload and every bundled profile
    that lacks them (see the module docstring)."""
    import dataclasses

    import torch

    from srifty.compute.gpu_measurements import WORKLOADS, op_count_source_path
    from srifty.compute.measure.opcount import record_work
    from srifty.compute.measure.profiler import ProfileOptions, _Trainer
    from srifty.compute.measure.workloads import build_workload

    torch.set_num_threads(2)
    bundled = sorted(p.name for p in (ROOT / "src" / "srifty" / "compute" / "data" / "profiles").glob("*.json"))
    sources = sorted(
        {s for w in WORKLOADS for s in (w.fp32_profile, w.bf16_profile) if s} | {f"bundled/{name}" for name in bundled}
    )
    for source in sources:
        if only and not any(stem in source for stem in only):
            continue
        started = time.time()
        profile = op_count_profile(source)
        work = profile.work
        if work is None or work.gemms_recorded:
            print(f"{source}: {'no op counts' if work is None else 'shapes already recorded'}")
            continue
        extra = dict(profile.extra)
        built = build_workload(
            profile.model.replace("benchmarks.cross_gpu:", "srifty.compute.zoo:"),  # where the factories moved
            seq_len=int(extra.get("seq_len", 128)),
            image_size=extra.get("image_size"),
            seed=int(extra.get("seed", 0)),
        )
        # Shapes do not depend on the precision: autocast profiles are recorded again in fp32 (bf16 is slow on
        # a CPU without bf16 units), their records matched by phase, op and FLOPs.
        same_precision = profile.precision == "fp32"
        precision = profile.precision if same_precision else "fp32"
        trainer = _Trainer(built, ProfileOptions(precision=precision, optimizer=profile.optimizer))
        trainer.iteration(work.batches[0])  # the optimizer's state exists from the second step on
        again = record_work(trainer, work.batches)
        if same_precision:
            key = [(r.phase, r.op, r.dtype, r.count, r.flops, r.bytes) for r in work.records]
            if key != [(r.phase, r.op, r.dtype, r.count, r.flops, r.bytes) for r in again.records]:
                raise SystemExit(f"{source}: the op counts recorded again differ from the file's; re-profile it")
            shapes = [new.gemms for new in again.records]
        else:
            shapes = [_matching_shapes(source, old, again.records) for old in work.records]
        records = tuple(dataclasses.replace(old, gemms=gemms) for old, gemms in zip(work.records, shapes, strict=True))
        profile = dataclasses.replace(profile, work=dataclasses.replace(work, records=records))
        profile.save(op_count_source_path(source))
        shaped = sum(bool(r.gemms) for r in records)
        print(f"{source}: {shaped} of {len(records)} records are matrix products ({time.time() - started:.0f} s)")


def _matching_shapes(source: str, record: Any, fp32_records: Any) -> Any:
    """The shapes of the fp32 record with ``record``'s phase, op and FLOPs per instance (``()`` for an op that
    counts no FLOPs)."""
    if record.flops[1] <= 0:
        return ()
    per_instance = (record.flops[0] / record.count, record.flops[1] / record.count)
    for other in fp32_records:
        same_op = (other.phase, other.op) == (record.phase, record.op) and bool(other.gemms)
        if same_op and np.allclose((other.flops[0] / other.count, other.flops[1] / other.count), per_instance):
            return other.gemms
    raise SystemExit(f"{source}: no fp32 op matches {record.phase} {record.op} {record.scope}; re-profile it")


# ---- before: the roofline estimator ----------------------------------------------------------------------------


def roofline_before(case: cal.Case) -> dict[str, np.ndarray]:
    """srifty's previous estimate (per-op roofline scaling of the CPU profile's op times) at the case's batches."""
    w = workload(case.workload)
    source = op_count_profile(
        w.bf16_profile if case.kind == "public" and case.rows[0].arithmetic == "amp" else w.fp32_profile
    )
    est = estimate_profile(source, case.gpu)
    return {ph: est.predict_ms(ph, case.features.batches) for ph in ("fw", "bw", "step", "iter")}


def roofline_gpu_ratio(case: cal.Case, h200_iter: np.ndarray) -> np.ndarray:
    """The H200's measured iteration times the ratio of summed roofline times (FLOPs/peak + bytes/bandwidth)."""
    catalog = load_catalog()
    work = op_count_profile(workload(case.workload).fp32_profile).work
    assert work is not None
    b = case.features.batches
    totals = []
    for gpu in (H200_GPU, case.gpu):
        peaks = gpu_peaks(catalog.gpu_specs[gpu])
        recs = work.records
        t = roofline_time_s(work.flops_at(recs, b), work.bytes_at(recs, b), [r.dtype for r in recs], peaks)
        totals.append(t.sum(axis=0))
    return h200_iter * totals[1] / totals[0]


# ---- scoring -------------------------------------------------------------------------------------------------


@dataclass
class Scored:
    """Held-out (after) and roofline (before) errors of one figure's rows."""

    after: list[float]
    before: list[float]


def mape(values: list[float]) -> float:
    return float(100.0 * np.mean(np.abs(values))) if values else float("nan")


def throughput_errors(iteration_errors: list[float]) -> list[float]:
    """Relative errors of samples/s, ``1 / (1 + e) − 1``, from relative errors ``e`` of iteration time."""
    return [1.0 / (1.0 + e) - 1.0 for e in iteration_errors]


def pct(value: float) -> str:
    return "—" if not np.isfinite(value) else f"{value:.1f}%"


def run(catalog: Any) -> dict[str, Any]:
    """Leave-one-model-out predictions of the GPU model, and of the same model without the products' shapes
    (every product at tile efficiency 1: the model before issue 27's shapes)."""
    dataset = cal.GpuCalibrationData.bundled()
    cases = cal.build_cases(dataset, catalog)
    started = time.time()
    fits = cal.lomo_fits(cases)
    fit_s = time.time() - started
    held = cal.cross_validate(cases, fits)
    sourced = cal.gpu_sourced(cases, fits, catalog)
    plain_cases = cal.build_cases(dataset, catalog, shapes=False)
    # Before the shapes the model had no tile factor at all: every product at efficiency 1, ``eta.*`` alone.
    with mock.patch.object(gpu_model, "UNSHAPED_TILE_EFFICIENCY", 1.0):
        plain_fits = cal.lomo_fits(plain_cases)
        plain_held = cal.cross_validate(plain_cases, plain_fits)
        plain_sourced = cal.gpu_sourced(plain_cases, plain_fits, catalog)
    return {
        "cases": cases,
        "fits": fits,
        "held": held,
        "sourced": sourced,
        "fit_s": fit_s,
        "dataset": dataset,
        "plain_held": plain_held,
        "plain_sourced": plain_sourced,
    }


def _plain_errors(plain: list[cal.HeldOut]) -> dict[tuple[str, str, str], list[float]]:
    """Held-out iteration errors without shapes, by (kind, workload, GPU); public rows also by arithmetic."""
    out: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for h in plain:
        arithmetic = h.case.rows[0].arithmetic if h.case.rows else ""
        for key in ((h.case.kind, h.case.workload, h.case.gpu), ("gpu", h.case.gpu, ""), ("arith", arithmetic, "")):
            out[key] += [float(e) for e in h.errors("iter")]
        if h.case.kind == "public":
            out[("arith", "all", "")] += [float(e) for e in h.errors("iter")]
        else:
            out[("h200", "all", "")] += [float(e) for e in h.errors("iter")]
    return out


def _model_mape(held: list[cal.HeldOut], workload_key: str, phase: str) -> float:
    """Held-out MAPE of one H200 curve's phase."""
    return mape(next(list(h.errors(phase)) for h in held if h.case.kind == "h200" and h.case.workload == workload_key))


def h200_section(held: list[cal.HeldOut], plain: list[cal.HeldOut]) -> tuple[list[str], dict[str, float]]:
    without = _plain_errors(plain)
    lines = [
        "| model | batches | before iter | without shapes iter | after fw | after bw | after step | after iter "
        "| after, signed iter error by batch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    released = {p.model for p in bundled_released_curves()}
    # Per group ("released", "srifty", "all"): each column's pooled errors, and each model's iteration MAPE.
    pooled: dict[tuple[str, str], list[float]] = defaultdict(list)
    model_iter: dict[str, list[float]] = defaultdict(list)
    rows: dict[str, list[str]] = {"released": [], "srifty": []}
    for h in (h for h in held if h.case.kind == "h200"):
        source = "released" if workload(h.case.workload).h200_name in released else "srifty"
        before = roofline_before(h.case)
        columns = {
            "before": list(before["iter"] / h.case.measured_ms["iter"] - 1),
            "without": without[("h200", h.case.workload, h.case.gpu)],
            **{ph: list(h.errors(ph)) for ph in ("fw", "bw", "step", "iter")},
        }
        for key in (source, "all"):
            for column, errs in columns.items():
                pooled[(key, column)] += errs
            model_iter[key].append(mape(columns["iter"]))
        signed = " ".join(f"{100 * e:+.0f}" for e in h.errors("iter"))
        span = (
            ", ".join(str(int(b)) for b in h.case.features.batches)
            if source == "srifty"
            else (f"{int(h.case.features.batches[0])}–{int(h.case.features.batches[-1])}")
        )
        rows[source].append(
            f"| {h.case.workload} | {span} | {pct(mape(columns['before']))} | {pct(mape(columns['without']))} | "
            + " | ".join(pct(mape(columns[ph])) for ph in ("fw", "bw", "step", "iter"))
            + f" | {signed} |"
        )
    means: dict[str, float] = {}
    labels = {"released": "released curves (8 models)", "srifty": "srifty's H200 profiles (7 models)", "all": "all 15"}
    for key in ("released", "srifty", "all"):
        lines += rows.get(key, [])
        m = {c: mape(pooled[(key, c)]) for c in ("before", "without", "fw", "bw", "step", "iter")}
        lines.append(
            f"| **{labels[key]}** | | {pct(m['before'])} | {pct(m['without'])} | {pct(m['fw'])} "
            f"| {pct(m['bw'])} | {pct(m['step'])} | **{pct(m['iter'])}** | |"
        )
        suffix = "" if key == "released" else f"_{key}"
        means.update({f"{c}{suffix}": v for c, v in m.items()})
        means[f"worst{suffix}"] = max(model_iter[key]) if model_iter[key] else float("nan")
    return lines, means


def public_section(
    held: list[cal.HeldOut], plain: list[cal.HeldOut]
) -> tuple[list[str], dict[str, Any], list[dict[str, Any]]]:
    without = _plain_errors(plain)
    by_gpu: dict[str, Scored] = defaultdict(lambda: Scored([], []))
    by_arith: dict[str, Scored] = defaultdict(lambda: Scored([], []))
    raw: list[dict[str, Any]] = []
    for h in (h for h in held if h.case.kind == "public"):
        before = roofline_before(h.case)["iter"]
        for row, err, b in zip(h.case.rows, h.errors("iter"), before, strict=True):
            b_err = float(b / row.iter_ms - 1)
            for bucket in (by_gpu[row.gpu], by_arith[row.arithmetic], by_arith["all"]):
                bucket.after.append(float(err))
                bucket.before.append(b_err)
            raw.append(
                {
                    "figure": "public, CPU-sourced",
                    "workload": row.workload,
                    "gpu": row.gpu,
                    "reference_gpu": row.reference_gpu,
                    "precision": row.precision,
                    "batch": row.batch,
                    "published_samples_per_s": row.samples_per_s,
                    "after_samples_per_s": row.samples_per_s / (1 + float(err)),
                    "after_error_pct": 100 * float(err),
                    "before_samples_per_s": row.samples_per_s / (1 + b_err),
                    "before_error_pct": 100 * b_err,
                    "source": f"{row.source_repo} {row.path}",
                }
            )
    gens = {name: spec.generation for name, spec in load_catalog().gpu_specs.items()}
    lines = [
        "| GPU | generation | rows | before (roofline) | without shapes (held out) | after (calibrated, held out) |",
        "|---|---|---|---|---|---|",
    ]
    for gpu, s in sorted(by_gpu.items(), key=lambda kv: (gens.get(kv[0], ""), kv[0])):
        flag = " ⚠" if mape(s.after) > TARGET_GPU_MAX else ""
        plain_cell = pct(mape(without[("gpu", gpu, "")]))
        lines.append(
            f"| {gpu} | {gens.get(gpu, '')} | {len(s.after)} | {pct(mape(s.before))} | {plain_cell} "
            f"| {pct(mape(s.after))}{flag} |"
        )
    for name in ("fp32", "amp"):
        if name in by_arith:
            s = by_arith[name]
            label = "FP32/TF32 rows" if name == "fp32" else "AMP rows (fp16)"
            plain_cell = pct(mape(without[("arith", name, "")]))
            lines.append(
                f"| {label} | | {len(s.after)} | {pct(mape(s.before))} | {plain_cell} | {pct(mape(s.after))} |"
            )
    s = by_arith["all"]
    plain_all = mape(without[("arith", "all", "")])
    lines.append(
        f"| **all rows** | | {len(s.after)} | {pct(mape(s.before))} | {pct(plain_all)} | **{pct(mape(s.after))}** |"
    )
    summary = {
        "without": plain_all,
        "overall": mape(s.after),
        "overall_throughput": mape(throughput_errors(s.after)),
        "before": mape(s.before),
        "before_throughput": mape(throughput_errors(s.before)),
        "worst": max(((mape(v.after), g) for g, v in by_gpu.items()), default=(float("nan"), "")),
    }
    return lines, summary, raw


def gpu_sourced_section(run_out: dict[str, Any]) -> tuple[list[str], dict[str, float], list[dict[str, Any]]]:
    sourced: list[cal.GpuSourcedRow] = run_out["sourced"]
    curves = {c.workload: c for c in run_out["cases"] if c.kind == "h200"}
    publics = [c for c in run_out["cases"] if c.kind == "public" and c.workload in curves]
    before: dict[int, float] = {}
    for case in publics:
        src = curves[case.workload]
        h200_iter = cal.interpolate_curve(src.features.batches, src.measured_ms["iter"], case.features.batches)
        for row, value in zip(case.rows, roofline_gpu_ratio(case, h200_iter), strict=True):
            before[id(row)] = float(value / row.iter_ms - 1)
    lines = [
        "| GPU | arithmetic | batch | published samples/s | before: H200 × roofline ratio | iteration error "
        "| after: calibrated | iteration error |",
        "|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[str, Scored] = defaultdict(lambda: Scored([], []))
    raw = []
    seen: set[tuple[str, str, int]] = set()
    for r in sorted(sourced, key=lambda s: (s.row.arithmetic, s.row.gpu, s.row.batch)):
        b = before[id(r.row)]
        groups[r.row.arithmetic].after.append(r.error)
        groups[r.row.arithmetic].before.append(b)
        raw.append(
            {
                "figure": "public, GPU-sourced from the H200",
                "workload": r.row.workload,
                "gpu": r.row.gpu,
                "reference_gpu": r.row.reference_gpu,
                "precision": r.row.precision,
                "batch": r.row.batch,
                "published_samples_per_s": r.row.samples_per_s,
                "after_samples_per_s": r.row.samples_per_s / (1 + r.error),
                "after_error_pct": 100 * r.error,
                "before_samples_per_s": r.row.samples_per_s / (1 + b),
                "before_error_pct": 100 * b,
                "source": f"{r.row.source_repo} {r.row.path}",
            }
        )
        key = (r.row.gpu, r.row.precision, r.row.batch)
        if key in seen:  # several machines of one GPU: one table line, every row in the figures
            continue
        seen.add(key)
        lines.append(
            f"| {r.row.gpu} | {r.row.precision} | {r.row.batch} | {r.row.samples_per_s:g} | "
            f"{r.row.samples_per_s / (1 + b):.0f} | {100 * b:+.0f}% | {r.row.samples_per_s / (1 + r.error):.0f} | "
            f"{100 * r.error:+.0f}% |"
        )
    summary = {k: mape(v.after) for k, v in groups.items()} | {f"{k}_before": mape(v.before) for k, v in groups.items()}
    ratio_lines, ratio_errors = ratio_check(sourced)
    summary["ratio"] = mape(ratio_errors)
    return [*lines, "", *ratio_lines], summary, raw


def ratio_check(sourced: list[cal.GpuSourcedRow]) -> tuple[list[str], list[float]]:
    """Speed of each GPU relative to the V100 in the same published source and precision: predicted (both
    from the H200 measurement) against published. The scripts' own speed cancels in the ratio."""
    base: dict[tuple[str, str], cal.GpuSourcedRow] = {}
    for r in sourced:
        if r.row.gpu == "V100":
            base.setdefault((r.row.source_repo, r.row.precision), r)
    lines = ["| source | precision | GPU / V100 | published | predicted | error |", "|---|---|---|---|---|---|"]
    errors: list[float] = []
    seen: set[tuple[str, str, str]] = set()
    for r in sorted(sourced, key=lambda s: (s.row.source_repo, s.row.precision, s.row.gpu)):
        b = base.get((r.row.source_repo, r.row.precision))
        key = (r.row.source_repo, r.row.precision, r.row.gpu)
        if b is None or r.row.gpu == "V100" or key in seen:
            continue
        seen.add(key)
        published = r.row.samples_per_s / b.row.samples_per_s
        predicted = (r.row.samples_per_s / (1 + r.error)) / (b.row.samples_per_s / (1 + b.error))
        errors.append(predicted / published - 1)
        lines.append(
            f"| {r.row.source_repo.split('/')[0]} | {r.row.precision} | {r.row.gpu} | {published:.2f} | "
            f"{predicted:.2f} | {100 * errors[-1]:+.0f}% |"
        )
    return lines, errors


def params_table(run_out: dict[str, Any]) -> list[str]:
    full = cal.fit_params(run_out["cases"])
    lines = ["| parameter | fitted on everything | range over the held-out fits |", "|---|---|---|"]
    fits = list(run_out["fits"].values())
    for name, value in sorted(full.values.items()):
        values = [f.values.get(name, np.nan) for f in fits]
        unit = " µs" if name.startswith(("kernel_s", "host_s")) else ""
        scale = 1e6 if unit else 1.0
        low, high = np.nanmin(values) * scale, np.nanmax(values) * scale
        lines.append(f"| `{name}` | {value * scale:.3g}{unit} | {low:.3g}–{high:.3g}{unit} |")
    return lines


def report() -> None:
    import pandas as pd

    from srifty.artifacts import atomic_write_text

    catalog = load_catalog()
    started = time.time()
    out = run(catalog)
    h200_lines, h200 = h200_section(out["held"], out["plain_held"])
    public_lines, public, raw_public = public_section(out["held"], out["plain_held"])
    plain_sourced = mape([r.error for r in out["plain_sourced"] if r.row.arithmetic == "fp32"])
    sourced_lines, sourced, raw_sourced = gpu_sourced_section(out)
    atomic_write_text(ROWS_CSV, pd.DataFrame(raw_public + raw_sourced).to_csv(index=False))
    calibration = cal.default_gpu_calibration()
    worst_mape, worst_gpu = public["worst"]
    expected = ", ".join(f"{g} ±{v:.0f}%" for g, v in sorted(calibration.errors.cpu_sourced_by_generation.items()))
    body = [
        "Every figure here is **leave-one-model-out**: the model being predicted (in every form it takes: ResNet-50",
        "on the H200 and in the public rows; BERT-base at 128 tokens on the H200 and at 384 in SQuAD) is left out",
        "of the fit that predicts it. Data: the real H200 curves (`reference/h200`, 8 models, batch 1–1024),",
        "srifty's own H200 profiles of 7 other models (batches 1, 8, 128, 1024; fitted since issue 27's session",
        "15, see below) and",
        f"{len(out['dataset'].public)} public single-GPU training rows (`reference/gpu_perf`: DeepLearningExamples,",
        "Lambda) of ResNet-50, BERT-base/-large SQuAD and ResNeXt-101 32x4d on 13 GPUs, FP32/TF32/AMP; op counts",
        "from CPU profiles (`src/srifty/compute/data/calibration/README.md`). *Before* is srifty's previous",
        "estimator (each op's measured CPU time scaled by its roofline ratio, FP32 peaks, no TF32); *after* is",
        "the calibrated GPU model (`srifty.compute.gpu_model`, fitted by `srifty.compute.gpu_fit`).",
        "*Without shapes* is the same model fitted and held out the same way with no tile factor (every matrix",
        "product at the class efficiency `eta.*` alone): the model as it was before issue 27 gave it the",
        "products' shapes (tiles, waves over each GPU's SMs: `srifty.compute.gemm`).",
        'The 7 profiled models (`h200_srifty_curves.csv`, from the profiles in "Profiles measured on a GPU',
        '(H200)") are ResNet-34, DenseNet-121, EfficientNet-B0, ConvNeXt-T and three transformers (ViT-B/16,',
        "BERT-small and GPT-2-small at 128 tokens): with them the fit has four transformers instead of one.",
        "",
        "Issue 27, before → after the shapes (this command, both leave-one-model-out, released curves): H200",
        f"CPU-sourced iteration {pct(h200['without'])} → **{pct(h200['iter'])}** (goal ≤ {TARGET_H200:.0f}%, "
        f"worst model {pct(h200['worst'])}, goal ≤ {TARGET_H200_WORST:.0f}%); public rows {pct(public['without'])}",
        f"→ **{pct(public['overall'])}** (goal ≤ {TARGET_PUBLIC:.0f}%); GPU-sourced FP32/TF32 {pct(plain_sourced)}",
        f"→ **{pct(sourced.get('fp32', float('nan')))}** (goal ≤ {TARGET_GPU_SOURCED:.0f}%). The shapes' variants",
        "(tiles, split-K, SIMT pricing, operand",
        "traffic by tile) were chosen on leave-one-model-out figures (`srifty.compute.gemm` lists them), so",
        "*after* is optimistic by that choice; *without shapes* had no such choice made for it.",
        "",
        "Before → after srifty's own H200 profiles joined the fit (the row cfd33bd below → this run): released",
        f"curves 17.3% → **{pct(h200['iter'])}** (worst vgg16 34.3% → {pct(h200['worst'])}); the 7 profiled models,",
        "before predicted by a calibration that had never seen any of them, 12.8%, now each left out of a fit on",
        f"the other 14: **{pct(h200['iter_srifty'])}** (worst {pct(h200['worst_srifty'])}); over all 116 points",
        f"of the 15 models 16.2% → **{pct(h200['iter_all'])}**; public rows 19.1% → **{pct(public['overall'])}**.",
        "The gain on the released curves is mostly BERT-base's (the only transformer among them, whose",
        "small-batch host costs came from CNNs when it was held out), and the profiled models pay part of it.",
        "",
        "The shapes' steps, each this command at its commit (H200 iteration / worst model / public rows /",
        "GPU-sourced FP32):",
        "",
        "| commit | step | H200 iter | worst H200 model | public rows | GPU-sourced FP32 |",
        "|---|---|---|---|---|---|",
        "| fbae339 | before the shapes | 24.6% | vgg16 44.6% | 18.8% | 15.9% |",
        "| 1715005 | tiles and waves per product, SIMT products by occupancy | 20.0% | vgg16 45.2% | 20.4% | 8.8% |",
        "| 17378d9 | grouped convolutions and attention without the unshaped tile factor | 20.0% | vgg16 44.9% "
        "| 18.6% | 7.4% |",
        "| cfd33bd | operand traffic scaled by the best tile's edge | 17.3% | vgg16 34.3% | 19.1% | 7.1% |",
        "| this run (its commit is in the command below) | srifty's own H200 profiles of 7 more models in the fit "
        f"| {pct(h200['iter'])} | {pct(h200['worst'])} | {pct(public['overall'])} "
        f"| {pct(sourced.get('fp32', float('nan')))} |",
        "",
        f"**H200 curves, CPU-sourced** (goal ≤ {TARGET_H200:.0f}% iteration MAPE over every measured batch of",
        f"the released curves, no model above {TARGET_H200_WORST:.0f}%): **{pct(h200['iter'])}** after,",
        f"{pct(h200['before'])} before; srifty's profiles",
        f"{pct(h200['iter_srifty'])}; all 15 {pct(h200['iter_all'])}.",
        "",
        *h200_lines,
        "",
        f"**Public rows, CPU-sourced** (goal ≤ {TARGET_PUBLIC:.0f}% overall; earlier target: no GPU above "
        f"{TARGET_GPU_MAX:.0f}%):",
        f"**{pct(public['overall'])}** overall after ({pct(public['before'])} before); worst GPU {worst_gpu}",
        f'{pct(worst_mape)}. ⚠ marks GPUs above {TARGET_GPU_MAX:.0f}%. Published "FP32" on Ampere and later is',
        "priced as TF32 for convolutions and matrix products (NGC containers set",
        "`TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1`); AMP rows from bf16 autocast profiles with fp16 in place of bf16.",
        "",
        *public_lines,
        "",
        f"**GPU-sourced** (H200 → other GPUs, ResNet-50 public rows; goal ≤ {TARGET_GPU_SOURCED:.0f}%, Habitat",
        f"reports 11.8%): FP32/TF32 rows **{pct(sourced.get('fp32', float('nan')))}** after",
        f"({pct(sourced.get('fp32_before', float('nan')))} before); AMP rows {pct(sourced.get('amp', float('nan')))}",
        f"({pct(sourced.get('amp_before', float('nan')))} before). The estimate scales the H200's *measured*",
        "script (eager PyTorch, synthetic data) to the target; the published scripts (real data pipelines, NHWC,",
        "fused kernels) differ from it on every GPU. The AMP rows",
        "are moreover a cross-precision what-if: the H200 measured fp32 (TF32 convolutions), so their prediction",
        "rests on the model's fp16-over-fp32 ratio. Both are divided by the published scripts' fitted speed-up",
        "over eager PyTorch (`impl_speedup.*`, fitted without ResNet-50). The second table takes the scripts",
        "out: each GPU's speed",
        "relative to the V100 in the same source and precision, predicted vs published:",
        f"**{pct(sourced.get('ratio', float('nan')))}**.",
        "",
        *sourced_lines,
        "",
        "Expected error an estimate carries into a plan (held-out CPU-sourced MAPE by generation, from the",
        f"bundled calibration): {expected}; GPU-sourced (same arithmetic as the source)",
        f"±{calibration.gpu_sourced_mape.get('fp32', float('nan')):.0f}%.",
        "",
        "Fitted parameters (`src/srifty/compute/data/calibration/gpu-calibration.json`; `impl_speedup.*` is how",
        "much faster the published benchmark scripts run than eager PyTorch, used for public rows only):",
        "",
        *params_table(out),
        "",
        "Why the CPU-sourced figures still miss their targets: the same op counts run at different fractions of",
        "the GPU's peak in different models. The products' shapes explain part of it (a 64-channel 1×1 layer",
        "fills half of a 128-wide tile and few waves of the SMs; vgg16's 512-channel 3×3 layers fill both), and",
        "that part is what the H200 figure gained; pricing operand traffic by tile (a small tile loads its",
        "operands more often per FLOP) took vgg16's forward-pass error from 41% to 15%. Four things",
        f"remain. vgg16's backward pass is still {pct(_model_mape(out['held'], 'vgg16', 'bw'))} off (the TF32",
        f"convolution efficiency `eta.conv.tensor` is fitted at {calibration.params.values['eta.conv.tensor']:.3g},",
        "against its bound of 1). ConvNeXt-T's backward is",
        f"{pct(_model_mape(out['held'], 'convnext_tiny', 'bw'))} off: its 7×7 depthwise backward runs 14× slower on",
        'the H200 than grouped convolutions are priced ("Profiles measured on a GPU (H200)", check 4), and no',
        "other model has one. Split-K is not modelled on tensor",
        "cores (as modelled it scored worse held out, `srifty.compute.gemm`), so a weight gradient's few tiles",
        "are priced as leaving most SMs idle and the fitted backward tile efficiencies (0.02–0.3) are lower than",
        "real kernels reach: the fit leans on them for what else slows a backward pass, which is a fit, not a",
        "kernel-level account. On the public rows, held-out ResNet-50 comes out slow in FP32/TF32 and fast in",
        "AMP, because when it is left out only ResNeXt-101 and BERT set the published scripts' AMP speed-up;",
        f"this is why the public figure {'rose' if public['overall'] > public['without'] else 'stays above its goal'}.",
        "Where a GPU",
        "measurement exists, its own efficiencies carry over and the error falls to the GPU-sourced figure",
        "above: profile on the one GPU you have.",
        "",
        f"Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.cross_gpu report` ({time.time() - started:.0f} s,",
        f"of which {out['fit_s']:.0f} s leave-one-model-out fits). Machine: {machine_description()}. Raw rows:",
        f"`{ROWS_CSV.relative_to(ROOT).as_posix()}`. Refit the bundled calibration: `srifty profile calibrate --h200",
        "../shared/data/reference/h200/h200_fp32.jsonl --public ../shared/data/reference/gpu_perf/throughput.csv",
        "--out src/srifty/compute/data/calibration/gpu-calibration.json`.",
    ]
    write_section("Cross-GPU estimation", "\n".join(body))
    print("\n".join(body))


def plans(before_source: str) -> None:
    """The examples' min_time plans before and after the products' shapes (issue 27), from
    ``python -m benchmarks.new_user min-time --label i27-before`` (run with the previous checkout's ``src``
    on ``PYTHONPATH``) and ``--label i27-after``; nothing is planned here."""
    import json

    from benchmarks.new_user import _cell

    before = json.loads((RESULTS / "min_time_i27-before.json").read_text())
    after = json.loads((RESULTS / "min_time_i27-after.json").read_text())
    lines = [
        "How the shapes move what `srifty plan` chooses: every `goal: min_time` example (hand-picked = as",
        "written; auto = `candidates: auto` over AWS us-east-1 and us-west-2), planned from the bundled CPU",
        "profiles estimated for each GPU by the calibrated GPU model, before (no tile factor, the previous",
        "calibration) and after (the products' shapes, refitted). Time is the job time in seconds (training +",
        "fixed overheads). These are predictions, not measurements: no plan here was run on its GPUs (the H200",
        'profiles in "Profiles measured on a GPU (H200)" check the estimates on one GPU, not these plans).',
        "Other sections that plan from estimated GPU profiles (plan quality on the emulated cloud and the harder",
        "suite, catalog-wide planning, paper cases with `candidates: auto`, zone-consistent pricing, the issue 29",
        "min_time table, spot promises' paper cases, the SkyPilot dry runs) were measured before the shapes and",
        "not re-run with them; each names its commit.",
        "",
        "| job | before: chosen | time s | cost | after: chosen | time s | cost |",
        "|---|---|---|---|---|---|---|",
    ]
    for b, a in zip(before["rows"], after["rows"], strict=True):
        assert b["job"] == a["job"]
        cells = [*_cell(b["chosen"], b["infeasible"]), *_cell(a["chosen"], a["infeasible"])]
        lines.append(f"| {a['job']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Command: `flock /tmp/srifty-cpu.lock python -m benchmarks.new_user min-time --label i27-after`, the same",
        "with `PYTHONPATH=<checkout of the previous commit>/src` and `--label i27-before`, then",
        "`python -m benchmarks.cross_gpu plans --before-source COMMIT`.",
        f"Before: srifty at {before_source} (its `src` first on `PYTHONPATH`; the machine line names the",
        f"checkout the benchmark script ran from): {before['machine']}. After: {after['machine']}.",
    ]
    write_section("Cross-GPU estimation: the examples' plans before and after the shapes", "\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stage", choices=("measure", "shapes", "report", "plans"))
    parser.add_argument("--only", nargs="*", help="measure only these workloads (file stems)")
    parser.add_argument("--before-source", default="the previous commit", help="plans: the commit 'before' ran")
    args = parser.parse_args()
    if args.stage == "measure":
        measure(args.only)
    elif args.stage == "shapes":
        add_shapes(args.only)
    elif args.stage == "plans":
        plans(args.before_source)
    else:
        report()


if __name__ == "__main__":
    main()
