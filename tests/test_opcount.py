"""Per-op work counts on real tiny models, the profiler recording them, and `srifty profile estimate`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from srifty.compute import load_profile  # noqa: E402
from srifty.compute.measure import profile_model  # noqa: E402
from srifty.compute.measure.opcount import record_work  # noqa: E402
from srifty.compute.measure.profiler import ProfileOptions, _Trainer, work_batches  # noqa: E402
from srifty.compute.measure.workloads import build_workload  # noqa: E402
from srifty.compute.profile import PROFILE_SCHEMA_VERSION  # noqa: E402

FAST = {"warmup_iters": 1, "timed_iters": 2, "threads": 1, "peak_seconds": 0.05, "interference": False}
V1 = Path(__file__).parent / "data" / "tiny_mlp_schema1.json"


def trainer(name: str, **kwargs):  # type: ignore[no-untyped-def]
    t = _Trainer(build_workload(name, seq_len=16, **kwargs), ProfileOptions(threads=1))
    t.iteration(1)  # optimizer state exists, as in the profiler
    return t


def flop_counter_total(t, batch: int) -> int:  # type: ignore[no-untyped-def]
    inputs, target = t.batch(batch)
    with FlopCounterMode(display=False) as counter:
        t.optimizer.zero_grad(set_to_none=True)
        t.forward_loss(inputs, target).backward()
        t.optimizer.step()
    return int(counter.get_total_flops())


def test_op_flops_match_flop_counter_mode_and_grow_with_the_batch() -> None:
    t = trainer("srifty.compute.zoo:tiny_cnn")
    work = record_work(t, (2, 4))
    assert work.has_times and work.timing_method == "perf_counter"
    total_at_4 = sum(work.total_flops(ph, 4) for ph in ("fw", "bw", "step"))
    assert total_at_4 == pytest.approx(flop_counter_total(t, 4), rel=1e-12)
    assert work.total_flops("fw", 4) == pytest.approx(2 * work.total_flops("fw", 2))
    assert work.total_flops("fw", 2) > 0 and work.total_flops("bw", 2) > work.total_flops("fw", 2)
    convs = [r for r in work.records if r.op == "aten.convolution.default"]
    assert len(convs) == 2 and all(r.scope.startswith("Sequential.") for r in convs)


def test_grouped_convolution_backward_costs_twice_its_forward_and_is_marked() -> None:
    """torch's formula counts a grouped convolution's weight gradient as dense (33x the forward at 32 groups)."""
    from srifty.compute.measure.opcount import OpRecorder

    for groups, variant in ((1, ""), (4, "grouped"), (32, "depthwise")):
        conv = torch.nn.Conv2d(32, 32, 3, padding=1, groups=groups)
        x = torch.randn(2, 32, 16, 16, requires_grad=True)
        with OpRecorder(is_cuda=False) as recorder:
            out = conv(x)
            recorder.phase = "bw"
            out.sum().backward()
        fw, bw = (o for o in recorder.ops if "convolution" in o.op)
        assert bw.flops == pytest.approx(2 * fw.flops)
        assert fw.variant == bw.variant == variant


def test_the_step_moves_parameters_gradients_and_momentum_and_does_not_grow() -> None:
    t = trainer("srifty.compute.zoo:tiny_mlp")
    work = record_work(t, (2, 8))
    param_bytes = sum(p.numel() * p.element_size() for p in t.model.parameters())
    step = work.select("step")
    assert all(r.flops == (0.0, 0.0) for r in step)
    assert work.total_bytes("step", 2) == pytest.approx(work.total_bytes("step", 1000))
    # SGD with momentum reads the gradient, momentum and parameter and writes momentum and parameter.
    assert 4 * param_bytes <= work.total_bytes("step", 8) <= 12 * param_bytes


class Attention(torch.nn.Module):
    """One self-attention layer through torch's fused SDPA (no dropout, so the CPU uses its flash kernel)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(32, 96)

    def forward(self, x):  # type: ignore[no-untyped-def]
        q, k, v = self.qkv(x).view(x.shape[0], x.shape[1], 3, 4, 8).permute(2, 0, 3, 1, 4)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v).sum()


def test_cpu_attention_flops_are_counted_with_torchs_sdpa_formulas() -> None:
    from srifty.compute.measure.workloads import Workload

    workload = Workload(
        "attention", "factory", Attention(), lambda b: (torch.randn(b, 16, 32), None), lambda out, _: out, "16x32"
    )
    t = _Trainer(workload, ProfileOptions(threads=1))
    t.iteration(1)
    work = record_work(t, (2, 4))
    attention = [r for r in work.records if "flash_attention_for_cpu" in r.op]
    assert {r.phase for r in attention} == {"fw", "bw"} and all(r.flops[1] > 0 for r in attention)
    ours = sum(work.total_flops(ph, 4) for ph in ("fw", "bw", "step"))
    extra = sum(r.flops[1] for r in attention)
    assert ours == pytest.approx(flop_counter_total(t, 4) + extra, rel=1e-12)
    # torch's own formula: 4·b·h·s²·d forward (two matmuls), 2.5× that backward.
    fw = next(r for r in attention if r.phase == "fw")
    assert fw.flops[1] == 4 * 4 * 4 * 16 * 16 * 8


def test_work_batches_span_a_factor_of_two() -> None:
    assert work_batches([1, 2, 8, 16]) == (8, 16)
    assert work_batches([1, 4, 6]) == (1, 6)
    assert work_batches([1]) == (1, 1)


@pytest.fixture(scope="module")
def cnn_profile(tmp_path_factory):  # type: ignore[no-untyped-def]
    p = profile_model("srifty.compute.zoo:tiny_cnn", ProfileOptions(max_batch_cap=16, max_probes=3, **FAST))
    return p, p.save(tmp_path_factory.mktemp("p") / "cnn.json")


def test_profiler_records_op_counts_and_device_ceilings(cnn_profile) -> None:  # type: ignore[no-untyped-def]
    p, path = cnn_profile
    assert p.work is not None and p.work.has_times and p.work.batches == (8, 16)
    assert p.device.peak_flops_per_s and p.device.peak_flops_per_s > 1e9
    assert p.device.mem_bw_bytes_per_s and p.device.mem_bw_bytes_per_s > 1e8
    assert p.device.peaks_source and p.device.peaks_source.startswith("measured")
    assert json.loads(path.read_text())["schema_version"] == PROFILE_SCHEMA_VERSION and load_profile(path) == p
    off = profile_model(
        "srifty.compute.zoo:tiny_mlp", ProfileOptions(max_batch_cap=4, max_probes=2, count_ops=False, **FAST)
    )
    assert off.work is None and off.device.peak_flops_per_s is None


def test_cli_estimate_writes_marked_estimates(cli, cnn_profile, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, path = cnn_profile
    code, stdout, _ = cli("profile", "estimate", str(path), "--gpu", "T4,v100,A10G", "--out", str(tmp_path))
    assert code == 0 and "ESTIMATED profiles" in stdout and "not measurements" in stdout
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"srifty.compute.zoo-tiny_cnn__{g}.estimated.json" for g in ("A10G", "T4", "V100")]
    est = load_profile(tmp_path / files[1])
    assert est.estimated_from == "cpu" and est.device.gpu == "T4" and est.samples == ()
    assert "--device cuda" in stdout and "on a VM with a T4 GPU" in stdout
    code, stdout, _ = cli("profile", "show", str(tmp_path / files[1]))
    assert code == 0 and "ESTIMATE (calibrated) from cpu" in stdout and "ESTIMATED latency model" in stdout
    assert "expected error" in stdout and "numeric settings" in stdout
    code, stdout, _ = cli("profile", "estimate", str(path), "--gpu", "T4", "--out", str(tmp_path), "--method", "paleo")
    assert code == 0 and (tmp_path / "srifty.compute.zoo-tiny_cnn__T4.paleo.json").is_file()


def test_cli_estimate_errors_are_clear(cli, cnn_profile, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, path = cnn_profile
    code, _, err = cli("profile", "estimate", str(path), "--gpu", "T4,T5", "--out", str(tmp_path))
    assert code == 2 and "Did you mean 'T4'" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # names are checked before anything is written
    code, _, err = cli("profile", "estimate", str(V1), "--gpu", "T4", "--out", str(tmp_path))
    assert code == 2 and "no per-op work counts" in err and "Traceback" not in err
    code, _, err = cli("profile", "estimate", str(path), "--gpu", "T4", "--method", "magic")
    assert code == 2 and "unknown --method" in err


def test_importing_srifty_compute_does_not_import_torch() -> None:
    code = (
        "import sys, srifty.compute, srifty.compute.estimate, srifty.plan.methods.paleo; print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
