"""The calibrated constants of the emulated cloud's compute physics (``data/calibration.json``) as values.

``python -m benchmarks.cloud_calibration`` fits them (:mod:`srifty.cloud.compute_fit`) and writes the file with
every fit error; this module only reads and writes it. Kernel and memory entries are keyed by srifty's model
names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from srifty.cloud.compute_fit import MemoryLine
from srifty.cloud.errors import CloudError
from srifty.cloud.kernels import KernelModel, PhaseKernels
from srifty.cloud.stragglers import StragglerFit
from srifty.cloud.transfer import CountDefaults, CrossGpu

CALIBRATION_FILE = "calibration.json"
CALIBRATION_SCHEMA = 1


@dataclass(frozen=True)
class MemoryDefaults:
    """Memory of a model the H200 did not measure: parameters, gradients and momentum, a fixed workspace,
    and activations as a share of the forward pass's counted bytes (medians over the measured models)."""

    state_copies: float
    workspace_bytes: float
    activation_per_fw_byte: float

    def line(self, param_bytes: float, fw_bytes_per_sample: float) -> MemoryLine:
        """The memory line of a model with these counts."""
        return MemoryLine(
            self.state_copies * param_bytes + self.workspace_bytes, self.activation_per_fw_byte * fw_bytes_per_sample
        )


@dataclass(frozen=True)
class Calibration:
    """Everything the compute truth is built from besides the workloads and the hardware table.

    Attributes:
        kernels: H200 kernels of each measured model.
        kernel_error: per measured model, the kernel fit's iteration-time MAPE on the H200.
        cross: the cross-GPU constants.
        cross_error: RMS log error of predicted public throughput (the cross-GPU uncertainty).
        defaults: what unmeasured models borrow (medians over every measured model).
        defaults_by_kind: the same over the measured models of one kind (``torchvision``, ``hf``); a model of a
            kind with measured models borrows from them.
        count_error: median leave-one-out iteration-time MAPE of the count-based kernels.
        memory: memory line of each measured model.
        memory_defaults: memory of unmeasured models.
        stragglers: the straggler process.
        report: the fits' full diagnostics (public rows, per-phase errors, leave-one-out), for reports.
    """

    kernels: Mapping[str, KernelModel]
    kernel_error: Mapping[str, float]
    cross: CrossGpu
    cross_error: float
    defaults: CountDefaults
    count_error: float
    memory: Mapping[str, MemoryLine]
    memory_defaults: MemoryDefaults
    stragglers: StragglerFit
    report: Mapping[str, Any]
    defaults_by_kind: Mapping[str, CountDefaults] = field(default_factory=dict)

    def defaults_for(self, kind: str) -> CountDefaults:
        """What an unmeasured model of ``kind`` borrows."""
        return self.defaults_by_kind.get(kind, self.defaults)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "schema_version": CALIBRATION_SCHEMA,
            "kernels": {k: asdict(v) for k, v in self.kernels.items()},
            "kernel_error": dict(self.kernel_error),
            "cross": asdict(self.cross),
            "cross_error": self.cross_error,
            "defaults": asdict(self.defaults),
            "defaults_by_kind": {k: asdict(v) for k, v in self.defaults_by_kind.items()},
            "count_error": self.count_error,
            "memory": {k: asdict(v) for k, v in self.memory.items()},
            "memory_defaults": asdict(self.memory_defaults),
            "stragglers": asdict(self.stragglers),
            "report": dict(self.report),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        """Read the JSON form.

        Raises:
            CloudError: another schema version.
        """
        if data.get("schema_version") != CALIBRATION_SCHEMA:
            raise CloudError(
                f"calibration schema {data.get('schema_version')} is not {CALIBRATION_SCHEMA}; rerun "
                "`python -m benchmarks.cloud_calibration`."
            )

        def kernel(d: Mapping[str, Any]) -> KernelModel:
            return KernelModel(
                fw=PhaseKernels(**d["fw"]),
                bwd=PhaseKernels(**d["bwd"]),
                step_host_ms=d["step_host_ms"],
                step_gpu_ms=d["step_gpu_ms"],
                slots=d["slots"],
            )

        strag = dict(data["stragglers"])
        for key in ("measured_quantiles", "simulated_quantiles"):
            strag[key] = tuple(strag[key])

        def read_defaults(doc: Mapping[str, Any]) -> CountDefaults:
            values = dict(doc)
            values["step_host_ms"] = tuple(values["step_host_ms"])
            return CountDefaults(**values)

        return cls(
            kernels={k: kernel(v) for k, v in data["kernels"].items()},
            kernel_error=dict(data["kernel_error"]),
            cross=CrossGpu(**data["cross"]),
            cross_error=float(data["cross_error"]),
            defaults=read_defaults(data["defaults"]),
            defaults_by_kind={k: read_defaults(v) for k, v in data.get("defaults_by_kind", {}).items()},
            count_error=float(data["count_error"]),
            memory={k: MemoryLine(**v) for k, v in data["memory"].items()},
            memory_defaults=MemoryDefaults(**data["memory_defaults"]),
            stragglers=StragglerFit(**strag),
            report=dict(data.get("report", {})),
        )


@cache
def load_calibration() -> Calibration:
    """The bundled calibration."""
    text = resources.files("srifty.cloud").joinpath("data", CALIBRATION_FILE).read_text(encoding="utf-8")
    return Calibration.from_dict(json.loads(text))


def build_calibration(maxiter: int = 300, progress: Any = None) -> Calibration:
    """Run every fit of :mod:`srifty.cloud.compute_fit` on the bundled measurements (a few minutes).

    Args:
        maxiter: generations of each kernel fit's differential evolution.
        progress: called with a line of text as each fit finishes (optional).
    """
    import math

    import numpy as np

    from srifty.cloud import compute_fit as fit
    from srifty.cloud.reference_data import h200_curves, h200_long_run, public_rows, workloads
    from srifty.cloud.stragglers import fit_stragglers
    from srifty.cloud.transfer import phase_work

    say = progress or (lambda _line: None)
    by_h200 = {w["h200_name"]: w for w in workloads().values()}
    curves = {by_h200[name]["model"]: c for name, c in h200_curves().items() if name in by_h200}
    loads = {w["model"]: w for w in workloads().values()}
    works = {m: {p: phase_work(loads[m], p) for p in ("fw", "bwd")} for m in loads}
    kernel_fits = {}
    for model, curve in sorted(curves.items()):
        ops = (works[model]["fw"].ops, works[model]["bwd"].ops)
        kernel_fits[model] = fit.fit_kernels(curve, ops, seed=0, maxiter=maxiter)
        say(f"kernels of {model}: iteration MAPE {100 * kernel_fits[model].mape['iter']:.1f}% on the H200")
    kernels = {m: f.model for m, f in kernel_fits.items()}
    reference = "resnet50"
    derived = 0.9
    cross_fit = fit.fit_cross_gpu(kernels[reference], works[reference], public_rows(), derived)
    for _ in range(3):  # the matmul efficiency and the cross-GPU constants depend on each other (weakly)
        derived = fit.matmul_efficiency_from(kernels, works, "hf:bert-base", cross_fit.cross)
        cross_fit = fit.fit_cross_gpu(
            kernels[reference], works[reference], public_rows(), fit.matmul_efficiency(derived)
        )
    cross = cross_fit.cross
    say(f"across GPUs: public-row MAPE {100 * cross_fit.mape['all']:.1f}%")
    held_out = fit.leave_one_gpu_out(kernels[reference], works[reference], public_rows(), cross.matmul_efficiency)
    say("across GPUs, each GPU held out: " + ", ".join(f"{g} {100 * e:.1f}%" for g, e in held_out.items()))
    tensors = {m: len(loads[m]["params_ready_order"]) for m in kernels}
    param_bytes = {m: int(loads[m]["param_bytes"]) for m in kernels}
    defaults = fit.count_defaults(kernels, works, tensors, param_bytes, cross)
    kinds = sorted({str(loads[m]["kind"]) for m in kernels})
    by_kind = {k: fit.count_defaults(fit.kin(kernels, loads, k), works, tensors, param_bytes, cross) for k in kinds}
    loo = fit.leave_one_out(kernels, curves, loads, works, cross)
    memory, memory_err = {}, {}
    for model, curve in curves.items():
        memory[model], memory_err[model] = fit.fit_memory(curve)
    workspace = [memory[m].base_bytes - 3.0 * param_bytes[m] for m in memory]
    activation = [memory[m].per_sample_bytes / max(works[m]["fw"].bytes, 1.0) for m in memory]
    memory_defaults = MemoryDefaults(3.0, float(max(np.median(workspace), 0.0)), float(np.median(activation)))
    stragglers = fit_stragglers(h200_long_run())
    cross_rms = math.sqrt(float(np.mean([math.log1p(r["error"]) ** 2 for r in cross_fit.rows])))
    report = {
        "kernel_mape": {m: dict(f.mape) for m, f in kernel_fits.items()},
        "public_rows": list(cross_fit.rows),
        "public_mape": dict(cross_fit.mape),
        "public_mape_held_out": held_out,
        "inference_factor": cross_fit.inference_factor,
        "matmul_efficiency_derived": derived,
        "leave_one_out_mape": loo,
        "memory_max_relative_error": memory_err,
        "kernel_fit_maxiter": maxiter,
    }
    return Calibration(
        kernels=kernels,
        kernel_error={m: f.mape["iter"] for m, f in kernel_fits.items()},
        cross=cross,
        cross_error=cross_rms,
        defaults=defaults,
        defaults_by_kind=by_kind,
        count_error=float(np.median(list(loo.values()))),
        memory=memory,
        memory_defaults=memory_defaults,
        stragglers=stragglers,
        report=report,
    )
