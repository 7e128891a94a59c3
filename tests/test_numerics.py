"""The numeric-mode table: which unit (and peak) runs each op class for each precision, GPU generation and
TF32 switch; the datasheet columns it reads; op classes."""

from __future__ import annotations

import pytest

from srifty.catalog import load_catalog
from srifty.compute import NumericSettings, PrecisionError
from srifty.compute.numerics import math_unit, peak_flops_per_s
from srifty.compute.opclass import op_class
from srifty.compute.work import OpRecord
from srifty.errors import ProfileError

SPECS = load_catalog().gpu_specs
DEFAULTS = NumericSettings()  # PyTorch's: cuDNN may use TF32, cuBLAS may not
NO_TF32 = NumericSettings(cudnn_allow_tf32=False)
MATMUL_TF32 = NumericSettings(matmul_allow_tf32=True)
HIGH = NumericSettings(float32_matmul_precision="high")


@pytest.mark.parametrize(
    ("op", "dtype", "settings", "gpu", "unit"),
    [
        # fp32 convolutions: TF32 on Ampere and later when cuDNN may, FP32 SIMT otherwise
        ("conv", "float32", DEFAULTS, "A100", "tf32"),
        ("conv", "float32", DEFAULTS, "H200", "tf32"),
        ("conv", "float32", DEFAULTS, "L4", "tf32"),  # Ada
        ("conv", "float32", NO_TF32, "A100", "fp32"),
        ("conv", "float32", DEFAULTS, "V100", "fp32"),  # no TF32 before Ampere
        ("conv", "float32", DEFAULTS, "T4", "fp32"),
        ("conv", "float32", DEFAULTS, "K80", "fp32"),
        # fp32 matrix products: FP32 unless a switch allows TF32 (PyTorch >= 1.12 default: not)
        ("matmul", "float32", DEFAULTS, "H200", "fp32"),
        ("matmul", "float32", MATMUL_TF32, "H200", "tf32"),
        ("matmul", "float32", HIGH, "A10", "tf32"),
        ("attention", "float32", HIGH, "A100", "tf32"),
        ("matmul", "float32", MATMUL_TF32, "V100", "fp32"),
        # fp16: tensor cores from Volta on; P100's FP16 units; FP32 rate before
        ("matmul", "float16", DEFAULTS, "V100", "fp16"),
        ("conv", "float16", DEFAULTS, "T4", "fp16"),
        ("matmul", "float16", DEFAULTS, "H100", "fp16"),
        ("matmul", "float16", DEFAULTS, "P100", "fp16-simt"),
        ("matmul", "float16", DEFAULTS, "K80", "fp32"),
        # bf16: tensor cores from Ampere on
        ("matmul", "bfloat16", DEFAULTS, "A100", "bf16"),
        ("conv", "bfloat16", DEFAULTS, "H200", "bf16"),
        # grouped/depthwise convolutions never use tensor cores
        ("conv_grouped", "float32", DEFAULTS, "H200", "fp32"),
        ("conv_grouped", "bfloat16", DEFAULTS, "A100", "fp32"),
        ("conv_grouped", "float16", DEFAULTS, "P100", "fp16-simt"),
    ],
)
def test_numeric_mode_table(op: str, dtype: str, settings: NumericSettings, gpu: str, unit: str) -> None:
    assert math_unit(op, dtype, settings, SPECS[gpu]) == unit


@pytest.mark.parametrize("gpu", ["V100", "T4", "P100", "K80", "Quadro-RTX-8000"])
def test_bf16_cannot_map_before_ampere_unless_fp16_is_accepted(gpu: str) -> None:
    with pytest.raises(PrecisionError, match="BF16 arrived with Ampere"):
        math_unit("matmul", "bfloat16", DEFAULTS, SPECS[gpu])
    accepted = math_unit("matmul", "bfloat16", DEFAULTS, SPECS[gpu], bf16_as_fp16=True)
    assert accepted == math_unit("matmul", "float16", DEFAULTS, SPECS[gpu])


@pytest.mark.parametrize(
    ("gpu", "unit", "tflops"),
    [
        ("A100", "tf32", 156),
        ("A100", "fp32", 19.5),
        ("A100", "bf16", 312),
        ("H200", "tf32", 494.7),
        ("V100", "fp16", 125),
        ("RTX-3090", "tf32", 35.6),  # GeForce: TF32 at the FP32 rate
        ("P100", "fp16-simt", 18.7),
    ],
)
def test_each_unit_reads_its_datasheet_column(gpu: str, unit: str, tflops: float) -> None:
    assert peak_flops_per_s(SPECS[gpu], unit) == pytest.approx(tflops * 1e12)


def test_every_datasheet_row_names_its_generation_and_tensor_peaks_follow_it() -> None:
    for spec in SPECS.values():
        assert spec.generation, spec.name
        ampere_or_later = spec.generation in ("ampere", "ada", "hopper", "blackwell")
        assert (spec.tf32_flops_per_s is not None) == ampere_or_later, spec.name
        assert (spec.bf16_flops_per_s is not None) == ampere_or_later, spec.name


def test_a_missing_peak_is_a_clear_error() -> None:
    with pytest.raises(PrecisionError, match="lists no tf32 peak for V100"):
        peak_flops_per_s(SPECS["V100"], "tf32")


def test_settings_round_trip_and_describe_themselves() -> None:
    s = NumericSettings(cudnn_allow_tf32=True, matmul_allow_tf32=False, autocast_dtype="bfloat16")
    assert NumericSettings.from_dict(s.to_dict()) == s
    assert "convolutions TF32 allowed, matmuls full FP32, autocast bfloat16" in s.describe()
    assert not NumericSettings.from_dict(None).recorded
    assert NumericSettings.for_precision("fp16").autocast_dtype == "float16"
    with pytest.raises(ProfileError, match="matmul precision"):
        NumericSettings(float32_matmul_precision="lowest")


def _record(op: str, phase: str = "fw", flops: float = 1e9, moved: float = 1e6, variant: str = "") -> OpRecord:
    return OpRecord(phase, op, "", "float32", 1, (flops, flops), (moved, moved), None, variant)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (_record("aten.convolution.default"), "conv"),
        (_record("aten.convolution_backward.default", "bw"), "conv"),
        (_record("aten.convolution.default", variant="depthwise"), "conv_grouped"),
        (_record("aten.mm.default"), "matmul"),
        (_record("aten._scaled_dot_product_efficient_attention.default"), "attention"),
        (_record("aten.native_batch_norm.default", flops=0), "norm"),
        (_record("aten.embedding_dense_backward.default", "bw", flops=0), "embedding"),
        (_record("aten.relu_.default", flops=0), "elementwise"),
        (_record("aten._foreach_add_.List", "step", flops=0), "optimizer"),
        (_record("aten._unsafe_view.default", flops=0), "host"),
        (_record("aten.view.default", flops=0, moved=0), "host"),
    ],
)
def test_op_classes(record: OpRecord, expected: str) -> None:
    assert op_class(record) == expected


def test_old_op_counts_recognise_grouped_convolutions_by_intensity() -> None:
    depthwise = _record("aten.convolution.default", flops=2e6, moved=1e6)
    dense = _record("aten.convolution.default", flops=2e8, moved=1e6)
    assert op_class(depthwise, variants_known=False) == "conv_grouped"
    assert op_class(dense, variants_known=False) == "conv"
