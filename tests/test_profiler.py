"""The profiler on real tiny models: end to end, the CLI, max-batch search, timeline."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from srifty.compute import load_profile  # noqa: E402
from srifty.compute.measure import profile_model  # noqa: E402
from srifty.compute.measure.profiler import ProfileOptions  # noqa: E402
from srifty.compute.memory import find_max_batch  # noqa: E402
from srifty.errors import ProfileError  # noqa: E402

FAST = {"warmup_iters": 1, "timed_iters": 2, "threads": 1, "interference": False}


@pytest.fixture(scope="module")
def tiny_profile():  # type: ignore[no-untyped-def]
    options = ProfileOptions(max_batch_cap=16, **{**FAST, "interference": True, "interference_reps": 2})
    return profile_model("srifty.compute.zoo:tiny_cnn", options)


def test_profile_end_to_end(tiny_profile, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    p = tiny_profile
    assert p.max_batch == 16 and p.max_batch_limited_by == "max_batch_cap"
    assert len(p.samples) == 4 and {1, 8, 16} <= {s.batch for s in p.samples}
    assert all(len(s.iter_ms) == 2 for s in p.samples)
    for phase in ("fw", "bw", "step", "iter"):
        preds = p.predict_ms(phase, [1, 4, 16])
        assert (preds > 0).all()
    assert p.device.kind == "cpu" and p.timing_method == "perf_counter"
    assert p.memory.per_sample_bytes > 0 and len(p.memory_points) >= 2
    # The classifier's gradients are ready before the first convolution's.
    names = [q.name for q in p.params]
    first_ready = names[p.ready_order[0]]
    assert first_ready.startswith("8.") and names[p.ready_order[-1]].startswith("0.")
    assert all(0.0 <= q.ready_frac <= 1.0 for q in p.params)
    assert sum(b.size_bytes for b in p.buckets) == p.param_bytes
    path = p.save(tmp_path / "p.json")
    assert load_profile(path) == p


def test_the_profile_measures_interference_with_a_loopback_peer(tiny_profile) -> None:  # type: ignore[no-untyped-def]
    m = tiny_profile.interference
    assert m is not None and len(m.repetitions) == 2 and m.batch in {s.batch for s in tiny_profile.samples}
    assert m.bucket_bytes == tuple(b.size_bytes for b in tiny_profile.buckets)
    assert m.bwd_slowdown.low >= 1.0 and m.comm_slowdown.low >= 1.0
    assert all(r.comm_alone_cores > 0 and r.ddp_end_ms >= r.ddp_bwd_ms for r in m.repetitions)
    assert m.factors().bwd_slowdown == m.bwd_slowdown.median
    assert m.peer  # where the peer ran: outside a quota, or why not


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (runs where one is lent)")
def test_on_a_gpu_the_profile_measures_a_host_staged_gloo_exchange() -> None:
    options = ProfileOptions(device="cuda", max_batch_cap=8, **{**FAST, "interference": True, "interference_reps": 1})
    p = profile_model("srifty.compute.zoo:tiny_cnn", options)
    m = p.interference
    assert p.device.kind == "cuda" and m is not None and len(m.repetitions) == 1
    assert "pinned host memory" in m.method and "not NCCL" in m.method
    assert all(r.ddp_end_ms >= r.ddp_bwd_ms > 0 for r in m.repetitions)


def test_memory_limit_bounds_the_batch() -> None:
    roomy = profile_model("srifty.compute.zoo:tiny_cnn", ProfileOptions(max_batch_cap=64, max_probes=2, **FAST))
    budget = int(roomy.memory.peak_bytes(6))
    tight = profile_model(
        "srifty.compute.zoo:tiny_cnn",
        ProfileOptions(max_batch_cap=64, max_probes=2, memory_limit_bytes=budget, **FAST),
    )
    assert tight.max_batch_limited_by == "memory_limit"
    assert 2 <= tight.max_batch < 16
    assert all(peak <= budget for b, peak in tight.memory_points if b <= tight.max_batch)


@given(limit=st.integers(1, 5000), cap=st.integers(1, 5000))
def test_find_max_batch_is_exact(limit: int, cap: int) -> None:
    calls: list[int] = []

    def fits(b: int) -> bool:
        calls.append(b)
        return b <= limit

    assert find_max_batch(fits, cap) == min(limit, cap)
    assert len(calls) <= 2 * max(cap, 2).bit_length() + 2


def test_nothing_fits_is_a_clear_error() -> None:
    with pytest.raises(ProfileError, match="not even a batch of 1"):
        find_max_batch(lambda b: False, 8)


def test_huggingface_config_model_profiles() -> None:
    p = profile_model("hf:bert-tiny", ProfileOptions(max_batch_cap=4, max_probes=2, seq_len=16, **FAST))
    assert p.model == "hf:bert-tiny" and p.n_params > 1_000_000
    assert "16 tokens" in p.input_description


def test_bad_requests_are_clear() -> None:
    with pytest.raises(ProfileError, match="Did you mean 'resnet50'"):
        profile_model("resnet51", ProfileOptions(**FAST))
    if not torch.cuda.is_available():
        with pytest.raises(ProfileError, match="no CUDA GPU"):
            profile_model("resnet18", ProfileOptions(device="cuda", **FAST))
    with pytest.raises(ProfileError, match="cannot import"):
        profile_model("no_such_pkg.mod:f", ProfileOptions(**FAST))
    # At 32 pixels resnet18's last feature map is 1x1: batch normalisation cannot train on one sample.
    with pytest.raises(
        ProfileError, match=r"could not train on a batch of 1 \(3x32x32 image\): ValueError.*--image-size"
    ):
        profile_model("resnet18", ProfileOptions(image_size=32, **FAST))


def test_cli_profile_and_show(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "tiny.json"
    code, stdout, _ = cli(
        "profile",
        "--model",
        "srifty.compute.zoo:tiny_mlp",
        "--max-batch",
        "8",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--threads",
        "1",
        "--no-interference",
        "--out",
        str(out),
    )
    assert code == 0 and out.is_file() and f"wrote {out}" in stdout
    code, stdout, _ = cli("profile", "show", str(out))
    assert code == 0 and "fitted latency model" in stdout and "tiny_mlp" in stdout
    assert "perfect overlap" in stdout  # no interference measured: the simulator's fallback is named


def test_cli_errors(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("profile", "--model", "resnet51")
    assert code == 2 and "Did you mean" in err and "Traceback" not in err
    code, _, err = cli("profile", "--model", "resnet18", "--memory-limit", "lots")
    assert code == 2 and "not a size" in err
    code, _, err = cli("profile", "show", str(tmp_path / "none.json"))
    assert code == 2 and "does not exist" in err
    code, _, err = cli("profile")
    assert code == 2 and "--model" in err


BARE = """
from torch import nn


def classifier():
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 10))


def tokens():
    return nn.Sequential(nn.Embedding(50, 4), nn.Flatten(), nn.Linear(4 * 6, 3))
"""


def test_a_factory_returning_a_bare_module_profiles_with_input_shape(cli, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "bare_models.py").write_text(BARE)
    monkeypatch.syspath_prepend(str(tmp_path))
    common = ("--max-batch", "4", "--iters", "2", "--warmup", "1", "--no-op-counts", "--threads", "1")
    code, _, err = cli("profile", "--model", "bare_models:classifier", *common, "--out", str(tmp_path / "x.json"))
    assert code == 2 and "returns a bare nn.Module" in err and "--input-shape" in err
    code, _, err = cli(
        "profile",
        "--model",
        "bare_models:classifier",
        "--input-shape",
        "3x8x8",
        *common,
        "--out",
        str(tmp_path / "c.json"),
    )
    assert code == 0, err
    assert load_profile(tmp_path / "c.json").input_description == "3x8x8 float32"
    code, _, err = cli(
        "profile", "--model", "bare_models:tokens", "--input-shape", "6", "--input-vocab", "50", *common,
        "--out", str(tmp_path / "t.json"),
    )  # fmt: skip
    assert code == 0, err
    code, _, err = cli("profile", "--model", "bare_models:classifier", "--input-shape", "3x9x9", *common)
    assert code == 2 and "cannot take inputs of shape (batch, 3, 9, 9)" in " ".join(err.split())


class _PlateauTrainer:
    """A stand-in for the profiler's trainer whose checkpointed peaks are one process's: at the turn a line in
    the batch, in the blocks' backward the larger of the end-of-backward plateau and another line
    (``out_of_memory_at``: batches that raise a CUDA out-of-memory error)."""

    def __init__(
        self,
        plateau: float,
        blocks: tuple[float, float],
        turn: tuple[float, float] = (10_000.0, 3_000.0),
        out_of_memory_at: int | None = None,
    ) -> None:
        self.model = torch.nn.Module()
        self.model.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)])
        self.workload = type("W", (), {"name": "plateau"})()
        self.plateau, self.blocks, self.turn, self.out_of_memory_at = plateau, blocks, turn, out_of_memory_at
        self.measured: list[int] = []
        self.released = 0

    def iteration(self, batch: int) -> tuple[float, float, float, float]:
        return 1.0, 2.0, 0.5, 3.5

    def checkpointed_walk_peaks(self, batch: int, blocks: list[torch.nn.Module]) -> tuple[float, float, list[float]]:
        assert blocks[-1] is self.model.layers[1]  # the first block backward runs
        if self.out_of_memory_at is not None and batch >= self.out_of_memory_at:
            raise torch.OutOfMemoryError("CUDA out of memory")
        self.measured.append(batch)
        walk = max(self.plateau * 1.001, self.blocks[0] + self.blocks[1] * batch)
        return self.turn[0] + self.turn[1] * batch, walk, []  # no block's own stretch: the walk's one line

    def release(self) -> None:
        self.released += 1


def _checkpointed(trainer: _PlateauTrainer, ceiling: float | None) -> dict:  # type: ignore[type-arg]
    from srifty.compute.measure.profiler import measure_checkpointing
    from srifty.compute.profile import ParamInfo

    params = tuple(ParamInfo(f"layers.{i}.w", 1000, 4000, "float32", 0.5) for i in range(2))
    plain = {1: 100_000.0, 2: 120_000.0}  # the plain line: 80 kB + 20 kB a sample
    options = ProfileOptions(optimizer="adam", warmup_iters=1, timed_iters=1)
    return measure_checkpointing(trainer, params, [1, 2], options, plain, ceiling)  # type: ignore[arg-type]


def test_checkpointed_memory_is_probed_at_larger_batches_until_two_peaks_leave_the_plateau() -> None:
    plateau = 2 * 8000.0 + 8 * 2000.0  # 2·P·p + P·o: 2,000 parameters, Adam
    # the blocks' backward: 25 kB + 1 kB a sample, under the plateau up to batch 7; the turn 10 kB + 3 kB
    trainer = _PlateauTrainer(plateau, (25_000.0, 1_000.0))
    extra = _checkpointed(trainer, ceiling=None)
    assert [b for b, _ in extra["checkpointed_blocks_memory_points"]] == [1, 2, 4, 8, 16]
    assert extra["checkpointed_per_sample_bytes"] == pytest.approx(1_000.0)  # from batches 8 and 16 only
    assert extra["checkpointed_turn_per_sample_bytes"] == pytest.approx(3_000.0)  # every batch: no plateau
    # the whole forward-and-backward peak, as before the moments were measured apart
    assert extra["checkpointed_forward_memory_points"][-1] == [16, 10_000.0 + 3_000.0 * 16]
    assert extra["checkpointing_batch"] == 2 and trainer.released == 0


def test_checkpointed_probes_stop_at_the_memory_ceiling_or_out_of_memory_and_fall_back() -> None:
    plateau = 32_000.0
    # every blocks' peak on the plateau: three doublings at most, then the line through every point
    trainer = _PlateauTrainer(plateau, (0.0, 1_000.0))
    extra = _checkpointed(trainer, ceiling=None)
    assert trainer.measured == [1, 2, 4, 8, 16]
    assert extra["checkpointed_per_sample_bytes"] == pytest.approx(0.0)  # the plateau's flat line
    # the plain line (80 kB + 20 kB a sample) is 240 kB at batch 8, 400 kB at 16: over a 250 kB ceiling
    ceiling = _PlateauTrainer(plateau, (0.0, 1_000.0))
    _checkpointed(ceiling, ceiling=250_000.0)
    assert ceiling.measured == [1, 2, 4, 8]
    oom = _PlateauTrainer(plateau, (25_000.0, 1_000.0), out_of_memory_at=8)
    extra = _checkpointed(oom, ceiling=None)
    assert oom.measured == [1, 2, 4] and oom.released == 1
    assert [b for b, _ in extra["checkpointed_turn_memory_points"]] == [1, 2, 4]


def test_the_checkpointed_peak_is_split_where_backward_reaches_the_last_block() -> None:
    from torch.distributed._composable import checkpoint

    from srifty.compute.measure.memevents import allocator_phase_peaks, mark
    from srifty.compute.measure.profiler import _Trainer
    from srifty.compute.measure.workloads import build_workload

    kept: list[torch.Tensor] = []

    def phase() -> None:
        kept.append(torch.ones(2**18))  # 1 MiB
        mark()
        kept.append(torch.ones(3 * 2**18))  # 3 MiB more
        kept.clear()

    peaks = allocator_phase_peaks({"run": phase})
    assert peaks["run.before_mark"] == pytest.approx(2**20, rel=0.01)
    assert peaks["run.after_mark"] == peaks["run"] == pytest.approx(4 * 2**20, rel=0.01)
    assert peaks["run.mark0"] == peaks["run.after_mark"]  # one mark: its stretch runs to the end

    def two_marks() -> None:
        kept.append(torch.ones(2**18))
        mark()
        kept.append(torch.ones(3 * 2**18))
        kept.clear()
        mark()
        kept.append(torch.ones(2 * 2**18))
        kept.clear()

    split = allocator_phase_peaks({"run": two_marks})
    assert split["run.mark0"] == pytest.approx(4 * 2**20, rel=0.01)
    assert split["run.mark1"] == pytest.approx(2 * 2**20, rel=0.01)
    assert set(allocator_phase_peaks({"quiet": lambda: None})) == {"quiet"}  # no mark: no split

    trainer = _Trainer(build_workload("srifty.compute.zoo:tiny_decoder"), ProfileOptions(threads=1))
    trainer.iteration(1)
    for i in range(4):
        checkpoint(trainer.model.get_submodule(f"layers.{i}"))
    modules = [trainer.model.get_submodule(f"layers.{i}") for i in range(4)]
    turn, blocks, walk = trainer.checkpointed_walk_peaks(2, modules)
    assert 0 < turn < blocks and max(turn, blocks) == trainer.phase_peaks(2)[0]
    # every block's own stretch of the walk: four peaks in model order, the highest the walk's own
    assert len(walk) == 4 and all(v > 0 for v in walk)
    assert max(walk) == pytest.approx(blocks, rel=0.02)
