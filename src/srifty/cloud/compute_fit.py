"""Calibrating the emulated cloud's compute physics on measurements (scipy), and reporting its fit error.

Run offline by ``python -m benchmarks.cloud_calibration``, which writes ``data/calibration.json``; the cloud only
reads that file. Four fits, each on data the package carries (``data/README.md``):

1. **Kernels per measured model** (:func:`fit_kernels`): the launch-pipeline parameters of
   :class:`~srifty.cloud.kernels.KernelModel` (kernels, blocks per sample and their spread, per-sample time,
   launch time per phase; the step's host and GPU spans) fitted to the medians of the H200's forward,
   backward and step latencies at every measured batch, by differential evolution on squared log error
   (the wave ceilings make the loss stepped, so a gradient method alone would stall).
2. **Across GPUs** (:func:`fit_cross_gpu`): the TF32 and FP32 efficiencies and the older hosts' launch factor,
   by least squares on the log of public ResNet-50 throughput (training on V100, A10, A100, H100; inference
   batch sweeps on T4 and V100, whose forward is taken as ``κ`` × training's forward, ``κ`` fitted too).
3. **Memory** (:func:`fit_memory`): peak allocated bytes ``base + per_sample · batch`` per measured model
   (relative least squares over batches ≥ 8, where the largest batch is decided).
4. **Stragglers** (:func:`srifty.cloud.stragglers.fit_stragglers`): the 400-iteration H200 run as a
   two-state Markov process.

Models the H200 did not measure get their kernels from op counts (:func:`count_defaults`); how well that
works is measured by leaving each measured model out in turn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

from srifty.cloud.hardware import REFERENCE_GPU, gpu_hardware
from srifty.cloud.kernels import KernelModel, PhaseKernels
from srifty.cloud.reference_data import MeasuredCurve, PublicRow
from srifty.cloud.transfer import CountDefaults, CrossGpu, PhaseWork, carry, from_counts, memory_ms_on_reference

FloatArray = NDArray[np.float64]
#: The step's weight in the kernel fit (its measured spans are short and noisy at small batches).
STEP_WEIGHT = 0.3
#: Batches the memory line is fitted on.
MEMORY_FIT_MIN_BATCH = 8
#: The best share of the FP32 peak a large cuBLAS SGEMM reaches (assumption; the H200 BERT measurement
#: bounds the matmul efficiency below: all its counted matmul FLOPs ran at 69% of the peak, every other op
#: included).
MAX_SGEMM_EFFICIENCY = 0.9


def _mape(predicted: FloatArray, measured: FloatArray) -> float:
    return float(np.mean(np.abs(predicted / measured - 1.0)))


# ------------------------------------------------------------------------------------------ 1. kernels
@dataclass(frozen=True)
class KernelFit:
    """A measured model's fitted kernels and how closely they reproduce the H200 (MAPE per phase)."""

    model: KernelModel
    mape: Mapping[str, float]


def kernel_model(x: Sequence[float] | FloatArray, slots: float) -> KernelModel:
    """The model of a parameter vector ``(K_fw, K_bwd, u_fw, u_bwd, σ, T_fw, T_bwd, ℓ_fw, ℓ_bwd, step_host,
    step_gpu)`` (natural units, see :class:`~srifty.cloud.kernels.PhaseKernels`)."""
    kf, kb, uf, ub, sigma, tf, tb, lf, lb, hs, gs = (float(v) for v in x)
    return KernelModel(
        fw=PhaseKernels(kf, uf, sigma, tf, lf),
        bwd=PhaseKernels(kb, ub, sigma, tb, lb),
        step_host_ms=hs,
        step_gpu_ms=gs,
        slots=slots,
    )


def fit_kernels(curve: MeasuredCurve, ops: tuple[int, int], seed: int = 0, maxiter: int = 300) -> KernelFit:
    """Fit the launch pipeline to one model's H200 medians (see the module docstring).

    Args:
        curve: the H200 measurements.
        ops: counted kernel-launching ops of forward and backward (the kernel counts' search range is
            ``0.5×`` to ``8×`` them).
        seed: seeds differential evolution.
        maxiter: its generations.
    """
    slots = gpu_hardware(REFERENCE_GPU).slots
    batches = np.asarray(curve.batches, dtype=float)
    measured = np.stack([curve.median_ms(p) for p in ("fw", "bw", "step")], axis=1)
    weights = np.array([1.0, 1.0, STEP_WEIGHT])
    lo = [0.5 * ops[0], 0.5 * ops[1], 0.05, 0.05, 0.1, 1e-4, 1e-4, 1e-3, 1e-3, 0.02, 0.005]
    hi = [8.0 * ops[0] + 50, 8.0 * ops[1] + 50, 500.0, 500.0, 3.0, 20.0, 40.0, 0.2, 0.2, 10.0, 5.0]
    bounds = list(zip(np.log(lo), np.log(hi), strict=True))

    def loss(log_x: FloatArray) -> float:
        model = kernel_model(np.exp(log_x), slots)
        predicted = np.stack(model.phase_ms(batches), axis=1)
        return float(np.sum(weights * np.log(predicted / measured) ** 2))

    result = optimize.differential_evolution(
        loss, bounds, seed=seed, maxiter=maxiter, popsize=15, tol=1e-8, polish=True
    )
    model = kernel_model(np.exp(result.x), slots)
    predicted = model.phase_ms(batches)
    mape = {p: _mape(v, measured[:, i]) for i, (p, v) in enumerate(zip(("fw", "bw", "step"), predicted, strict=True))}
    mape["iter"] = _mape(np.sum(predicted, axis=0), measured.sum(axis=1))
    return KernelFit(model, mape)


# --------------------------------------------------------------------------------------- 2. across GPUs
@dataclass(frozen=True)
class CrossGpuFit:
    """The cross-GPU constants, the inference factor, and every public row with its prediction."""

    cross: CrossGpu
    inference_factor: float
    rows: tuple[dict[str, Any], ...]

    @property
    def mape(self) -> Mapping[str, float]:
        """MAPE of predicted throughput, by training and inference rows and overall."""
        out = {}
        for mode in ("train", "inference"):
            errs = [abs(r["error"]) for r in self.rows if r["mode"] == mode]
            out[mode] = float(np.mean(errs)) if errs else float("nan")
        out["all"] = float(np.mean([abs(r["error"]) for r in self.rows]))
        return out


def predict_row(
    row: PublicRow, h200: KernelModel, works: Mapping[str, PhaseWork], cross: CrossGpu, inference_factor: float
) -> float:
    """Predicted samples/s of one public row."""
    model = carry(h200, works, gpu_hardware(row.gpu_label), cross)
    fw, bwd, step = model.phase_ms(np.array([float(row.batch)]))
    ms = float(fw[0]) * inference_factor if row.mode == "inference" else float(fw[0] + bwd[0] + step[0])
    return row.batch / (ms / 1e3)


def fit_cross_gpu(
    h200: KernelModel, works: Mapping[str, PhaseWork], rows: Sequence[PublicRow], matmul_efficiency: float
) -> CrossGpuFit:
    """Least squares on log throughput over ``rows`` (ResNet-50, whose H200 kernels are ``h200``).

    Fitted: TF32 and FP32 convolution efficiencies, the SMs' load/store rate, the older hosts' launch factor,
    the T4's sustained clock and the inference factor. ``matmul_efficiency`` is fixed (ResNet-50 has no
    matrix products to speak of; see :func:`matmul_efficiency_from`).
    """

    def unpack(x: FloatArray) -> tuple[CrossGpu, float]:
        tf32, conv_fp32, sm_gbs, host_old, t4_clock, kappa = (float(v) for v in np.exp(x))
        cross = CrossGpu(
            tf32_efficiency=tf32,
            conv_fp32_efficiency=conv_fp32,
            matmul_efficiency=matmul_efficiency,
            sm_bytes_per_s=sm_gbs * 1e9,
            host_factor={"new": 1.0, "old": host_old},
            sustained_clock={"T4": t4_clock},
        )
        return cross, kappa

    def residuals(x: FloatArray) -> FloatArray:
        cross, kappa = unpack(x)
        return np.array([math.log(predict_row(r, h200, works, cross, kappa) / r.samples_per_s) for r in rows])

    x0 = np.log([0.3, 0.8, 50.0, 1.3, 0.8, 0.8])
    bounds = (np.log([0.02, 0.05, 0.5, 0.5, 0.3, 0.2]), np.log([1.0, 3.0, 1000.0, 4.0, 1.0, 2.0]))
    result = optimize.least_squares(residuals, x0, bounds=bounds, diff_step=1e-3)
    cross, kappa = unpack(result.x)
    table = []
    for r in rows:
        predicted = predict_row(r, h200, works, cross, kappa)
        table.append(
            {
                "gpu": r.gpu_label,
                "mode": r.mode,
                "batch": r.batch,
                "precision": r.precision,
                "measured_samples_per_s": r.samples_per_s,
                "predicted_samples_per_s": predicted,
                "error": predicted / r.samples_per_s - 1.0,
                "source": r.source,
            }
        )
    return CrossGpuFit(cross, kappa, tuple(table))


def matmul_efficiency_from(
    fits: Mapping[str, KernelModel], works: Mapping[str, Mapping[str, PhaseWork]], transformer: str, cross: CrossGpu
) -> float:
    """The FP32 matrix-product efficiency at which the H200's transformer (BERT) would pay for its non-matmul
    ops what the convolutional models pay per counted byte (their median effective traffic).

    The convolutional models' traffic per byte does not depend on the matmul efficiency (they run almost no
    matrix products); the transformer's memory part is what its measured per-sample time leaves after its
    matrix products, so one number makes the two agree. Phases pooled. A value above
    :data:`MAX_SGEMM_EFFICIENCY` says the transformer's non-matmul ops cost less per byte than the CNNs'; the
    calibration then uses the cap (see :func:`matmul_efficiency`).
    """
    ref = gpu_hardware(REFERENCE_GPU)
    per_byte = cross.memory_s_per_byte(ref)
    ratios = []
    for name, model in fits.items():
        if name == transformer:
            continue
        for phase in ("fw", "bwd"):
            work = works[name][phase]
            memory_ms = memory_ms_on_reference(getattr(model, phase).per_sample_ms, work, cross)
            ratios.append(memory_ms * 1e-3 / per_byte / max(work.bytes, 1.0))
    traffic = float(np.median(ratios))
    total_ms = sum(getattr(fits[transformer], p).per_sample_ms for p in ("fw", "bwd"))
    memory_ms = 1e3 * traffic * per_byte * sum(works[transformer][p].bytes for p in ("fw", "bwd"))
    flops = sum(works[transformer][p].matmul_flops for p in ("fw", "bwd"))
    matmul_ms = max(total_ms - memory_ms, 0.05 * total_ms)
    return float(flops / (matmul_ms * 1e-3) / ref.fp32_flops_per_s)


def matmul_efficiency(derived: float) -> float:
    """The matmul efficiency used: the derived one, capped at what a large SGEMM reaches (an assumption)."""
    return min(derived, MAX_SGEMM_EFFICIENCY)


def leave_one_gpu_out(
    h200: KernelModel, works: Mapping[str, PhaseWork], rows: Sequence[PublicRow], matmul_efficiency: float
) -> dict[str, float]:
    """Per GPU, the MAPE of its public rows predicted by a cross-GPU fit made without them (held out): how
    well the constants carry to a GPU they were not fitted on. A GPU whose rows alone inform a constant (the
    T4's sustained clock) is predicted with that constant at its starting value."""
    out = {}
    for name in sorted({gpu_hardware(r.gpu_label).name for r in rows}):
        held = [r for r in rows if gpu_hardware(r.gpu_label).name == name]
        kept = [r for r in rows if gpu_hardware(r.gpu_label).name != name]
        fit = fit_cross_gpu(h200, works, kept, matmul_efficiency)
        errors = [predict_row(r, h200, works, fit.cross, fit.inference_factor) / r.samples_per_s - 1 for r in held]
        out[name] = float(np.mean(np.abs(errors)))
    return out


# ----------------------------------------------------------------------------------- 3. unmeasured models
def count_defaults(
    fits: Mapping[str, KernelModel],
    works: Mapping[str, Mapping[str, PhaseWork]],
    tensors: Mapping[str, int],
    param_bytes: Mapping[str, int],
    cross: CrossGpu,
) -> CountDefaults:
    """Medians over the measured models ``fits`` (by name, with their counted work) for unmeasured ones."""
    names = sorted(fits)

    def median(values: Sequence[float]) -> float:
        return float(np.median(values))

    ref = gpu_hardware(REFERENCE_GPU)
    per_phase: dict[str, dict[str, float]] = {"kernels_per_op": {}, "traffic": {}, "blocks": {}, "launch": {}}
    for phase in ("fw", "bwd"):
        kernels, traffic, blocks, launch = [], [], [], []
        for n in names:
            pk: PhaseKernels = getattr(fits[n], phase)
            work = works[n][phase]
            kernels.append(pk.kernels / max(work.ops, 1))
            memory_ms = memory_ms_on_reference(pk.per_sample_ms, work, cross)
            traffic.append(memory_ms * 1e-3 / cross.memory_s_per_byte(ref) / max(work.bytes, 1.0))
            blocks.append(pk.blocks_median)
            launch.append(pk.launch_ms)
        per_phase["kernels_per_op"][phase] = median(kernels)
        per_phase["traffic"][phase] = median(traffic)
        per_phase["blocks"][phase] = median(blocks)
        per_phase["launch"][phase] = median(launch)
    sigma = median([fits[n].fw.blocks_sigma for n in names])
    per_gb = median([fits[n].step_gpu_ms / (param_bytes[n] / 1e9) for n in names])
    x = np.array([tensors[n] for n in names], dtype=float)
    y = np.array([fits[n].step_host_ms for n in names])
    slope, intercept = np.polyfit(x, y, 1) if len(names) > 1 else (0.0, float(y[0]))
    return CountDefaults(
        kernels_per_op=per_phase["kernels_per_op"],
        traffic_per_byte=per_phase["traffic"],
        blocks_median=per_phase["blocks"],
        blocks_sigma=sigma,
        launch_ms=per_phase["launch"],
        step_gpu_ms_per_gb=per_gb,
        step_host_ms=(max(float(intercept), 0.0), max(float(slope), 0.0)),
    )


def kin(
    fits: Mapping[str, KernelModel], workloads: Mapping[str, Mapping[str, Any]], kind: str
) -> Mapping[str, KernelModel]:
    """The measured models of ``kind`` (torchvision CNNs, Hugging Face transformers, ...), or all of them where
    none is of that kind: an unmeasured model borrows from its own kind first."""
    same = {n: m for n, m in fits.items() if workloads[n]["kind"] == kind}
    return same or fits


def leave_one_out(
    fits: Mapping[str, KernelModel],
    curves: Mapping[str, MeasuredCurve],
    workloads: Mapping[str, Mapping[str, Any]],
    works: Mapping[str, Mapping[str, PhaseWork]],
    cross: CrossGpu,
) -> dict[str, float]:
    """Iteration-time MAPE on each measured model's H200 curve when it is built from its op counts and the
    other measured models' medians (those of its own kind where there are any, as an unmeasured model's are):
    the error an unmeasured model's truth may carry."""
    out = {}
    tensors = {n: len(workloads[n]["params_ready_order"]) for n in fits}
    param_bytes = {n: int(workloads[n]["param_bytes"]) for n in fits}
    for name in fits:
        others = kin({n: m for n, m in fits.items() if n != name}, workloads, str(workloads[name]["kind"]))
        defaults = count_defaults(others, works, tensors, param_bytes, cross)
        model = from_counts(workloads[name], defaults, cross)
        curve = curves[name]
        predicted = np.sum(model.phase_ms(np.asarray(curve.batches, dtype=float)), axis=0)
        out[name] = _mape(predicted, curve.median_ms("iter"))
    return out


# -------------------------------------------------------------------------------------------- 4. memory
@dataclass(frozen=True)
class MemoryLine:
    """Peak allocated bytes ``base_bytes + per_sample_bytes · batch`` of one model (fp32, SGD with momentum)."""

    base_bytes: float
    per_sample_bytes: float

    def peak_bytes(self, batch: float) -> float:
        """Peak allocated bytes at ``batch``."""
        return self.base_bytes + self.per_sample_bytes * batch


def fit_memory(curve: MeasuredCurve) -> tuple[MemoryLine, float]:
    """The memory line of a measured model and its largest relative error over the fitted batches."""
    b = np.asarray(curve.batches, dtype=float)
    peak = np.asarray(curve.peak_bytes)
    use = b >= MEMORY_FIT_MIN_BATCH
    design = np.stack([np.ones(use.sum()), b[use]], axis=1) / peak[use, None]
    (base, slope), *_ = np.linalg.lstsq(design, np.ones(use.sum()), rcond=None)
    line = MemoryLine(float(base), float(slope))
    err = float(np.max(np.abs(np.array([line.peak_bytes(x) for x in b[use]]) / peak[use] - 1.0)))
    return line, err
