"""The measurements the emulated cloud's truth is calibrated on, read from the package's data (EMULATED cloud).

* :func:`h200_curves`: real training-iteration latencies of eight models on one NVIDIA H200 (fp32, batch 1
  to 1024), with the peak memory at each batch and every timed iteration kept;
* :func:`h200_grad_ready`: when each parameter's gradient became ready in backward, at batch 32 and 128;
* :func:`h200_long_run`: 400 consecutive ResNet-50 iterations at batch 64 (the straggler process);
* :func:`public_rows`: public single-GPU ResNet-50 throughput (training, and T4/V100 inference sweeps);
* :func:`workloads`: what each bundled model is (parameters, FLOPs and bytes per sample, op counts), counted
  by the judge itself from the models' definitions (:mod:`srifty.cloud.architectures`).

``data/README.md`` says where each file comes from. Files are read once and cached.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import NDArray

from srifty.cloud.architectures import ARCHITECTURES, workload

PHASE_KEYS = ("fw", "bw", "step")


def _text(name: str) -> str:
    return resources.files("srifty.cloud").joinpath("data", name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class MeasuredCurve:
    """One model's H200 latencies: per batch, every timed iteration of each phase (ms), and peak memory."""

    model: str
    batches: tuple[int, ...]
    samples_ms: Mapping[str, tuple[NDArray[np.float64], ...]]
    peak_bytes: tuple[float, ...]
    n_params: int

    def median_ms(self, phase: str) -> NDArray[np.float64]:
        """Median of each batch's timed iterations of ``phase`` (``fw``, ``bw``, ``step``, ``iter``)."""
        return np.array([float(np.median(s)) for s in self.samples_ms[phase]])


@dataclass(frozen=True)
class GradReady:
    """One backward pass with per-parameter gradient-ready times (ms from backward's start), in ready order."""

    model: str
    batch: int
    backward_ms: float
    names: tuple[str, ...]
    bytes: tuple[int, ...]
    ready_ms: tuple[float, ...]


@cache
def _h200_records() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(line) for line in _text("h200_fp32.jsonl").splitlines() if line.strip())


@cache
def h200_curves() -> dict[str, MeasuredCurve]:
    """Every model's H200 curve, by the record's model name (``bert_base_seq128`` for srifty's ``hf:bert-base``)."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for r in _h200_records():
        if r["kind"] == "latency" and r["precision"] == "fp32":
            by_model.setdefault(r["model"], []).append(r)
    out = {}
    for model, recs in by_model.items():
        recs.sort(key=lambda r: r["batch"])
        out[model] = MeasuredCurve(
            model=model,
            batches=tuple(int(r["batch"]) for r in recs),
            samples_ms={
                ph: tuple(np.asarray(r[f"{ph}_ms"], dtype=float) for r in recs) for ph in (*PHASE_KEYS, "iter")
            },
            peak_bytes=tuple(float(r["peak_mem_bytes"]) for r in recs),
            n_params=int(recs[0]["params"]),
        )
    return out


@cache
def h200_grad_ready() -> dict[str, tuple[GradReady, ...]]:
    """Gradient-ready records per model, smallest batch first."""
    out: dict[str, list[GradReady]] = {}
    for r in _h200_records():
        if r["kind"] != "grad_ready":
            continue
        order = r["order"]
        out.setdefault(r["model"], []).append(
            GradReady(
                model=r["model"],
                batch=int(r["batch"]),
                backward_ms=float(r["bw_total_ms"]),
                names=tuple(o["param"] for o in order),
                bytes=tuple(int(o["bytes"]) for o in order),
                ready_ms=tuple(float(o["t_ms"]) for o in order),
            )
        )
    return {k: tuple(sorted(v, key=lambda g: g.batch)) for k, v in out.items()}


@cache
def h200_long_run() -> NDArray[np.float64]:
    """The 400 iteration times (ms) of ResNet-50 at batch 64, in the order they ran."""
    for r in _h200_records():
        if r["kind"] == "long_run":
            return np.asarray(r["iter_ms"], dtype=float)
    raise LookupError("h200_fp32.jsonl has no long_run record")


@dataclass(frozen=True)
class PublicRow:
    """One public throughput figure of ResNet-50 on one GPU (``mode`` ``train`` or ``inference``)."""

    gpu_label: str
    mode: str
    batch: int
    precision: str
    samples_per_s: float
    source: str


@cache
def public_rows() -> tuple[PublicRow, ...]:
    """Every bundled public row."""
    return tuple(
        PublicRow(
            r["gpu_label"], r["mode"], int(r["batch"]), r["precision"], float(r["samples_per_s"]), r["source_repo"]
        )
        for r in csv.DictReader(_text("gpu_throughput.csv").splitlines())
    )


@cache
def workloads() -> dict[str, dict[str, Any]]:
    """Device-independent facts about each bundled model, by srifty's model name (the judge's own counts)."""
    return {name: workload(name) for name in ARCHITECTURES}
