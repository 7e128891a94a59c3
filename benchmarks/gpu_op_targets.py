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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from multiprocessing import Pool
from typing import Any

import numpy as np

import srifty.compute.gpu_fit as gpu_fit
from benchmarks.h200_report import FOLDER, cpu_source, kernel_seconds, records_by_class
from srifty.catalog import load_catalog
from srifty.compute import load_profile
from srifty.compute.gpu_measurements import bundled_curves
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
    classes: frozenset[str] | None, weight: float, left_out: frozenset[str]
) -> tuple[float, dict, float, dict[str, Any]]:
    """``(released curves' held-out iteration MAPE, by model, the new models' held-out iteration MAPE, what the
    fit without resnet50 says about it)``: its memory efficiencies and its signed iteration errors by batch."""
    global _CASES
    _CASES = gpu_fit.build_cases(gpu_fit.GpuCalibrationData(bundled_curves(), ()))
    if classes is not None:
        for stem in PROFILED:
            if stem not in left_out:
                _CASES += op_cases(stem, classes, weight)
    groups = sorted({c.group for c in _CASES} | set(NEW))
    with Pool(2) as pool:
        fits = dict(pool.map(_fit_without, groups))
    held = [gpu_fit.HeldOut(c, gpu_fit.predict_case_ms(c, fits[c.group])) for c in _CASES if c.kind == "h200"]
    summary = gpu_fit.summarize(held)
    new = np.concatenate([np.abs(new_model_errors(m, fits[m])) for m in NEW])
    resnet50 = fits["resnet50"].values
    errors = next(h.errors("iter") for h in held if h.case.workload == "resnet50")
    probe = {"mu.conv": resnet50["mu.conv"], "mu.norm": resnet50["mu.norm"], "errors": errors}
    return summary.h200["iter"], summary.h200_by_model, float(100 * new.mean()), probe


def main() -> None:
    gpu_fit._residuals = _with_op_cases(gpu_fit._residuals)  # this process only
    for label, classes, weight, left_out in VARIANTS:
        released, by_model, new, probe = run_variant(classes, weight, left_out)
        worst = max(by_model, key=lambda k: by_model[k])
        errors = " ".join(f"{100 * e:+.0f}" for e in probe["errors"])
        print(
            f"{label}: released curves {released:.1f}% (worst {worst} {by_model[worst]:.1f}%, vgg16 "
            f"{by_model['vgg16']:.1f}%, resnet50 {by_model['resnet50']:.1f}%); new models {new:.1f}%; fit without "
            f"resnet50: mu.conv {probe['mu.conv']:.2f}, mu.norm {probe['mu.norm']:.2f}, its errors by batch {errors}",
            flush=True,
        )


if __name__ == "__main__":
    main()
