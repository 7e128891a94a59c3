"""An experiment, not adopted: per-op-class kernel times from srifty's own H200 profiles as extra targets of the
GPU model's calibration. ``python -m benchmarks.gpu_op_targets`` (about 8 minutes on 2 cores; prints, writes
nothing; the figures are in :mod:`srifty.compute.gemm`'s docstring).

The bundled calibration is fitted to whole-phase times (the released H200 curves, the public rows); the H200
profiles in ``benchmarks/results/h200_profiles`` also timed every op of one instrumented iteration at batches
128 and 1024 (BENCHMARKS.md, "Profiles measured on a GPU (H200)", check 4, shows batch normalisation priced
3-4x too fast and convolutions 1.2-1.9x too slow by that fit). Here each profile's kernel time per
(phase, op class) becomes a case of its own (residual ``ln(model / measured)`` at both batches, at a weight),
and the fit is scored leave-one-model-out on H200 data only (the public rows left out, as in the fast loop of
:mod:`srifty.compute.gemm`'s notes): the released curves' 8 models, and the iteration at the 4 probed batches of
the 7 profiled models the calibration never saw, predicted from their CPU profiles' op counts. A model's own
op cases leave with it. Variants: which classes become targets, and their weight.

The fit's residual function is replaced for this process only (:func:`_with_op_cases`), so the package's
calibration code is used as it is.

``--pricing three-bottlenecks`` (issue 27, session 15) also replaces, for this process, how the GPU model prices a
convolution or matrix product (:func:`three_bottleneck_seconds`): the smooth maximum of three times, its
arithmetic, its tensors' distinct bytes over the memory bandwidth (``mu.*``), and its operands' re-reads by tile
over an on-chip feed rate (``intensity.*`` FLOPs per byte of the memory bandwidth), instead of the arithmetic
against the sum of the two byte terms. The idea: a 1×1 convolution streams its tensors at about 0.8 of the
bandwidth (the H200 profiles' per-op times) while the shipped model adds the operand term to them. ``--public``
puts the public rows in the fit as the bundled calibration does, and reports their held-out MAPE too (about 5
minutes a variant instead of 20-80 s). ``--tensor-split-k K`` splits tensor-core products along ``k`` down to ``K``
steps a block (:data:`srifty.compute.gpu_model.TENSOR_SPLIT_K_MIN`, off as shipped). Figures:
:mod:`srifty.compute.gemm`'s docstring.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from multiprocessing import Pool
from typing import Any

import numpy as np

import srifty.compute.gpu_fit as gpu_fit
from benchmarks.h200_report import FOLDER, cpu_source, kernel_seconds, records_by_class
from srifty.catalog import load_catalog
from srifty.compute import gpu_model, load_profile
from srifty.compute.gpu_measurements import bundled_public_rows, bundled_released_curves
from srifty.compute.gpu_model import GpuModelParams, phase_times_s, predict_ms, work_features

PROFILED = ("resnet50", "vgg16", "mobilenet_v2", "hf-gpt2-small", "densenet121", "hf-bert-small",
            "efficientnet_b0", "convnext_tiny", "resnet34", "vit_b_16")  # fmt: skip
RELEASED_GROUPS = {"resnet50", "vgg16", "mobilenet_v2"}  # their released curves' groups in the calibration
NEW = tuple(m for m in PROFILED if m not in RELEASED_GROUPS)
#: (label, op classes made targets or None for none, weight, models whose op cases are left out)
VARIANTS: tuple[tuple[str, frozenset[str] | None, float, frozenset[str]], ...] = (
    ("none (the fit as it is)", None, 1.0, frozenset()),
    ("every class", frozenset({"*"}), 1.0, frozenset()),
    ("every class at weight 0.3, convnext_tiny left out", frozenset({"*"}), 0.3, frozenset({"convnext_tiny"})),
    ("normalisation only", frozenset({"norm"}), 1.0, frozenset()),
    ("normalisation and convolution at weight 0.5", frozenset({"norm", "conv"}), 0.5, frozenset()),
    ("normalisation and convolution", frozenset({"norm", "conv"}), 1.0, frozenset()),
    ("normalisation, convolution, grouped convolution; convnext_tiny left out",
     frozenset({"norm", "conv", "conv_grouped"}), 1.0, frozenset({"convnext_tiny"})),
)  # fmt: skip
_CASES: list[gpu_fit.Case] = []


def _with_op_cases(residuals: Any) -> Any:
    """The calibration's residuals, plus one per op case and batch."""

    def combined(x: np.ndarray, names: Sequence[str], cases: Sequence[gpu_fit.Case]) -> np.ndarray:
        parts = [residuals(x, names, [c for c in cases if c.kind != "op"])]
        params = GpuModelParams(dict(zip(names, np.exp(x), strict=True)))
        for case in cases:
            if case.kind == "op":
                _, kernel = phase_times_s(case.features, params)
                ratio = np.maximum(sum(kernel.values()), 1e-12) / case.measured_ms["kernel"]
                parts.append(case.weight * np.log(ratio) / gpu_fit.DATA_SIGMA)
        return np.concatenate(parts)

    return combined


def op_cases(stem: str, classes: frozenset[str], weight: float) -> list[gpu_fit.Case]:
    """One case per (phase, op class) of the profile's instrumented iteration (kernel seconds at its batches)."""
    profile = load_profile(FOLDER / f"{stem}__h200.json")
    work = profile.work
    assert work is not None
    h200 = load_catalog().gpu_specs["H200"]
    grouped = records_by_class(work, None if "*" in classes else classes)
    out = []
    for (phase, op_class), records in sorted(grouped.items()):
        measured = np.array([kernel_seconds(records, i) for i in (0, 1)])
        features = work_features(
            replace(work, records=tuple(records)), list(work.batches), h200, profile.numeric_settings
        )
        out.append(
            gpu_fit.Case(f"{stem}:{phase}:{op_class}", stem, "H200", "op", features, {"kernel": measured}, weight)
        )
    return out


def _smax3(a: np.ndarray, b: np.ndarray, c: np.ndarray, p: float) -> np.ndarray:
    top = np.maximum(np.maximum(np.maximum(a, b), c), 1e-15)
    return top * ((a / top) ** p + (b / top) ** p + (c / top) ** p) ** (1.0 / p)


def three_bottleneck_seconds(
    f: gpu_model.PhaseFeatures, params: GpuModelParams, compute_scale: float, memory_scale: float
) -> np.ndarray:
    """:func:`srifty.compute.gpu_model.flop_record_seconds` with each product's kernel time the smooth maximum
    (exponent ``overlap_p``) of its arithmetic, its distinct bytes at ``mu`` of the bandwidth, and its operand
    re-reads (FLOPs × the best tiles' edge / ``intensity``) at the generation's memory scale."""
    v = params.values
    tiles, operand_traffic = gpu_model.tile_terms(f, params)
    eta = np.array([v[name] for name in f.flop_keys])[:, None] * compute_scale * tiles
    mu = np.array([v[name] for name in f.flop_mu_keys])[:, None] * memory_scale
    intensity = np.array([v[name] for name in f.flop_intensity_keys])[:, None]
    operands = f.flop_bw_s * operand_traffic / (intensity * memory_scale)
    return _smax3(f.flop_s / eta, f.flop_byte_s / mu, operands, float(v["overlap_p"]))


def use_three_bottlenecks() -> None:
    """Price products by :func:`three_bottleneck_seconds` in this process (and the fits' workers it forks),
    with priors for what its parameters now mean: ``mu.conv`` a streaming efficiency (0.8), ``intensity.conv`` an
    on-chip feed rate (30 FLOPs per byte of the memory bandwidth)."""
    gpu_model.flop_record_seconds = three_bottleneck_seconds
    gpu_model.PRIORS["mu.conv"] = (0.8, 0.5)
    gpu_model.PRIORS["intensity.conv"] = (30.0, 1.0)


def _fit_without(group: str) -> tuple[str, GpuModelParams]:
    return group, gpu_fit.fit_params([c for c in _CASES if c.group != group])


def new_model_errors(stem: str, params: GpuModelParams) -> np.ndarray:
    """Signed iteration errors at the profile's probed batches, predicted from the model's CPU profile."""
    measured_profile = load_profile(FOLDER / f"{stem}__h200.json")
    source, _ = cpu_source(measured_profile.model)
    assert source.work is not None
    batches = np.array([s.batch for s in measured_profile.samples], dtype=float)
    measured = np.array([s.mean_ms("iter") for s in measured_profile.samples])
    h200 = load_catalog().gpu_specs["H200"]
    predicted = predict_ms(work_features(source.work, batches, h200, source.numeric_settings), params)["iter"]
    return predicted / measured - 1.0


def run_variant(
    classes: frozenset[str] | None, weight: float, left_out: frozenset[str], public: bool = False
) -> tuple[float, dict, float, dict[str, Any]]:
    """``(released curves' held-out iteration MAPE, by model, the new models' held-out iteration MAPE, what the
    fit without resnet50 says about it)``: its memory efficiencies, its signed iteration errors by batch, and
    (``public``: the public rows in the fit too) the public rows' held-out iteration MAPE."""
    global _CASES
    # The released curves only: the 7 profiled models are predicted, never fitted on, as before they joined the
    # bundled calibration's data.
    dataset = gpu_fit.GpuCalibrationData(bundled_released_curves(), bundled_public_rows() if public else ())
    _CASES = gpu_fit.build_cases(dataset)
    if classes is not None:
        for stem in PROFILED:
            if stem not in left_out:
                _CASES += op_cases(stem, classes, weight)
    groups = sorted({c.group for c in _CASES} | set(NEW))
    with Pool(2) as pool:
        fits = dict(pool.map(_fit_without, groups))
    held = [
        gpu_fit.HeldOut(c, gpu_fit.predict_case_ms(c, fits[c.group])) for c in _CASES if c.kind in ("h200", "public")
    ]
    summary = gpu_fit.summarize(held)
    new = np.concatenate([np.abs(new_model_errors(m, fits[m])) for m in NEW])
    resnet50 = fits["resnet50"].values
    errors = next(h.errors("iter") for h in held if h.case.workload == "resnet50")
    probe = {"mu.conv": resnet50["mu.conv"], "mu.norm": resnet50["mu.norm"], "errors": errors, "public": summary.public}
    return summary.h200["iter"], summary.h200_by_model, float(100 * new.mean()), probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pricing", choices=("shipped", "three-bottlenecks"), default="shipped")
    parser.add_argument("--public", action="store_true", help="the public rows in the fit too (slower)")
    parser.add_argument("--only", nargs="*", help="only the variants whose label starts with one of these")
    parser.add_argument(
        "--tensor-split-k", type=float, help="split tensor-core products along k down to this many steps a block"
    )
    args = parser.parse_args()
    if args.tensor_split_k:
        gpu_model.TENSOR_SPLIT_K_MIN = args.tensor_split_k
    if args.pricing == "three-bottlenecks":
        use_three_bottlenecks()
    gpu_fit._residuals = _with_op_cases(gpu_fit._residuals)  # this process only
    for label, classes, weight, left_out in VARIANTS:
        if args.only and not any(label.startswith(o) for o in args.only):
            continue
        released, by_model, new, probe = run_variant(classes, weight, left_out, args.public)
        worst = max(by_model, key=lambda k: by_model[k])
        errors = " ".join(f"{100 * e:+.0f}" for e in probe["errors"])
        print(
            f"{label}: released curves {released:.1f}% (worst {worst} {by_model[worst]:.1f}%, vgg16 "
            f"{by_model['vgg16']:.1f}%, resnet50 {by_model['resnet50']:.1f}%); new models {new:.1f}%; fit without "
            f"resnet50: mu.conv {probe['mu.conv']:.2f}, mu.norm {probe['mu.norm']:.2f}, its errors by batch {errors}"
            + (f"; public rows {probe['public']:.1f}%" if args.public else ""),
            flush=True,
        )


if __name__ == "__main__":
    main()
