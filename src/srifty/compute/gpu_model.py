"""The calibrated GPU compute model: a training iteration's phases on a GPU from its op counts.

Each op record ``i`` of a phase (``count`` kernels doing ``F`` FLOPs and moving ``M`` bytes in all, see
:mod:`srifty.compute.work`) takes, on the GPU, kernel time::

    k_i = count · κ_c + smax_p(F / (η_c,u · P_u), (M + F / I_c) / (μ_c · BW))

where ``c`` is its class (:mod:`srifty.compute.opclass`), ``u`` the unit that runs it and ``P_u`` that
unit's datasheet peak (:mod:`srifty.compute.numerics`: FP32 SIMT, TF32/FP16/BF16 tensor), ``BW`` the
memory bandwidth, ``η`` and ``μ`` the achieved fractions of the peak and of the bandwidth, ``I_c`` the
arithmetic intensity (FLOPs per byte) a convolution's or matrix product's tiles reach, so that operand
traffic beyond the tensors' own bytes grows with the work (what keeps a kernel on a GPU with a huge peak
far below it), ``smax_p`` a smooth maximum (below) whose exponent ``p`` says how far a kernel overlaps its
arithmetic with its memory traffic (1: not at all, the times add; large: fully); memory-bound ops take
``M / (μ_c · BW)``; and ``κ`` a
fixed cost per kernel (launch and tail; its own value for cuDNN convolutions, which run several kernels and
layout transforms per op). The host issues the same ops one by one, ``h`` seconds each (more for
convolutions and normalisations, which query cuDNN; little for ops that launch nothing), asynchronously:
the GPU runs a kernel once it is issued and the previous one is done. With ``H_p`` and ``K_p`` the host and kernel
time of phase ``p``, the ends of the phases as CUDA events see them are::

    E_fw   = smax(H_fw, K_fw)
    E_bw   = smax(E_fw + K_bw, H_fw + H_bw)
    E_step = smax(E_bw + K_step, H_fw + H_bw + H_step)

with ``smax(a, b) = (a^q + b^q)^(1/q)`` a smooth maximum (``q`` fitted): at small batches the host sets the
pace (the flat floor of a GPU latency curve), at large ones the kernels do (the line), and the bend between
is gradual. ``fw = E_fw``, ``bw = E_bw − E_fw``, ``step = E_step − E_bw``, ``iter = E_step``.

For convolutions and matrix products whose shapes the profile recorded (since issue 27), ``η`` is
multiplied by the record's tile efficiency (:func:`tile_efficiency`, :mod:`srifty.compute.gemm`): how much
of the GPU its products' output tiles keep busy (padding, wave quantisation over the GPU's SMs, split-K)
and the tile's fixed cost against its ``k`` steps, so that a 64-channel 1×1 layer and a 512-channel 3×3
layer of the same class run at different fractions of the peak; and the operand traffic ``F / I_c`` is
multiplied by the best tiles' edge (:func:`srifty.compute.gemm.tile_edge`) over a 128×128 tile's, since a
smaller tile loads each operand more often per FLOP (``I_c`` is the intensity of a 128×128 tile).

Parameters (:class:`GpuModelParams`) are named ``eta.*``, ``mu.*``, ``intensity.*``, ``tile.*``, ``kernel_s*``,
``host_s.*``, ``overlap_p`` and ``pipeline_q``; per GPU generation, ``compute_scale@<gen>`` and
``memory_scale@<gen>`` multiply every ``eta`` and ``mu`` (1 where not fitted).
:mod:`srifty.compute.gpu_fit` fits them.

Pure numpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from srifty.catalog import GpuSpec
from srifty.compute.gemm import TILE_EDGES, tile_edge, tile_occupancy
from srifty.compute.numerics import TENSOR_UNITS, NumericSettings, math_unit, peak_flops_per_s
from srifty.compute.opclass import HOST, classify, variants_recorded
from srifty.compute.work import WORK_PHASES, OpWork
from srifty.errors import ProfileError

MS_PER_S = 1000.0

# Every parameter, with its prior (median) and the prior's spread in natural-log units; the fit may move a
# parameter far from its prior where data speak to it. Sources of the medians: cuBLAS SGEMM and HGEMM reach
# 70-90% of peak on large matrices, STREAM-like kernels ~80% of datasheet bandwidth; a CUDA kernel launch
# costs a few microseconds; eager PyTorch issues an op in tens of microseconds.
PRIORS: dict[str, tuple[float, float]] = {
    "eta.conv.tensor": (0.3, 1.0),
    "eta.conv.simt": (0.6, 0.5),
    "eta.matmul.tensor": (0.6, 0.5),
    "eta.matmul.simt": (0.8, 0.15),
    "eta.conv_grouped": (0.3, 1.0),
    "mu.conv": (0.5, 1.0),
    "mu.conv_grouped.fw": (0.2, 1.5),
    "mu.conv_grouped.bw": (0.1, 1.5),
    "mu.norm": (0.5, 1.0),
    "mu.elementwise": (0.8, 0.3),
    "mu.optimizer": (0.6, 1.0),
    "kernel_s": (3e-6, 1.0),
    "kernel_s.optimizer": (3e-7, 2.0),
    "kernel_s.conv": (1e-5, 1.0),
    "host_s.conv": (5e-5, 1.0),
    "host_s.norm": (4e-5, 1.0),
    "host_s.fw": (1.5e-5, 0.4),
    "host_s.bw": (1.5e-5, 0.4),
    "host_s.step": (5e-6, 1.0),
    "host_s.view": (2e-6, 1.0),
    "pipeline_q": (3.0, 0.5),
    "overlap_p": (2.0, 0.7),
    "intensity.conv": (50.0, 1.0),
    "intensity.matmul": (100.0, 1.0),
    "tile.k_half": (32.0, 1.0),
    "tile.edge_cost": (0.1, 1.5),
}
# Bounds: efficiencies are fractions of a peak; costs are positive and below 10 ms per op.
UPPER_BOUNDS: dict[str, float] = {
    "pipeline_q": 20.0,
    "overlap_p": 20.0,
    "intensity.conv": 1e4,
    "intensity.matmul": 1e4,
    "tile.k_half": 1e4,
    "tile.edge_cost": 10.0,
}
LOWER_BOUNDS: dict[str, float] = {
    "pipeline_q": 1.0,
    "overlap_p": 1.0,
    "intensity.conv": 1.0,
    "intensity.matmul": 1.0,
    "tile.k_half": 1e-2,
    "tile.edge_cost": 1e-4,
}
KERNEL_KEYS = {"optimizer": "kernel_s.optimizer", "conv": "kernel_s.conv", "conv_grouped": "kernel_s.conv"}
SCALE_PRIOR_SD = 0.4  # generation scales: log-normal around 1
SCALE_BOUNDS = (0.1, 5.0)
# Tile efficiency of a matrix product whose shape was not recorded (profiles before issue 27): the median
# over the 8 H200 models of each one's effective tile efficiency (its shaped FLOPs over their time at the
# fitted tile efficiencies, forward and backward, batches 32-256) under the bundled calibration of issue 27:
# 0.26 (mobilenet_v2 0.025, shufflenet 0.028, inception_v3 0.21, resnet18 0.245, resnet50 0.27, vgg16 0.40,
# alexnet 0.54, BERT-base 0.99). An unshaped profile is priced like a typical model; its estimate errs by
# as much as the models' spread, and says so (``assumptions``).
UNSHAPED_TILE_EFFICIENCY = 0.26
# Op classes priced by their products' shapes; grouped convolutions have their own efficiencies.
SHAPED_CLASSES = frozenset({"conv", "matmul"})
# Products on tensor cores: never split along k. Products on the SIMT cores (FP32 without TF32, e.g. the
# V100, or matrix products where PyTorch leaves TF32 off): split along k down to 4,096 steps per block, and
# priced by occupancy alone, since their slower math hides a tile's fixed cost. Both chosen by the
# leave-one-model-out figures (srifty.compute.gemm's docstring gives them).
TENSOR_SPLIT_K_MIN: float | None = None
SIMT_SPLIT_K_MIN: float | None = 4096.0
REFERENCE_TILE_EDGE = tile_edge((128, 128))


def scale_names(generation: str) -> tuple[str, str]:
    """``(compute_scale@gen, memory_scale@gen)``."""
    return f"compute_scale@{generation}", f"memory_scale@{generation}"


@dataclass(frozen=True)
class GpuModelParams:
    """Fitted parameters of the GPU model (see the module docstring), by name."""

    values: Mapping[str, float]

    def __post_init__(self) -> None:
        missing = sorted(set(PRIORS) - set(self.values))
        if missing:
            raise ProfileError(f"GPU model parameters lack {', '.join(missing)}; refit the calibration")

    def scales(self, generation: str) -> tuple[float, float]:
        """``(compute, memory)`` scale of a generation (1 where not fitted)."""
        compute, memory = scale_names(generation)
        return float(self.values.get(compute, 1.0)), float(self.values.get(memory, 1.0))

    @classmethod
    def prior(cls) -> GpuModelParams:
        """The priors' medians (what the model predicts with no data)."""
        return cls({name: median for name, (median, _) in PRIORS.items()})


@dataclass
class PhaseFeatures:
    """One phase's op counts as seconds at 100% of each peak (arrays over batches).

    FLOP-carrying records are kept one by one (``flop_keys``/``flop_mu_keys`` name their parameters, rows of
    ``flop_s``/``flop_byte_s`` their FLOPs over the peak and bytes over the bandwidth), because compute and
    memory traffic overlap within a kernel; memory-bound ones are summed by parameter (``byte_s``).
    """

    flop_keys: list[str] = field(default_factory=list)
    flop_mu_keys: list[str] = field(default_factory=list)
    flop_rows: list[NDArray[np.float64]] = field(default_factory=list)
    flop_byte_rows: list[NDArray[np.float64]] = field(default_factory=list)
    flop_bw_rows: list[NDArray[np.float64]] = field(default_factory=list)
    flop_intensity_keys: list[str] = field(default_factory=list)
    flop_shaped: list[bool] = field(default_factory=list)
    flop_shape_missing: list[bool] = field(default_factory=list)
    gemm_record: list[int] = field(default_factory=list)
    gemm_share_rows: list[NDArray[np.float64]] = field(default_factory=list)
    gemm_occupancy_rows: list[NDArray[np.float64]] = field(default_factory=list)
    gemm_k_rows: list[NDArray[np.float64]] = field(default_factory=list)
    byte_s: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    kernels: dict[str, float] = field(default_factory=dict)
    host_ops: dict[str, float] = field(default_factory=dict)
    flop_s: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    flop_byte_s: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    flop_bw_s: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    gemm_share: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0)))
    gemm_occupancy: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0, 0)))
    gemm_k: NDArray[np.float64] = field(default_factory=lambda: np.zeros((0, 0, 0)))
    gemm_simt: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def freeze(self) -> None:
        """Stack the per-record rows into matrices (rows: records, columns: batches; the products' shares
        are ``(gemms, batches)``, their occupancies and ``k`` per block ``(tiles, gemms, batches)``)."""
        self.flop_s = np.array(self.flop_rows) if self.flop_rows else np.zeros((0, 0))
        self.flop_byte_s = np.array(self.flop_byte_rows) if self.flop_byte_rows else np.zeros((0, 0))
        self.flop_bw_s = np.array(self.flop_bw_rows) if self.flop_bw_rows else np.zeros((0, 0))
        if self.gemm_record:
            self.gemm_share = np.array(self.gemm_share_rows)
            self.gemm_occupancy = np.stack(self.gemm_occupancy_rows, axis=1)
            self.gemm_k = np.stack(self.gemm_k_rows, axis=1)
            self.gemm_simt = np.array([self.flop_keys[r].endswith(".simt") for r in self.gemm_record])


@dataclass
class WorkFeatures:
    """Everything :func:`predict_ms` needs about one workload on one GPU at some batches.

    Attributes:
        batches: the batch sizes (columns of every array).
        generation: the GPU's generation (selects its scales).
        phases: ``fw``, ``bw``, ``step`` features.
        units: which unit ran each FLOP class (``{"conv": "tf32", "matmul": "fp32"}``), for the record.
        assumptions: what the features had to assume, in words.
    """

    batches: NDArray[np.float64]
    generation: str
    phases: dict[str, PhaseFeatures]
    units: dict[str, str]
    assumptions: tuple[str, ...]


def _eta_key(op_class: str, unit: str) -> str:
    if op_class == "conv_grouped":
        return "eta.conv_grouped"
    family = "conv" if op_class == "conv" else "matmul"
    return f"eta.{family}.{'tensor' if unit in TENSOR_UNITS else 'simt'}"


def _mu_key(op_class: str, phase: str) -> str:
    if op_class == "conv":
        return "mu.conv"
    if op_class == "conv_grouped":
        return f"mu.conv_grouped.{'bw' if phase == 'bw' else 'fw'}"
    if op_class in ("norm", "optimizer"):
        return f"mu.{op_class}"
    return "mu.elementwise"


def _host_key(op_class: str, phase: str) -> str:
    if op_class == HOST:
        return "host_s.view"
    if op_class in ("conv", "conv_grouped"):
        return "host_s.conv"
    if op_class == "norm":
        return "host_s.norm"
    return "host_s.step" if phase == "step" else f"host_s.{phase}"


def work_features(
    work: OpWork,
    batches: ArrayLike,
    spec: GpuSpec,
    settings: NumericSettings,
    *,
    bf16_as_fp16: bool = False,
) -> WorkFeatures:
    """Op counts of ``work`` on ``spec`` at ``batches``, summed by the parameter that prices them.

    Raises:
        PrecisionError: an op's dtype has no unit on ``spec`` (bf16 before Ampere without ``bf16_as_fp16``).
        ProfileError: no op counts.
    """
    if not work.records:
        raise ProfileError("the profile has no op counts to estimate a GPU from")
    b = np.atleast_1d(np.asarray(batches, dtype=float))
    classes = classify(work)
    assumptions: list[str] = []
    if not variants_recorded(work):
        assumptions.append(
            "op counts predate srifty's grouped-convolution fix: grouped convolutions recognised by arithmetic "
            "intensity; profile again for exact counts"
        )
    units: dict[str, str] = {}
    phases: dict[str, PhaseFeatures] = {}
    bandwidth = spec.mem_bw_bytes_per_s
    used_fp16_for_bf16 = False
    for phase in WORK_PHASES:
        feats = PhaseFeatures()
        index = [i for i, r in enumerate(work.records) if r.phase == phase]
        if index:
            records = [work.records[i] for i in index]
            flops = work.flops_at(records, b)
            moved = work.bytes_at(records, b)
            for row, (i, record) in enumerate(zip(index, records, strict=True)):
                op_class = classes[i]
                host = _host_key(op_class, phase)
                feats.host_ops[host] = feats.host_ops.get(host, 0.0) + record.count
                if op_class == HOST:
                    continue
                kernel = KERNEL_KEYS.get(op_class, "kernel_s")
                feats.kernels[kernel] = feats.kernels.get(kernel, 0.0) + record.count
                mu = _mu_key(op_class, phase)
                if op_class in ("conv", "conv_grouped", "matmul", "attention") and record.flops[1] > 0:
                    unit = math_unit(op_class, record.dtype, settings, spec, bf16_as_fp16=bf16_as_fp16)
                    used_fp16_for_bf16 |= record.dtype == "bfloat16" and unit != "bf16" and op_class != "conv_grouped"
                    units.setdefault(op_class, unit)
                    feats.flop_keys.append(_eta_key(op_class, unit))
                    feats.flop_mu_keys.append(mu)
                    feats.flop_rows.append(flops[row] / peak_flops_per_s(spec, unit))
                    feats.flop_byte_rows.append(moved[row] / bandwidth)
                    feats.flop_bw_rows.append(flops[row] / bandwidth)
                    feats.flop_intensity_keys.append(
                        "intensity.conv" if op_class.startswith("conv") else "intensity.matmul"
                    )
                    shaped = op_class in SHAPED_CLASSES and bool(record.gemms)
                    feats.flop_shaped.append(shaped)
                    feats.flop_shape_missing.append(op_class in SHAPED_CLASSES and not record.gemms)
                    if shaped:
                        split = TENSOR_SPLIT_K_MIN if unit in TENSOR_UNITS else SIMT_SPLIT_K_MIN
                        _add_gemms(feats, len(feats.flop_rows) - 1, work.gemms_at(record, b), spec.sm_count, split)
                else:
                    feats.byte_s[mu] = feats.byte_s.get(mu, 0.0) + moved[row] / bandwidth
        feats.freeze()
        phases[phase] = feats
    if not work.gemms_recorded:
        assumptions.append(
            "op counts predate srifty's matrix-product shapes: every product priced at a typical tile efficiency "
            f"({UNSHAPED_TILE_EFFICIENCY:.0%}); profile again for per-layer tiles and waves"
        )
    if spec.sm_count is None:
        assumptions.append(f"the datasheet row of the {spec.name} has no SM count: no wave quantisation")
    if used_fp16_for_bf16:
        assumptions.append(f"bf16 ops priced as fp16 on the {spec.name}, which has no BF16 tensor cores")
    return WorkFeatures(b, spec.generation, phases, units, tuple(assumptions))


def _add_gemms(
    feats: PhaseFeatures, row: int, dims: NDArray[np.float64], sm_count: int | None, split_k_min: float | None
) -> None:
    """Record row ``row``'s matrix products (``dims``: ``(gemms, 4, batches)``) with their share of its FLOPs."""
    work = dims[:, 0] * dims[:, 1] * dims[:, 2] * dims[:, 3]
    share = work / np.maximum(work.sum(axis=0), 1.0)
    occupancy, k_per_block = tile_occupancy(dims, sm_count, split_k_min)
    for j in range(dims.shape[0]):
        feats.gemm_record.append(row)
        feats.gemm_share_rows.append(share[j])
        feats.gemm_occupancy_rows.append(occupancy[:, j])
        feats.gemm_k_rows.append(k_per_block[:, j])


def tile_efficiency(f: PhaseFeatures, params: GpuModelParams) -> NDArray[np.float64]:
    """Each FLOP record's tile efficiency (records × batches, at most 1): see :func:`tile_terms`."""
    return tile_terms(f, params)[0]


def tile_terms(f: PhaseFeatures, params: GpuModelParams) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each FLOP record's ``(tile efficiency, operand traffic factor)``, both records × batches.

    Tile efficiency (at most 1): its products' best tile each (:mod:`srifty.compute.gemm`),
    ``occupancy · k/(k + k½) / (1 + c·edge)`` on tensor cores and the occupancy alone on SIMT cores (see
    :data:`SIMT_SPLIT_K_MIN`), combined by their FLOPs (time adds, so efficiencies combine harmonically);
    :data:`UNSHAPED_TILE_EFFICIENCY` for a convolution or matrix product whose shape was not recorded; 1 for
    the classes never priced by shape (grouped convolutions, attention), whose ``eta`` alone carries their
    efficiency.

    Operand traffic factor: the FLOP-weighted :func:`srifty.compute.gemm.tile_edge` of those best tiles
    (``64/tm + 64/tn``: a tile loads each operand once per ``tm`` or ``tn`` outputs, so the operand bytes
    per FLOP scale with it), relative to the 128×128 tile whose intensity ``intensity.*`` is; 1 where no
    shape was recorded.
    """
    v = params.values
    efficiency = np.ones(f.flop_s.shape)
    traffic = np.ones(f.flop_s.shape)
    if f.flop_shape_missing:
        efficiency[np.asarray(f.flop_shape_missing)] = UNSHAPED_TILE_EFFICIENCY
    if not f.gemm_record:
        return efficiency, traffic
    k_half, edge_cost = float(v["tile.k_half"]), float(v["tile.edge_cost"])
    k_steps = f.gemm_k
    per_tile = f.gemm_occupancy * k_steps / (k_steps + k_half) / (1.0 + edge_cost * TILE_EDGES[:, None, None])
    per_tile[:, f.gemm_simt] = f.gemm_occupancy[:, f.gemm_simt]
    choice = per_tile.argmax(axis=0)
    best = np.maximum(np.take_along_axis(per_tile, choice[None], axis=0)[0], 1e-6)
    records = np.asarray(f.gemm_record)
    inverse = np.zeros_like(efficiency)
    np.add.at(inverse, records, f.gemm_share / best)
    edge = np.zeros_like(traffic)
    np.add.at(edge, records, f.gemm_share * TILE_EDGES[choice] / REFERENCE_TILE_EDGE)
    shaped = np.asarray(f.flop_shaped)
    efficiency[shaped] = 1.0 / np.maximum(inverse[shaped], 1.0)
    traffic[shaped] = edge[shaped]
    return efficiency, traffic


def _smax(a: NDArray[np.float64], b: NDArray[np.float64], q: float) -> NDArray[np.float64]:
    """Smooth maximum ``(a^q + b^q)^(1/q)``, computed stably."""
    top = np.maximum(np.maximum(a, b), 1e-15)
    return top * ((a / top) ** q + (b / top) ** q) ** (1.0 / q)


def flop_record_seconds(
    f: PhaseFeatures, params: GpuModelParams, compute_scale: float, memory_scale: float
) -> NDArray[np.float64]:
    """Kernel seconds of each FLOP-carrying record of a phase (records × batches, launch costs not included):
    ``smax_p(F / (η · tiles · P), (M + F · edge / I) / (μ · BW))`` (the module docstring)."""
    v = params.values
    tiles, operand_traffic = tile_terms(f, params)
    eta = np.array([v[name] for name in f.flop_keys])[:, None] * compute_scale * tiles
    mu = np.array([v[name] for name in f.flop_mu_keys])[:, None] * memory_scale
    intensity = np.array([v[name] for name in f.flop_intensity_keys])[:, None]
    traffic = (f.flop_byte_s + f.flop_bw_s * operand_traffic / intensity) / mu
    return _smax(f.flop_s / eta, traffic, float(v["overlap_p"]))


def phase_times_s(
    features: WorkFeatures, params: GpuModelParams
) -> tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.float64]]]:
    """``(host, kernel)`` seconds of each phase, arrays over the batches."""
    v = params.values
    compute_scale, memory_scale = params.scales(features.generation)
    zero = np.zeros_like(features.batches)
    host: dict[str, NDArray[np.float64]] = {}
    kernel: dict[str, NDArray[np.float64]] = {}
    for phase, f in features.phases.items():
        k = zero.copy()
        if len(f.flop_keys):
            k = k + flop_record_seconds(f, params, compute_scale, memory_scale).sum(axis=0)
        for name, seconds in f.byte_s.items():
            k = k + seconds / (v[name] * memory_scale)
        for name, count in f.kernels.items():
            k = k + count * v[name]
        kernel[phase] = k
        host[phase] = zero + sum(count * v[name] for name, count in f.host_ops.items())
    return host, kernel


def predict_ms(features: WorkFeatures, params: GpuModelParams) -> dict[str, NDArray[np.float64]]:
    """Mean ``fw``, ``bw``, ``step`` and ``iter`` latency (ms) at ``features.batches`` (see the module docstring)."""
    host, kernel = phase_times_s(features, params)
    q = float(params.values["pipeline_q"])
    end_fw = _smax(host["fw"], kernel["fw"], q)
    end_bw = _smax(end_fw + kernel["bw"], host["fw"] + host["bw"], q)
    end_step = _smax(end_bw + kernel["step"], host["fw"] + host["bw"] + host["step"], q)
    return {
        "fw": end_fw * MS_PER_S,
        "bw": (end_bw - end_fw) * MS_PER_S,
        "step": (end_step - end_bw) * MS_PER_S,
        "iter": end_step * MS_PER_S,
    }
