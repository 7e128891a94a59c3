"""srifty's own H200 profiles (benchmarks/results/h200_profiles): the data are what the report says they are,
the report reads them, they source other GPUs' estimates, and their noisy launch-bound batches are explained."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from benchmarks.h200_profiles import MODELS, file_stem
from benchmarks.h200_report import calibrated_models, measured_profiles, render


def test_the_profiles_are_cuda_measurements_on_an_h200_with_a_host_staged_exchange() -> None:
    profiles = measured_profiles()
    assert {p.model for p in profiles} <= {m for m, _ in MODELS} and len(profiles) == 10
    for p in profiles:
        assert p.device.label == "H200" and p.timing_method == "cuda_events" and not p.is_estimate
        assert [s.batch for s in p.samples][-1] == 1024 and len(p.samples) == 4
        assert p.interference is not None and p.interference.host_staged
        assert p.work is not None and all(r.time_s is not None for r in p.work.records)


def test_the_report_tells_held_out_models_from_those_the_calibration_saw(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each profiled model is estimated by a fit on every other model group and never its own. The fits are
    recorded, not run (seven fits take minutes; ``tests/test_calibration.py`` runs the real one): what this
    checks is which cases each refit is given and how the report labels the models."""
    from benchmarks import h200_report

    from srifty.compute import gpu_fit
    from srifty.compute.gpu_measurements import WORKLOADS

    refits: list[set[str]] = []

    def record_fit(cases):  # type: ignore[no-untyped-def]
        refits.append({c.group for c in cases})
        return gpu_fit.default_gpu_calibration().params

    monkeypatch.setattr(gpu_fit, "fit_params", record_fit)
    fitted_on = calibrated_models()
    assert {"resnet50", "vgg16", "mobilenet_v2", "hf:bert-base"} <= fitted_on
    assert not {"hf:gpt2-small", "convnext_tiny", "vit_b_16"} & fitted_on
    held_out = [p.model for p in measured_profiles() if p.model not in fitted_on]
    body = render()
    assert f"Held out ({len(held_out)} models, {4 * len(held_out)} probed batches)" in body
    for model in held_out:
        assert f"| {model} | held out |" in body
    every_group = {c.group for c in h200_report._bundled_cases()}
    group_of = {w.h200_name: w.group for w in WORKLOADS}
    assert len(refits) == len(held_out)
    for model, groups in zip(held_out, refits, strict=True):
        assert groups == every_group - {group_of[model]}, model


def test_profile_file_stems_are_file_safe() -> None:
    assert file_stem("hf:gpt2-small") == "hf-gpt2-small__h200"
    assert file_stem("srifty.compute.zoo:dlrm") == "srifty.compute.zoo-dlrm__h200"


def test_a_measured_h200_profile_sources_the_other_gpus_estimates() -> None:
    from benchmarks.h200_report import FOLDER

    from srifty.compute import calibrated_profile, load_profile

    h200 = load_profile(FOLDER / "resnet50__h200.json")
    same = calibrated_profile(h200, "H200")
    assert float(same.predict_ms("iter", 1024)) == pytest.approx(float(h200.predict_ms("iter", 1024)), rel=1e-6)
    a100, t4 = calibrated_profile(h200, "A100"), calibrated_profile(h200, "T4")
    assert a100.estimate is not None and "scaled by the model's H200-to-A100 ratio" in a100.estimate.reason
    # Older GPUs are slower at a batch that fills them: A100 (156 TF32 TFLOP/s) and T4 (no TF32) behind H200.
    at = min(a100.max_batch, t4.max_batch, 128)
    assert float(h200.predict_ms("iter", at)) < float(a100.predict_ms("iter", at)) < float(t4.predict_ms("iter", at))


def _spread_first_probe(profile, factor: float):  # type: ignore[no-untyped-def]
    """The profile with its first probe's iteration samples spread ``factor`` times wider around their mean."""
    from dataclasses import replace

    first = profile.samples[0]
    mean = sum(first.iter_ms) / len(first.iter_ms)
    wide = tuple(mean + factor * (v - mean) for v in first.iter_ms)
    return profile.with_changes(samples=(replace(first, iter_ms=wide), *profile.samples[1:]))


def test_a_noisy_launch_bound_gpu_batch_is_blamed_on_the_host_not_a_busy_machine() -> None:
    from benchmarks.h200_report import FOLDER

    from srifty.compute import load_profile

    noisy = load_profile(FOLDER / "hf-gpt2-small__h200.json")  # batch 1 spread ±20% on the device
    warning = noisy.noisy_samples()
    assert warning is not None and "at batch 1" in warning and "host's kernel launches" in warning
    assert "probably busy" not in warning
    assert load_profile(FOLDER / "vgg16__h200.json").noisy_samples() is None
    tiny = load_profile(
        Path(__file__).resolve().parents[1] / "examples" / "profiles" / "srifty.compute.zoo-tiny_mlp__cpu.json"
    )
    cpu_warning = _spread_first_probe(tiny, 50.0).noisy_samples()
    assert cpu_warning is not None and "probably busy" in cpu_warning and "kernel launches" not in cpu_warning
