"""The measurements the GPU model is calibrated on, and the op counts of the workloads they measured.

Three sources, all real GPU measurements (see ``data/calibration/README.md``):

* **H200 curves**: per-batch forward, backward, step and iteration latency of 8 models on one H200, batch 1
  to 1024 (PyTorch defaults: cuDNN convolutions in TF32, matmuls in FP32), measured by others. Bundled as
  ``h200_fp32_curves.csv`` (medians and spreads per batch) from the raw ``h200_fp32.jsonl``.
* **srifty's own H200 profiles**: the same four phases of 7 other models (ResNet-34, DenseNet-121,
  EfficientNet-B0, ConvNeXt-T and three transformers: ViT-B/16, BERT-small, GPT-2-small) at the 4 batches
  ``srifty profile --device cuda`` probed (1, 8, 128, 1024) on a lent H200, same defaults. Bundled as
  ``h200_srifty_curves.csv`` by :func:`curves_from_profiles` (issue 27: with them, the fit has four
  transformers instead of one).
* **Public training throughput**: single-GPU training figures from NVIDIA DeepLearningExamples and Lambda's
  deeplearning-benchmark, for the workloads srifty has op counts of (ResNet-50, BERT-base and BERT-large
  SQuAD fine-tuning, ResNeXt-101 32x4d). Bundled as ``public_training_rows.csv``.

Each :class:`Workload` names the profile whose op counts describe it (a CPU profile: op counts do not
depend on the device) and its *group*: workloads of one model (ResNet-50 on the H200 and in the public
rows; BERT-base at 128 and at 384 tokens) share a group, and leave-one-model-out leaves out a whole group.

Arithmetic of public rows (an assumption, recorded per row): "FP32" rows on Ampere and later GPUs ran in
NVIDIA's NGC containers, which let cuBLAS use TF32 (``TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1``) as cuDNN does,
so they are priced as TF32 for convolutions and matrix products; "TF32" rows likewise; "AMP" rows are fp16
autocast, priced from a bf16 autocast profile of the same model with fp16 in place of bf16.

Pure Python (csv, json); no torch.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from srifty.compute.numerics import NumericSettings
from srifty.compute.profile import Profile, load_profile
from srifty.errors import ProfileError

DATA_PACKAGE = "srifty.compute"
CALIBRATION_DIR = ("data", "calibration")
H200_CSV = "h200_fp32_curves.csv"
SRIFTY_H200_CSV = "h200_srifty_curves.csv"
PUBLIC_CSV = "public_training_rows.csv"
H200_GPU = "H200"
CURVE_PHASES = ("fw", "bw", "step", "iter")


@dataclass(frozen=True)
class Workload:
    """One model as measured somewhere, and where its op counts come from.

    Attributes:
        key: ``resnet50``, ``bert_base_squad``, ...
        group: the model it is (leave-one-model-out leaves a group out as a whole).
        fp32_profile: op-count source for fp32 runs: ``bundled/<file>`` (srifty's bundled profiles) or
            ``calibration/<file>`` (this folder's ``workloads/``).
        bf16_profile: op-count source for autocast runs, or ``""``.
        h200_name: the model's name in the H200 curves, or ``""``.
        public_names: ``(source_repo, model)`` pairs of its public rows.
    """

    key: str
    group: str
    fp32_profile: str
    bf16_profile: str = ""
    h200_name: str = ""
    public_names: tuple[tuple[str, str], ...] = ()


DLE, LAMBDA = "NVIDIA/DeepLearningExamples", "lambdal/deeplearning-benchmark"
WORKLOADS: tuple[Workload, ...] = (
    Workload("resnet18", "resnet18", "bundled/resnet18__cpu.json", h200_name="resnet18"),
    Workload(
        "resnet50",
        "resnet50",
        "bundled/resnet50__cpu.json",
        "calibration/resnet50-bf16__cpu.json",
        "resnet50",
        ((DLE, "ResNet50v1.5 (ImageNet)"), (LAMBDA, "resnet50")),
    ),
    Workload("vgg16", "vgg16", "bundled/vgg16__cpu.json", h200_name="vgg16"),
    Workload("alexnet", "alexnet", "bundled/alexnet__cpu.json", h200_name="alexnet"),
    Workload("inception_v3", "inception_v3", "bundled/inception_v3__cpu.json", h200_name="inception_v3"),
    Workload(
        "shufflenet_v2_x1_0",
        "shufflenet_v2_x1_0",
        "bundled/shufflenet_v2_x1_0__cpu.json",
        h200_name="shufflenet_v2_x1_0",
    ),
    Workload("mobilenet_v2", "mobilenet_v2", "bundled/mobilenet_v2__cpu.json", h200_name="mobilenet_v2"),
    Workload("bert_base_seq128", "bert-base", "bundled/hf-bert-base__cpu.json", h200_name="bert_base_seq128"),
    Workload(
        "bert_base_squad",
        "bert-base",
        "calibration/bert-base-squad-fp32__cpu.json",
        "calibration/bert-base-squad-bf16__cpu.json",
        public_names=((LAMBDA, "bert_base_squad"),),
    ),
    Workload(
        "bert_large_squad",
        "bert-large",
        "calibration/bert-large-squad-fp32__cpu.json",
        "calibration/bert-large-squad-bf16__cpu.json",
        public_names=((LAMBDA, "bert_large_squad"), (DLE, "BERT-large fine-tune SQuAD")),
    ),
    Workload(
        "resnext101_32x4d",
        "resnext101_32x4d",
        "calibration/resnext101-32x4d-fp32__cpu.json",
        "calibration/resnext101-32x4d-bf16__cpu.json",
        public_names=((DLE, "ResNeXt101-32x4d (ImageNet)"),),
    ),
    # srifty's own H200 profiles (``h200_srifty_curves.csv``); op counts from CPU profiles of the same models.
    Workload("resnet34", "resnet34", "calibration/resnet34__cpu.json", h200_name="resnet34"),
    Workload("densenet121", "densenet121", "calibration/densenet121__cpu.json", h200_name="densenet121"),
    Workload(
        "efficientnet_b0", "efficientnet_b0", "calibration/efficientnet_b0__cpu.json", h200_name="efficientnet_b0"
    ),
    Workload("convnext_tiny", "convnext_tiny", "calibration/convnext_tiny__cpu.json", h200_name="convnext_tiny"),
    Workload("vit_b_16", "vit_b_16", "calibration/vit_b_16__cpu.json", h200_name="vit_b_16"),
    Workload("bert_small_seq128", "bert-small", "bundled/hf-bert-small__cpu.json", h200_name="hf:bert-small"),
    Workload("gpt2_small_seq128", "gpt2-small", "bundled/hf-gpt2-small__cpu.json", h200_name="hf:gpt2-small"),
)

# Reference GPU names (as the public files print them) -> srifty's datasheet rows.
GPU_ALIASES: dict[str, str] = {
    "V100 16GB": "V100",
    "V100-16GB": "V100",
    "V100-32GB": "V100-32GB",
    "A100-40GB": "A100",
    "A100-80GB": "A100-80GB",
    "A100 40GB PCIe": "A100-PCIE",
    "A100 80GB PCIe": "A100-80GB-PCIE",
    "A100 80GB SXM4": "A100-80GB",
    "A10": "A10",
    "H100 80GB PCIe Gen5": "H100-PCIE",
    "H100 80GB SXM5": "H100",
    "RTX 3090": "RTX-3090",
    "RTX 4090": "RTX-4090",
    "RTX A6000": "RTX-A6000",
    "RTX 6000 Ada": "RTX-6000-Ada",
    "Quadro RTX 8000": "Quadro-RTX-8000",
}
SAMPLE_UNITS = frozenset({"img/s", "images/s", "sequences/s"})
ARITHMETIC = {"FP32": "fp32", "TF32": "fp32", "AMP": "amp", "FP16/AMP": "amp"}


@dataclass(frozen=True)
class CurvePoint:
    """Median latencies (ms) of one model at one batch on the H200, their coefficients of variation, and
    how many timed iterations they summarise."""

    model: str
    batch: int
    n_iters: int
    ms: dict[str, float]
    cv: dict[str, float]


@dataclass(frozen=True)
class PublicRow:
    """One published single-GPU training figure.

    Attributes:
        workload: the :class:`Workload` key.
        gpu: srifty's datasheet name; ``reference_gpu`` as the source prints it.
        precision: the source's label (``FP32``, ``TF32``, ``AMP``, ``FP16/AMP``).
        arithmetic: ``fp32`` (fp32 profile; TF32 on Ampere and later) or ``amp`` (16-bit autocast).
        batch: samples per GPU; ``samples_per_s`` the published throughput.
    """

    workload: str
    gpu: str
    reference_gpu: str
    precision: str
    arithmetic: str
    batch: int
    samples_per_s: float
    source_repo: str
    path: str
    container: str

    @property
    def iter_ms(self) -> float:
        """The iteration time the figure implies."""
        return 1000.0 * self.batch / self.samples_per_s


def workload(key: str) -> Workload:
    """The workload named ``key``.

    Raises:
        ProfileError: unknown key.
    """
    for w in WORKLOADS:
        if w.key == key:
            return w
    raise ProfileError(f"unknown calibration workload '{key}'; known: {', '.join(w.key for w in WORKLOADS)}")


def _data_file(*parts: str) -> Path:
    return Path(str(resources.files(DATA_PACKAGE).joinpath(*parts)))


def op_count_source_path(reference: str) -> Path:
    """The file of an op-count source named ``bundled/<file>`` or ``calibration/<file>``."""
    where, _, name = reference.partition("/")
    if where == "bundled":
        return _data_file("data", "profiles", name)
    if where == "calibration":
        return _data_file(*CALIBRATION_DIR, "workloads", name)
    raise ProfileError(f"op-count source '{reference}' must start with bundled/ or calibration/")


@cache
def op_count_profile(reference: str) -> Profile:
    """Load an op-count source named ``bundled/<file>`` or ``calibration/<file>``."""
    return load_profile(op_count_source_path(reference))


def settings_for(row_arithmetic: str) -> NumericSettings:
    """Numeric settings a public row ran under (see the module docstring)."""
    if row_arithmetic == "amp":
        return NumericSettings(matmul_allow_tf32=True, autocast_dtype="float16")
    return NumericSettings(cudnn_allow_tf32=True, matmul_allow_tf32=True)


H200_SETTINGS = NumericSettings(cudnn_allow_tf32=True, matmul_allow_tf32=False)


# ---- extraction from the raw sources (what `srifty profile calibrate --h200 --public` reads) -----------


def _cv(values: list[float]) -> float:
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if len(values) > 1 and mean > 0 else 0.0


def read_h200_jsonl(path: str | Path) -> list[CurvePoint]:
    """Every ``latency`` record of the raw H200 file, as medians and spreads per (model, batch).

    Raises:
        ProfileError: unreadable file, or no latency records.
    """
    points: list[CurvePoint] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ProfileError(f"cannot read the H200 curves '{path}': {err}") from None
    for line in lines:
        record = json.loads(line) if line.strip() else {}
        if record.get("kind") != "latency" or record.get("precision", "fp32") != "fp32":
            continue
        values = {ph: [float(v) for v in record[f"{ph}_ms"]] for ph in CURVE_PHASES}
        points.append(
            CurvePoint(
                model=record["model"],
                batch=int(record["batch"]),
                n_iters=len(values["iter"]),
                ms={ph: float(statistics.median(v)) for ph, v in values.items()},
                cv={ph: _cv(v) for ph, v in values.items()},
            )
        )
    if not points:
        raise ProfileError(f"'{path}' holds no fp32 latency records; is it h200_fp32.jsonl?")
    return points


def read_public_csv(path: str | Path) -> list[PublicRow]:
    """The single-GPU training rows of the public throughput file that srifty has op counts for.

    Raises:
        ProfileError: unreadable file.
    """
    by_name = {name: w.key for w in WORKLOADS for name in w.public_names}
    rows: list[PublicRow] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ProfileError(f"cannot read the public throughput file '{path}': {err}") from None
    for r in csv.DictReader(io.StringIO(text)):
        key = by_name.get((r["source_repo"], r["model"]))
        gpu = GPU_ALIASES.get(r["gpu"])
        arithmetic = ARITHMETIC.get(r["precision"])
        usable = r["mode"] == "train" and r["n_gpus"] == "1" and r["unit"] in SAMPLE_UNITS
        if key is None or gpu is None or arithmetic is None or not usable:
            continue
        rows.append(
            PublicRow(
                workload=key,
                gpu=gpu,
                reference_gpu=r["gpu"],
                precision=r["precision"],
                arithmetic=arithmetic,
                batch=int(float(r["batch_per_gpu"])),
                samples_per_s=float(r["throughput"]),
                source_repo=r["source_repo"],
                path=r["path"],
                container=r["container"],
            )
        )
    return rows


# ---- the bundled copies ----------------------------------------------------------------------------------


CURVE_COLUMNS = (
    "model",
    "batch",
    "n_iters",
    *(f"{ph}_ms" for ph in CURVE_PHASES),
    *(f"{ph}_cv" for ph in CURVE_PHASES),
)
PUBLIC_COLUMNS = (
    "workload",
    "gpu",
    "reference_gpu",
    "precision",
    "arithmetic",
    "batch",
    "samples_per_s",
    "source_repo",
    "path",
    "container",
)


def curves_csv(points: list[CurvePoint]) -> str:
    """CSV text of curve points (the bundled ``h200_fp32_curves.csv``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CURVE_COLUMNS)
    for p in points:
        writer.writerow(
            [p.model, p.batch, p.n_iters]
            + [f"{p.ms[ph]:.6g}" for ph in CURVE_PHASES]
            + [f"{p.cv[ph]:.5g}" for ph in CURVE_PHASES]
        )
    return out.getvalue()


def public_csv(rows: list[PublicRow]) -> str:
    """CSV text of public rows (the bundled ``public_training_rows.csv``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(PUBLIC_COLUMNS)
    for r in rows:
        writer.writerow([getattr(r, c) for c in PUBLIC_COLUMNS])
    return out.getvalue()


def _bundled_text(name: str) -> str:
    return _data_file(*CALIBRATION_DIR, name).read_text(encoding="utf-8")


def _curves_from_csv(text: str) -> tuple[CurvePoint, ...]:
    return tuple(
        CurvePoint(
            model=r["model"],
            batch=int(r["batch"]),
            n_iters=int(r["n_iters"]),
            ms={ph: float(r[f"{ph}_ms"]) for ph in CURVE_PHASES},
            cv={ph: float(r[f"{ph}_cv"]) for ph in CURVE_PHASES},
        )
        for r in csv.DictReader(io.StringIO(text))
    )


@cache
def bundled_released_curves() -> tuple[CurvePoint, ...]:
    """The bundled H200 curves measured by others (``h200_fp32_curves.csv``: 8 models, batch 1-1024)."""
    return _curves_from_csv(_bundled_text(H200_CSV))


@cache
def bundled_srifty_curves() -> tuple[CurvePoint, ...]:
    """The bundled curves of srifty's own H200 profiles (``h200_srifty_curves.csv``: 7 models, 4 batches each)."""
    return _curves_from_csv(_bundled_text(SRIFTY_H200_CSV))


def bundled_curves() -> tuple[CurvePoint, ...]:
    """Every bundled H200 curve: the released ones, then srifty's own profiles'."""
    return bundled_released_curves() + bundled_srifty_curves()


def curves_from_profiles(profiles: list[Profile]) -> list[CurvePoint]:
    """Curve points of profiles measured on a GPU: per probed batch, the mean forward, backward, step and
    iteration latency over its timed iterations, their coefficients of variation and how many there were.

    Raises:
        ProfileError: a profile that is an estimate, or was measured on a CPU.
    """
    points: list[CurvePoint] = []
    for p in profiles:
        if p.is_estimate or p.device.kind != "cuda":
            raise ProfileError(
                f"the profile of {p.model} was not measured on a GPU ({'an estimate' if p.is_estimate else 'a CPU'}); "
                "only `srifty profile --device cuda` profiles make curve points"
            )
        for sample in p.samples:
            ms = {ph: float(sample.mean_ms(ph)) for ph in CURVE_PHASES}
            cv = {ph: float(sample.std_ms(ph)) / ms[ph] if ms[ph] > 0 else 0.0 for ph in CURVE_PHASES}
            points.append(CurvePoint(p.model, int(sample.batch), int(p.timed_iters), ms, cv))
    return points


@cache
def bundled_public_rows() -> tuple[PublicRow, ...]:
    """The bundled public rows."""
    return tuple(
        PublicRow(
            workload=r["workload"],
            gpu=r["gpu"],
            reference_gpu=r["reference_gpu"],
            precision=r["precision"],
            arithmetic=r["arithmetic"],
            batch=int(r["batch"]),
            samples_per_s=float(r["samples_per_s"]),
            source_repo=r["source_repo"],
            path=r["path"],
            container=r["container"],
        )
        for r in csv.DictReader(io.StringIO(_bundled_text(PUBLIC_CSV)))
    )
