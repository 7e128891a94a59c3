"""Matrix-product shapes: what the op recorder notes, how op work carries them, and how the GPU model prices
tiles and waves from them (issue 27)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.catalog import load_catalog
from srifty.compute import NumericSettings
from srifty.compute.gemm import TILES, tile_occupancy
from srifty.compute.gpu_model import (
    UNSHAPED_TILE_EFFICIENCY,
    GpuModelParams,
    predict_ms,
    tile_efficiency,
    tile_terms,
    work_features,
)
from srifty.compute.work import GROUPED_CONV_FIX, OpRecord, OpWork

SPECS = load_catalog().gpu_specs
PRIOR = GpuModelParams.prior()


def test_the_recorder_notes_every_products_shape_and_they_account_for_its_flops() -> None:
    """Convolutions (strided, grouped, transposed), their backward, linear layers and bmm: per record,
    ``2·m·n·k·problems·count`` equals the counted FLOPs at both batches."""
    torch = pytest.importorskip("torch")
    from srifty.compute.measure.opcount import merge_records, record_iteration

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
            self.grouped = torch.nn.Conv2d(16, 32, 3, padding=1, groups=4)
            self.up = torch.nn.ConvTranspose2d(32, 8, 2, stride=2)
            self.head = torch.nn.Linear(8 * 32 * 32, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.up(self.grouped(self.conv(x)))
            attention = torch.bmm(y.flatten(2), y.flatten(2).transpose(1, 2))  # (N, 8, 8)
            return self.head(y.flatten(1)) + attention.sum(dim=(1, 2))[:, None]

    class Steps:
        def __init__(self) -> None:
            self.model = Net()
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
            self.is_cuda = False
            self.device = torch.device("cpu")

        def batch(self, size: int) -> tuple[torch.Tensor, torch.Tensor]:
            return torch.randn(size, 3, 32, 32), torch.zeros(size, dtype=torch.long)

        def forward_loss(self, inputs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.cross_entropy(self.model(inputs), target)

    steps = Steps()
    records = merge_records(record_iteration(steps, 2), record_iteration(steps, 4))
    work = OpWork((2, 4), records, "perf_counter")
    shaped = [r for r in records if r.gemms]
    assert {r.op.split(".")[1] for r in shaped} >= {"convolution", "convolution_backward", "bmm", "addmm"}
    assert all(r.flops[1] > 0 for r in shaped)
    for record in records:
        if record.flops[1] > 0 and record.phase != "step":
            assert record.gemms, f"{record.op} counts FLOPs but no shape"
        if not record.gemms:
            continue
        dims = work.gemms_at(record, [2, 4])
        from_shapes = 2 * dims.prod(axis=1).sum(axis=0) * record.count
        assert from_shapes == pytest.approx(work.flops_at([record], [2, 4])[0], rel=1e-9), record.op
    assert OpWork.from_dict(work.to_dict()) == work and work.gemms_recorded


def test_op_work_without_shapes_still_loads_and_says_so() -> None:
    record = OpRecord("fw", "aten.mm.default", "", "float32", 1, (1e6, 2e6), (1e4, 2e4), None)
    data = OpWork((1, 2), (record,), "perf_counter").to_dict()
    del data["columns"]["gemms"]
    work = OpWork.from_dict(data)
    assert work.records[0].gemms == () and not work.gemms_recorded
    features = work_features(work, [1.0, 8.0], SPECS["H200"], NumericSettings())
    assert any("typical tile efficiency" in a for a in features.assumptions)
    assert tile_efficiency(features.phases["fw"], PRIOR) == pytest.approx(UNSHAPED_TILE_EFFICIENCY)


def test_classes_never_priced_by_shape_carry_no_tile_factor() -> None:
    """A grouped convolution has no recorded products in any profile: its ``eta`` alone prices it, so its
    tile efficiency is 1, in a shaped profile beside a shaped convolution as well as in an unshaped one;
    only a convolution or matrix product without its shape takes the typical factor."""
    dims = [(3136.0 * b, 64.0, 576.0, 1.0) for b in (1, 2)]
    flops = tuple(2.0 * np.prod(d) for d in dims)
    shaped = OpRecord(
        "fw", "aten.convolution.default", "", "float32", 1, flops, (1e6, 2e6), None, gemms=((dims[0], dims[1]),)
    )
    grouped = OpRecord("fw", "aten.convolution.default", "", "float32", 1, flops, (1e6, 2e6), None, "depthwise")
    bare = OpRecord("fw", "aten.convolution.default", "", "float32", 1, flops, (1e6, 2e6), None)
    for records, expected in (
        ((shaped, grouped), [None, 1.0]),
        ((grouped, bare), [1.0, UNSHAPED_TILE_EFFICIENCY]),
    ):
        work = OpWork((1, 2), records, "perf_counter", flop_formulas=GROUPED_CONV_FIX)
        features = work_features(work, [64.0], SPECS["H200"], NumericSettings())
        efficiency = tile_efficiency(features.phases["fw"], PRIOR)[:, 0]
        assert features.phases["fw"].flop_keys[records.index(grouped)] == "eta.conv_grouped"
        for got, want in zip(efficiency, expected, strict=True):
            if want is None:
                assert 0 < got < 1
            else:
                assert got == pytest.approx(want)


def test_a_product_one_batch_could_not_place_is_kept_as_recorded() -> None:
    dims = ((100.0, 64.0, 32.0, 1.0), (100.0, 64.0, 32.0, 1.0))
    record = OpRecord("fw", "aten.mm.default", "", "float32", 1, (4e5, 4e5), (1.0, 1.0), None, gemms=(dims,))
    work = OpWork((1, 1), (record,), "perf_counter")
    assert work.gemms_at(record, [1, 64])[0, :, 1].tolist() == [100.0, 64.0, 32.0, 1.0]


def test_padding_and_waves_follow_the_tile_arithmetic() -> None:
    big_tile = TILES.index((128, 128))
    dims = np.array(
        [
            [[64.0], [64.0], [4096.0], [1.0]],  # a quarter of one 128x128 tile, 131 SMs idle
            [[128.0 * 133], [128.0], [4096.0], [1.0]],  # 133 full tiles on 132 SMs: two waves
            [[128.0 * 66], [128.0], [64.0], [2.0]],  # two problems of 66 tiles: exactly one wave
        ]
    )
    occupancy, k_per_block = tile_occupancy(dims, sm_count=132)
    assert np.array_equal(k_per_block[big_tile], dims[:, 2])  # never split along k by default
    assert occupancy[big_tile, 0, 0] == pytest.approx(0.25 / 132)
    assert occupancy[big_tile, 1, 0] == pytest.approx(133 / 264)
    assert occupancy[big_tile, 2, 0] == pytest.approx(1.0)
    no_sms, _ = tile_occupancy(dims, sm_count=None)
    assert no_sms[big_tile, 1, 0] == pytest.approx(1.0) and no_sms[big_tile, 0, 0] == pytest.approx(0.25)


def _conv_work(c_in: float, c_out: float, kernel: float, pixels: float) -> OpWork:
    """One forward convolution on ``pixels`` output pixels per sample, recorded at batches 1 and 2."""
    dims = [(pixels * b, c_out, c_in * kernel, 1.0) for b in (1, 2)]
    flops = tuple(2.0 * np.prod(d) for d in dims)
    moved = tuple(4.0 * (d[0] * (c_in + c_out)) for d in dims)
    record = OpRecord(
        "fw", "aten.convolution.default", "", "float32", 1, flops, moved, None, gemms=((dims[0], dims[1]),)
    )
    return OpWork((1, 2), (record,), "perf_counter")


def test_a_thin_layer_runs_at_a_lower_fraction_of_the_peak_than_a_wide_one() -> None:
    """A 64-channel 1x1 convolution fills fewer tile columns and runs fewer k steps per tile than a
    512-channel 3x3 one: lower tile efficiency, so more time per FLOP."""
    h200, settings = SPECS["H200"], NumericSettings()
    thin = work_features(_conv_work(64, 64, 1, 56 * 56), [256.0], h200, settings)
    wide = work_features(_conv_work(512, 512, 9, 14 * 14), [256.0], h200, settings)
    e_thin = tile_efficiency(thin.phases["fw"], PRIOR)[0, 0]
    e_wide = tile_efficiency(wide.phases["fw"], PRIOR)[0, 0]
    assert 0 < e_thin < e_wide <= 1


def test_a_small_tile_moves_more_operand_bytes_per_flop() -> None:
    """The best tile for 64 output channels is at most 64 wide, for 512 it is 128 or more: per FLOP the
    thin layer loads its operands more often (traffic factor = the tile's edge over a 128x128 tile's), so
    its operand traffic term is larger, at equal FLOPs; a record without shapes stays at the reference."""
    h200, settings = SPECS["H200"], NumericSettings()
    thin = work_features(_conv_work(512, 64, 9, 56 * 56), [256.0], h200, settings).phases["fw"]
    wide = work_features(_conv_work(64, 512, 9, 56 * 56), [256.0], h200, settings).phases["fw"]
    assert thin.flop_s[0, 0] == pytest.approx(wide.flop_s[0, 0])
    thin_traffic = tile_terms(thin, PRIOR)[1][0, 0]
    wide_traffic = tile_terms(wide, PRIOR)[1][0, 0]
    assert wide_traffic <= 1.0 < 1.5 <= thin_traffic
    bare = OpRecord("fw", "aten.mm.default", "", "float32", 1, (1e9, 2e9), (1e6, 2e6), None)
    unshaped = work_features(OpWork((1, 2), (bare,), "perf_counter"), [2.0], h200, settings).phases["fw"]
    assert tile_terms(unshaped, PRIOR)[1] == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 100_000),
    n=st.integers(1, 4096),
    k=st.integers(1, 100_000),
    problems=st.integers(1, 64),
    sms=st.sampled_from([None, 40, 108, 132]),
)
def test_tile_occupancy_is_a_fraction(m: int, n: int, k: int, problems: int, sms: int | None) -> None:
    dims = np.array([[[m], [n], [k], [problems]]], dtype=float)
    for split_k_min in (None, 256.0):
        occupancy, k_per_block = tile_occupancy(dims, sms, split_k_min)
        assert np.all(occupancy > 0) and np.all(occupancy <= 1 + 1e-12)
        assert np.all(k_per_block <= k) and np.all(k_per_block > 0)


def test_split_k_fills_the_sms_with_a_weight_gradient() -> None:
    """A weight gradient (64 x 576 output, k = 256·56·56) has 5 tiles of 128x128 for 132 SMs; split along k
    into 26 blocks of at least 256 k steps each it fills 130 of them (the rejected split-K variant)."""
    big_tile = TILES.index((128, 128))
    dims = np.array([[[64.0], [576.0], [256.0 * 56 * 56], [1.0]]])
    plain, _ = tile_occupancy(dims, sm_count=132)
    split, k_per_block = tile_occupancy(dims, sm_count=132, split_k_min=256.0)
    assert plain[big_tile, 0, 0] == pytest.approx(0.5 * 0.9 * 5 / 132)
    assert split[big_tile, 0, 0] == pytest.approx(0.5 * 0.9 * 130 / 132)
    assert k_per_block[big_tile, 0, 0] == pytest.approx(256.0 * 56 * 56 / 26)


def test_one_tile_past_a_full_wave_costs_part_of_another_wave() -> None:
    """On the H200 (132 SMs), 133 tiles' worth of 256x128 output takes clearly longer per FLOP than 132: a
    wave-quantised step (softened by a smaller tile, as a library's heuristic would pick), which FLOPs alone
    (1% more) cannot show."""
    h200 = SPECS["H200"]

    def fw_ms(tiles: int) -> float:
        dims = (256.0 * tiles, 128.0, 8192.0, 1.0)
        flops = 2.0 * 256 * tiles * 128 * 8192
        record = OpRecord(
            "fw", "aten.mm.default", "", "float32", 1, (flops, flops), (1e6, 1e6), None, gemms=((dims, dims),)
        )
        work = OpWork((1, 1), (record,), "perf_counter")
        return float(predict_ms(work_features(work, [1.0], h200, NumericSettings()), PRIOR)["fw"][0])

    assert fw_ms(133) / 133 > 1.1 * fw_ms(132) / 132


def test_a_simt_product_is_priced_by_occupancy_alone_and_split_along_k() -> None:
    """FP32 on the V100 runs on SIMT cores: a thin layer's tile efficiency does not move with the tile's fixed
    cost (``tile.k_half``), unlike the same layer in TF32 on the H200's tensor cores."""
    settings = NumericSettings()
    thin = _conv_work(64, 64, 1, 56 * 56)
    cheap = GpuModelParams({**PRIOR.values, "tile.k_half": 1.0})
    dear = GpuModelParams({**PRIOR.values, "tile.k_half": 1000.0})
    v100 = work_features(thin, [256.0], SPECS["V100"], settings).phases["fw"]
    h200 = work_features(thin, [256.0], SPECS["H200"], settings).phases["fw"]
    assert v100.gemm_simt.all() and not h200.gemm_simt.any()
    assert tile_efficiency(v100, cheap)[0, 0] == pytest.approx(tile_efficiency(v100, dear)[0, 0])
    assert tile_efficiency(h200, dear)[0, 0] < 0.5 * tile_efficiency(h200, cheap)[0, 0]
