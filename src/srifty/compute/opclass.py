"""Op classes: which kind of GPU kernel an ATen op record becomes.

The calibrated GPU model (:mod:`srifty.compute.gpu_model`) gives each class its own achieved fraction of
the applicable peak and its own per-kernel costs. Classes, decided from the op's name, phase and variant:

* ``conv``: dense convolutions and their backward (cuDNN; TF32 tensor cores where allowed);
* ``conv_grouped``: grouped and depthwise convolutions (cuDNN runs them on SIMT units, bound by memory);
* ``matmul``: ``mm``, ``addmm``, ``bmm``, ... (cuBLAS);
* ``attention``: fused scaled-dot-product attention kernels;
* ``norm``: batch, layer, group and RMS normalisation and their backward;
* ``embedding``: embedding lookups, gathers, scatters and their backward;
* ``elementwise``: every other op that moves bytes (activations, adds, pooling, softmax, dropout, copies);
* ``optimizer``: every op of the optimizer step;
* ``host``: ops that launch no kernel on a GPU (views, metadata, allocations, ``detach``).

Profiles recorded before srifty marked grouped convolutions (their op counts lack
:data:`~srifty.compute.work.GROUPED_CONV_FIX`) have them classified by arithmetic intensity instead: a
convolution moving at least one byte per :data:`GROUPED_MAX_FLOPS_PER_BYTE` FLOPs is taken as grouped
(depthwise 3x3 convolutions do 1-3 FLOPs per byte, dense ones 5 or more in the bundled models).

Pure Python.
"""

from __future__ import annotations

from srifty.compute.work import GROUPED_CONV_FIX, OpRecord, OpWork

FLOP_CLASSES: tuple[str, ...] = ("conv", "conv_grouped", "matmul", "attention")
MEMORY_CLASSES: tuple[str, ...] = ("norm", "embedding", "elementwise", "optimizer")
HOST = "host"
CLASSES: tuple[str, ...] = (*FLOP_CLASSES, *MEMORY_CLASSES, HOST)

GROUPED_MAX_FLOPS_PER_BYTE = 4.0

# Ops that launch no GPU kernel: views and aliases (no bytes counted already), allocations whose bytes the
# counter saw as outputs but nobody touches, and host-side bookkeeping.
NO_KERNEL_OPS = frozenset(
    {
        "_unsafe_view",
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "lift_fresh",
        "alias",
        "detach",
        "_local_scalar_dense",
        "_record_function_enter_new",
        "_record_function_exit",
    }
)
MATMUL_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "_addmm_activation"})
EMBEDDING_OPS = frozenset(
    {"index_select", "gather", "scatter", "scatter_add", "scatter_add_", "index", "index_put", "index_add"}
)


def base_name(op: str) -> str:
    """``aten.native_batch_norm.default`` → ``native_batch_norm``."""
    parts = op.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "profiler", "prims") else parts[0]


def variants_recorded(work: OpWork) -> bool:
    """Whether ``work`` marks grouped convolutions (recorded with srifty's fixed FLOP formulas)."""
    return GROUPED_CONV_FIX in work.flop_formulas


def op_class(record: OpRecord, *, variants_known: bool = True) -> str:
    """The class of one op record (see the module docstring)."""
    name = base_name(record.op)
    f_hi, m_hi = record.flops[1], record.bytes[1]
    if name in NO_KERNEL_OPS or (f_hi <= 0 and m_hi <= 0):
        return HOST
    if record.phase == "step":
        return "optimizer"
    if "convolution" in name:
        grouped = bool(record.variant) if variants_known else f_hi < GROUPED_MAX_FLOPS_PER_BYTE * max(m_hi, 1.0)
        return "conv_grouped" if grouped else "conv"
    if name in MATMUL_OPS:
        return "matmul"
    if "scaled_dot_product" in name or "flash_attention" in name or "efficient_attention" in name:
        return "attention"
    if "norm" in name:
        return "norm"
    if "embedding" in name or name in EMBEDDING_OPS:
        return "embedding"
    return "elementwise"


def classify(work: OpWork) -> tuple[str, ...]:
    """The class of every record of ``work``, in order."""
    known = variants_recorded(work)
    return tuple(op_class(r, variants_known=known) for r in work.records)
