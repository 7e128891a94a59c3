"""The GPU model and its calibration: the leave-one-model-out protocol on a small synthetic fixture, the fit,
the artefact, and the bundled calibration."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from srifty.catalog import load_catalog
from srifty.compute import NumericSettings, default_gpu_calibration, load_gpu_calibration, load_profile
from srifty.compute.gpu_fit import (
    Case,
    GpuCalibrationData,
    build_cases,
    cross_validate,
    fit_params,
    gpu_to_gpu_ms,
    lomo_fits,
    mape,
    summarize,
)
from srifty.compute.gpu_measurements import (
    bundled_curves,
    bundled_released_curves,
    bundled_srifty_curves,
    curves_from_profiles,
    op_count_profile,
    workload,
)
from srifty.compute.gpu_model import GpuModelParams, predict_ms, work_features
from srifty.compute.work import OpRecord, OpWork
from srifty.errors import ProfileError
from tests.factories import synthetic_work

SPECS = load_catalog().gpu_specs
BATCHES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512], dtype=float)
TRUTH = GpuModelParams({**GpuModelParams.prior().values, "eta.matmul.simt": 0.7, "mu.elementwise": 0.6})


def fixture_work(scale: float, n_views: int) -> OpWork:
    """A workload: one matrix product, one memory-bound op, an optimizer step, and ``n_views`` views."""
    base = synthetic_work(matmul_ms_per_sample=0.02 * scale, copy_ms_per_sample=0.01 * scale, n_small=n_views)
    conv = OpRecord("fw", "aten.convolution.default", "c", "float32", 3, (2e9 * scale, 16e9 * scale), (1e7, 8e7), None)
    return replace(base, records=(*base.records, conv))


def fixture_cases(truth: GpuModelParams = TRUTH, off: dict[str, float] | None = None) -> list[Case]:
    """Three model groups measured on an H200 (their 'measurements' are the truth's predictions, times
    ``off[group]``) and one on an A100."""
    off = off or {}
    cases = []
    for group, scale, views, gpu in (("a", 1.0, 10, "H200"), ("b", 3.0, 40, "H200"), ("c", 0.5, 5, "H200")):
        feats = work_features(fixture_work(scale, views), BATCHES, SPECS[gpu], NumericSettings())
        measured = {ph: v * off.get(group, 1.0) for ph, v in predict_ms(feats, truth).items()}
        cases.append(Case(group, group, gpu, "h200", feats, measured))
    return cases


def test_the_fit_reproduces_measurements_made_by_the_model_itself() -> None:
    cases = fixture_cases()
    fitted = fit_params(cases)
    for case in cases:
        predicted = predict_ms(case.features, fitted)
        assert mape(predicted["iter"] / case.measured_ms["iter"] - 1) < 3.0


def test_leave_one_model_out_never_fits_on_the_model_it_predicts() -> None:
    cases = fixture_cases()
    seen: dict[frozenset[str], int] = {}

    def spy(subset):  # type: ignore[no-untyped-def]
        seen[frozenset(c.group for c in subset)] = len(subset)
        return TRUTH

    fits = lomo_fits(cases, fit=spy)
    assert set(fits) == {"a", "b", "c"}
    assert set(seen) == {frozenset("bc"), frozenset("ac"), frozenset("ab")}
    # each held-out case is predicted with the fit that left its own group out
    fits = {"a": TRUTH, "b": GpuModelParams.prior(), "c": TRUTH}
    for held in cross_validate(cases, fits):
        expected = predict_ms(held.case.features, fits[held.case.group])
        np.testing.assert_allclose(held.predicted_ms["iter"], expected["iter"])


def test_a_model_unlike_the_others_shows_its_error_only_when_held_out() -> None:
    cases = fixture_cases(off={"b": 1.5})  # model b runs 50% slower than the physics says
    held = {h.case.group: mape(h.errors("iter")) for h in cross_validate(cases)}
    assert held["b"] > 25.0  # predicted from a and c, it is far off: the error is reported, not hidden
    assert held["a"] < held["b"] and held["c"] < held["b"]
    summary = summarize(cross_validate(cases, lomo_fits(cases)))
    assert summary.h200_by_model["b"] == pytest.approx(held["b"], rel=1e-6)
    assert summary.h200["iter"] == pytest.approx(
        mape(e for h in cross_validate(cases) for e in h.errors("iter")), rel=1e-6
    )


def test_gpu_to_gpu_scaling_keeps_a_measured_curve_on_its_own_gpu_and_follows_the_model_elsewhere() -> None:
    work = fixture_work(1.0, 10)
    h200 = work_features(work, BATCHES, SPECS["H200"], NumericSettings())
    measured = {ph: v * 1.3 for ph, v in predict_ms(h200, TRUTH).items()}  # the model is 30% off on this one
    same = gpu_to_gpu_ms(measured, h200, h200, TRUTH)
    np.testing.assert_allclose(same["fw"], measured["fw"])
    v100 = work_features(work, BATCHES, SPECS["V100"], NumericSettings())
    scaled = gpu_to_gpu_ms(measured, h200, v100, TRUTH)
    truth_v100 = predict_ms(v100, TRUTH)
    np.testing.assert_allclose(scaled["bw"], 1.3 * truth_v100["bw"], rtol=1e-9)  # the source's error carries over


def test_a_v100_is_slower_than_an_h200_on_the_same_op_counts() -> None:
    work = fixture_work(1.0, 10)
    params = default_gpu_calibration().params
    h200 = predict_ms(work_features(work, BATCHES, SPECS["H200"], NumericSettings()), params)
    v100 = predict_ms(work_features(work, BATCHES, SPECS["V100"], NumericSettings()), params)
    assert np.all(v100["iter"][-3:] > h200["iter"][-3:])
    assert np.all(np.diff(h200["iter"]) >= -1e-9)


def test_the_bundled_calibration_records_its_held_out_errors_and_round_trips(tmp_path: Path) -> None:
    calibration = default_gpu_calibration()
    assert set(calibration.errors.h200) == {"fw", "bw", "step", "iter"}
    assert calibration.counts["h200_points"] > 50 and calibration.counts["public_rows"] > 50
    assert 0 < calibration.expected_error("turing", gpu_sourced=False) < 1
    assert 0 < calibration.expected_error("volta", gpu_sourced=True) < 1
    path = calibration.save(tmp_path / "cal.json")
    assert load_gpu_calibration(path) == calibration


def test_the_bundled_srifty_curves_are_what_their_h200_profiles_measured() -> None:
    profile = load_profile(Path(__file__).parents[1] / "benchmarks/results/h200_profiles/resnet34__h200.json")
    made = curves_from_profiles([profile])
    bundled = [c for c in bundled_srifty_curves() if c.model == "resnet34"]
    assert [c.batch for c in made] == [c.batch for c in bundled] == [1, 8, 128, 1024]
    for m, b in zip(made, bundled, strict=True):
        for phase in ("fw", "bw", "step", "iter"):
            assert m.ms[phase] == pytest.approx(b.ms[phase], rel=1e-5)
            assert m.cv[phase] == pytest.approx(b.cv[phase], rel=1e-4, abs=1e-9)
    assert made[-1].ms["iter"] == pytest.approx(profile.samples[-1].mean_ms("iter"))


def test_a_cpu_profile_makes_no_gpu_curve() -> None:
    with pytest.raises(ProfileError, match="not measured on a GPU"):
        curves_from_profiles([op_count_profile("bundled/resnet18__cpu.json")])


def test_every_bundled_h200_curve_is_a_case_of_its_own_model_group() -> None:
    cases = [c for c in build_cases(GpuCalibrationData.bundled()) if c.kind == "h200"]
    by_model = {c.workload: c for c in cases}
    curve_models = {p.model for p in bundled_curves()}
    released_curves = {p.model for p in bundled_released_curves()}
    assert len(cases) == len(curve_models) == len(released_curves) + 7
    assert {workload(key).h200_name for key in by_model} == curve_models
    released_groups = {c.group for c in cases if workload(c.workload).h200_name in released_curves}
    srifty_groups = {c.group for c in cases if workload(c.workload).h200_name not in released_curves}
    assert len(srifty_groups) == 7 and not srifty_groups & released_groups
    bert_small = by_model["bert_small_seq128"]
    assert list(bert_small.features.batches) == [1, 8, 128, 1024]
    assert bert_small.measured_ms["iter"][-1] > bert_small.measured_ms["iter"][0]
