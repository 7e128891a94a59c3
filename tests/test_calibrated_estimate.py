"""srifty's default GPU estimates (the calibrated GPU model): CPU- and GPU-sourced, marked with their source,
numeric units and expected error; clear errors; the simulator and planner widening their spread by it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from srifty.compute import PrecisionError, calibrated_profile, default_gpu_calibration, load_profile
from srifty.compute.numerics import NumericSettings
from srifty.compute.profile import MEASURED_ERROR_CPU, MEASURED_ERROR_GPU
from srifty.compute.work import OpRecord
from srifty.errors import CatalogError, ProfileError
from srifty.plan.predict import Estimate
from srifty.plan.problem import PlanProblem
from srifty.plan.scoring import deadline_probability
from srifty.sim import Simulator
from srifty.vocab.config import make_config
from tests.factories import ConstantBusBandwidth, instance, synthetic_profile, synthetic_work

BATCHES = np.array([1, 4, 16, 64, 256, 1024], dtype=float)


def cpu_profile(dtype: str = "float32", precision: str = "fp32"):  # type: ignore[no-untyped-def]
    work = synthetic_work(peaks=(2e11, 2e10))
    work = replace(work, records=tuple(replace(r, dtype=dtype) if r.flops[1] > 0 else r for r in work.records))
    return synthetic_profile(gpu=None, work=work, peaks=(2e11, 2e10)).with_changes(precision=precision)


def test_a_cpu_sourced_estimate_is_marked_with_its_units_and_expected_error() -> None:
    est = calibrated_profile(cpu_profile(), "A100")
    calibration = default_gpu_calibration()
    assert est.is_estimate and est.estimated_from == "cpu" and est.device.gpu == "A100" and est.samples == ()
    assert est.estimate is not None and est.estimate.method == "calibrated"
    assert est.expected_error == pytest.approx(calibration.expected_error("ampere", gpu_sourced=False))
    assert "matmul on fp32" in est.estimate.numerics and "matmuls full FP32" in est.estimate.numerics
    assert "op times are not used" in est.estimate.reason
    for phase in ("fw", "bw", "step", "iter"):
        assert np.all(np.diff(est.predict_ms(phase, BATCHES)) >= -1e-9)
    assert est.cv("iter", 64)[()] == pytest.approx(calibration.gpu_cv["iter"])


def test_tf32_switches_change_which_peak_a_matmul_gets() -> None:
    source = cpu_profile()
    full = calibrated_profile(source, "A100")
    tf32 = calibrated_profile(source, "A100", settings=NumericSettings(matmul_allow_tf32=True))
    assert "matmul on tf32" in (tf32.estimate.numerics if tf32.estimate else "")
    assert float(tf32.predict_ms("fw", 1024)) < float(full.predict_ms("fw", 1024))
    on_v100 = calibrated_profile(source, "V100", settings=NumericSettings(matmul_allow_tf32=True))
    assert "matmul on fp32" in (on_v100.estimate.numerics if on_v100.estimate else "")  # no TF32 on Volta


def test_a_gpu_sourced_estimate_keeps_the_measurement_on_its_own_gpu_and_scales_it_elsewhere() -> None:
    source = synthetic_profile(gpu="T4", work=synthetic_work())
    same = calibrated_profile(source, "T4")
    for phase in ("fw", "bw", "step", "iter"):
        np.testing.assert_allclose(same.predict_ms(phase, BATCHES), source.predict_ms(phase, BATCHES), rtol=1e-9)
    assert same.expected_error == 0.0
    faster = calibrated_profile(source, "A100")
    assert float(faster.predict_ms("iter", 1024)) < float(source.predict_ms("iter", 1024))
    assert faster.expected_error == pytest.approx(default_gpu_calibration().expected_error("ampere", gpu_sourced=True))
    assert "scaled by the model's T4-to-A100 ratio" in (faster.estimate.reason if faster.estimate else "")


def test_bf16_onto_a_v100_is_refused_or_marked_with_the_assumption() -> None:
    source = cpu_profile(dtype="bfloat16", precision="bf16")
    with pytest.raises(PrecisionError, match="BF16 arrived with Ampere"):
        calibrated_profile(source, "V100")
    assumed = calibrated_profile(source, "V100", bf16_as_fp16=True)
    assert assumed.estimate is not None and "bf16 ops priced as fp16 on the V100" in assumed.estimate.assumptions
    assert "matmul on fp16" in assumed.estimate.numerics
    assert calibrated_profile(source, "A100").estimate is not None  # Ampere runs bf16


def test_unusable_sources_and_unknown_gpus_are_clear_errors() -> None:
    with pytest.raises(CatalogError, match="no datasheet figures for GPU 'V1000'"):
        calibrated_profile(cpu_profile(), "V1000")
    with pytest.raises(ProfileError, match="no per-op work counts"):
        calibrated_profile(synthetic_profile(gpu=None), "T4")
    estimate = calibrated_profile(cpu_profile(), "T4")
    with pytest.raises(ProfileError, match="itself an estimate"):
        calibrated_profile(estimate, "V100")


def test_old_profiles_assume_pytorch_defaults_and_say_so() -> None:
    source = cpu_profile()
    assert source.numerics is None and not source.numeric_settings.recorded
    est = calibrated_profile(source, "H100")
    assert est.estimate is not None and "PyTorch's defaults assumed" in est.estimate.assumptions
    grouped = OpRecord("fw", "aten.convolution.default", "", "float32", 1, (1e6, 2e6), (1e6, 2e6), (1e-3, 2e-3))
    old_work = replace(source.work, records=(*source.work.records, grouped))  # type: ignore[arg-type]
    old = calibrated_profile(source.with_changes(work=old_work), "H100")
    assert old.estimate is not None and "arithmetic intensity" in old.estimate.assumptions


def test_the_estimate_round_trips_through_its_file(tmp_path: Path) -> None:
    est = calibrated_profile(cpu_profile(), "L4")
    assert load_profile(est.save(tmp_path / "e.json")) == est


# ---- the CLI ------------------------------------------------------------------------------------------------


def test_cli_errors_exit_2_with_the_reason(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bf16 = cpu_profile(dtype="bfloat16", precision="bf16").save(tmp_path / "m__cpu.json")
    code, _, stderr = cli("profile", "estimate", str(bf16), "--gpu", "V100", "--out", str(tmp_path / "o"))
    assert code == 2 and "BF16 arrived with Ampere" in stderr and "--bf16-as-fp16" in stderr
    code, stdout, _ = cli(
        "profile", "estimate", str(bf16), "--gpu", "V100", "--bf16-as-fp16", "--out", str(tmp_path / "o")
    )
    assert code == 0 and "expected error" in stdout and "fp16" in stdout
    code, _, stderr = cli("profile", "estimate", str(bf16), "--gpu", "H2000", "--out", str(tmp_path / "o"))
    assert code == 2 and "H2000" in stderr and "H200" in stderr
    bare = synthetic_profile(gpu=None).save(tmp_path / "bare__cpu.json")
    code, _, stderr = cli("profile", "estimate", str(bare), "--gpu", "T4", "--out", str(tmp_path / "o"))
    assert code == 2 and "no per-op work counts" in stderr


# ---- uncertainty into the simulator and the planner -----------------------------------------------------------


def _simulate(profile):  # type: ignore[no-untyped-def]
    config = make_config([(instance(name="g.t4", gpu="T4"), 4, 64)])
    return Simulator({"T4": profile}, ConstantBusBandwidth(5e9)).simulate(config, np.random.default_rng(0))


def test_estimated_profiles_widen_the_spread_and_lower_the_deadline_probability() -> None:
    measured = synthetic_profile(cv=0.02)
    base = calibrated_profile(cpu_profile(), "T4")
    estimated = measured.with_changes(
        estimated_from="cpu",
        estimate=replace(base.estimate, expected_error=0.2),  # type: ignore[arg-type]
    )
    a, b = _simulate(measured), _simulate(estimated)
    # a measurement carries its latency model's held-out error (MEASURED_ERROR_*), an estimate its calibrated one
    assert a.iter_mean_s == pytest.approx(b.iter_mean_s) and 0 < a.iter_mean_error_s < b.iter_mean_error_s
    assert measured.expected_error in (MEASURED_ERROR_GPU, MEASURED_ERROR_CPU)
    assert b.iter_mean_error_s > 0.1 * b.iter_mean_s
    assert b.iter_p95_s - b.iter_p5_s > a.iter_p95_s - a.iter_p5_s
    problem = PlanProblem((), 256, 1000, "min_cost", 1.02 * 1000 * a.iter_mean_s, None, 0.0)
    sure = deadline_probability(problem, Estimate(a.iter_mean_s, a.iter_std_s, 0, 0, 0, 0))
    unsure = deadline_probability(problem, Estimate(b.iter_mean_s, b.iter_std_s, 0, 0, 0, 0, True, b.iter_mean_error_s))
    assert sure > 0.9 and 0.5 < unsure < 0.6
