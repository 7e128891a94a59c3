"""Numeric modes as PyTorch runs them, and which peak of a GPU each op class can reach under them.

A profile records the settings its run used (:class:`NumericSettings`): whether cuDNN may use TF32 for
convolutions (``torch.backends.cudnn.allow_tf32``, True by default), whether cuBLAS may for matrix products
(``torch.backends.cuda.matmul.allow_tf32``, False by default since PyTorch 1.12, and
``torch.get_float32_matmul_precision()``, ``"highest"`` by default), and the autocast dtype, if any. A
CPU profile records them too: they are what the same script would do on a GPU.

:func:`math_unit` decides, for one op on one target GPU, which unit runs it:

=================  ==========================================  ===========================================
op dtype           convolution                                 matrix product, attention
=================  ==========================================  ===========================================
float32            TF32 tensor if ``cudnn_allow_tf32`` and the  TF32 tensor if ``matmul_allow_tf32`` (or a
                   GPU is Ampere or later, else FP32 SIMT       precision of ``high``/``medium``) and the
                                                                GPU is Ampere or later, else FP32 SIMT
float16            FP16 tensor (Volta and later); P100's FP16 units at their rate; else FP32 SIMT
bfloat16           BF16 tensor (Ampere and later); **no mapping before Ampere** (:class:`PrecisionError`),
                   unless the caller accepts fp16 in its place, which is then an assumption of the estimate
=================  ===========================================================================================

Grouped and depthwise convolutions never use tensor cores here (cuDNN runs them on the SIMT units), and
element-wise, normalisation, embedding and optimizer ops are bound by memory, whatever their dtype.

Pure Python; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from srifty.catalog import GpuSpec
from srifty.errors import ProfileError

# Architectures, oldest first. Tensor cores arrived with Volta, TF32 and BF16 with Ampere.
GENERATIONS: tuple[str, ...] = (
    "kepler",
    "maxwell",
    "pascal",
    "volta",
    "turing",
    "ampere",
    "ada",
    "hopper",
    "blackwell",
)
TENSOR_CORES_FROM = "volta"
TF32_BF16_FROM = "ampere"

FP32_SIMT = "fp32"
TF32_TENSOR = "tf32"
FP16_TENSOR = "fp16"
BF16_TENSOR = "bf16"
FP16_SIMT = "fp16-simt"
UNITS: tuple[str, ...] = (FP32_SIMT, TF32_TENSOR, FP16_TENSOR, BF16_TENSOR, FP16_SIMT)
TENSOR_UNITS = frozenset({TF32_TENSOR, FP16_TENSOR, BF16_TENSOR})

MATMUL_PRECISIONS = ("highest", "high", "medium")


class PrecisionError(ProfileError):
    """A profile's arithmetic has no counterpart on the target GPU (bf16 on a V100)."""


@dataclass(frozen=True)
class NumericSettings:
    """The numeric settings a profile ran under.

    Attributes:
        cudnn_allow_tf32: ``torch.backends.cudnn.allow_tf32`` (convolutions may use TF32).
        matmul_allow_tf32: ``torch.backends.cuda.matmul.allow_tf32`` (matrix products may use TF32).
        float32_matmul_precision: ``torch.get_float32_matmul_precision()``: ``highest``, ``high`` or
            ``medium`` (the latter two allow TF32 for matrix products).
        autocast_dtype: ``"bfloat16"`` or ``"float16"`` under autocast, else ``None``.
        recorded: False where the profile predates these fields and PyTorch's defaults are assumed.
    """

    cudnn_allow_tf32: bool = True
    matmul_allow_tf32: bool = False
    float32_matmul_precision: str = "highest"
    autocast_dtype: str | None = None
    recorded: bool = True

    def __post_init__(self) -> None:
        if self.float32_matmul_precision not in MATMUL_PRECISIONS:
            raise ProfileError(
                f"unknown float32 matmul precision '{self.float32_matmul_precision}'; "
                f"expected one of {', '.join(MATMUL_PRECISIONS)}"
            )
        if self.autocast_dtype not in (None, "bfloat16", "float16"):
            raise ProfileError(f"unknown autocast dtype '{self.autocast_dtype}'; expected bfloat16 or float16")

    @property
    def matmul_tf32(self) -> bool:
        """Whether fp32 matrix products may run in TF32 (either switch allows it)."""
        return self.matmul_allow_tf32 or self.float32_matmul_precision != "highest"

    def describe(self) -> str:
        """One line, for tables and estimate records."""
        conv = "TF32 allowed" if self.cudnn_allow_tf32 else "full FP32"
        mm = "TF32 allowed" if self.matmul_tf32 else "full FP32"
        cast = f"autocast {self.autocast_dtype}" if self.autocast_dtype else "no autocast"
        assumed = "" if self.recorded else " (not recorded: PyTorch defaults assumed)"
        return f"convolutions {conv}, matmuls {mm}, {cast}{assumed}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> NumericSettings:
        """Inverse of :meth:`to_dict`; ``None`` gives PyTorch's defaults, marked as not recorded."""
        if data is None:
            return cls(recorded=False)
        return cls(**data)

    @classmethod
    def for_precision(cls, precision: str) -> NumericSettings:
        """PyTorch's defaults for a srifty precision name (``fp32``, ``bf16``, ``fp16``), marked not recorded."""
        dtype = {"fp32": None, "bf16": "bfloat16", "fp16": "float16"}.get(precision)
        return cls(autocast_dtype=dtype, recorded=False)


def generation_index(spec: GpuSpec) -> int:
    """Position of the GPU's architecture in :data:`GENERATIONS`.

    Raises:
        ProfileError: the datasheet row has no (known) generation.
    """
    if spec.generation not in GENERATIONS:
        raise ProfileError(
            f"the datasheet row of {spec.name} names no known GPU generation ('{spec.generation}'); "
            f"expected one of {', '.join(GENERATIONS)}."
        )
    return GENERATIONS.index(spec.generation)


def has_tensor_cores(spec: GpuSpec) -> bool:
    """Volta or later."""
    return generation_index(spec) >= GENERATIONS.index(TENSOR_CORES_FROM)


def has_tf32_bf16(spec: GpuSpec) -> bool:
    """Ampere or later (TF32 and BF16 tensor cores)."""
    return generation_index(spec) >= GENERATIONS.index(TF32_BF16_FROM)


def math_unit(
    op_class: str, dtype: str, settings: NumericSettings, spec: GpuSpec, *, bf16_as_fp16: bool = False
) -> str:
    """The unit that runs one FLOP-carrying op (``conv``, ``conv_grouped``, ``matmul``, ``attention``) on ``spec``.

    Args:
        op_class: the op's class (see :mod:`srifty.compute.opclass`).
        dtype: the op's dtype as recorded (``float32``, ``bfloat16``, ``float16``).
        settings: the profile's numeric settings.
        spec: the target GPU.
        bf16_as_fp16: on a GPU without BF16, run bf16 ops as fp16 (an assumption the caller records).

    Raises:
        PrecisionError: bf16 on a GPU before Ampere, without ``bf16_as_fp16``.
    """
    if dtype == "bfloat16" and not has_tf32_bf16(spec):
        if not bf16_as_fp16:
            raise PrecisionError(
                f"the profile runs bf16 ops, which a {spec.name} ({spec.generation}) cannot run on tensor cores "
                "(BF16 arrived with Ampere). Profile the model with fp16 autocast for this GPU, or accept fp16 in "
                "place of bf16 as an assumption (`--bf16-as-fp16`)."
            )
        dtype = "float16"
    if op_class == "conv_grouped":
        return FP32_SIMT if dtype != "float16" else _half_simt(spec)
    if dtype == "bfloat16":
        return BF16_TENSOR
    if dtype == "float16":
        return FP16_TENSOR if has_tensor_cores(spec) else _half_simt(spec)
    tf32_allowed = settings.cudnn_allow_tf32 if op_class == "conv" else settings.matmul_tf32
    return TF32_TENSOR if tf32_allowed and has_tf32_bf16(spec) else FP32_SIMT


def _half_simt(spec: GpuSpec) -> str:
    """16-bit ops without tensor cores: P100's FP16 units where the datasheet lists them, else FP32 SIMT."""
    return FP16_SIMT if spec.tensor16_flops_per_s and not has_tensor_cores(spec) else FP32_SIMT


def peak_flops_per_s(spec: GpuSpec, unit: str) -> float:
    """Dense datasheet peak of ``unit`` on ``spec``, in FLOP/s.

    Raises:
        PrecisionError: the datasheet lists no figure for that unit on that GPU.
    """
    value = {
        FP32_SIMT: spec.fp32_flops_per_s,
        TF32_TENSOR: spec.tf32_flops_per_s,
        FP16_TENSOR: spec.tensor16_flops_per_s,
        BF16_TENSOR: spec.bf16_flops_per_s,
        FP16_SIMT: spec.tensor16_flops_per_s,
    }.get(unit)
    if not value:
        raise PrecisionError(f"the datasheet lists no {unit} peak for {spec.name}; add it to gpu_specs.csv.")
    return float(value)
