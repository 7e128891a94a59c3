"""A probed allocation's bus bandwidth (srifty.sim.allocation) and ``srifty simulate --allocation-probes``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from srifty.errors import SriftyError
from srifty.sim import AllocationModel, SimOptions, Simulator, probe_allocation
from srifty.sim.netquery import SPREAD_LEVELS, bus_cap_bytes_per_s
from srifty.vocab import make_config
from tests.factories import ConstantBusBandwidth, instance, synthetic_profile

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class PeakedCurve:
    """A learned-looking curve: 1 GB/s, but 2 GB/s at 128 KiB (where a token bucket lets bursts through)."""

    def predict_busbw_bytes_per_s(self, frame) -> np.ndarray:  # type: ignore[no-untyped-def]
        sizes = np.asarray(frame["size_bytes"], dtype=float)
        return np.where(sizes == 2.0**17, 2e9, 1e9)


def probe_rows(busbw_by_size: dict[float, list[float]], world: int = 2, **extra: object) -> pd.DataFrame:
    rows = [
        {"size_bytes": size, "busbw_bytes_per_s": b, "world_size": world, "n_nodes": world, **extra}
        for size, values in busbw_by_size.items()
        for b in values
    ]
    return pd.DataFrame(rows)


def test_level_is_the_median_log_ratio_and_the_ceiling_the_largest_median() -> None:
    probes = probe_rows({2**20: [0.5e9, 0.6e9, 0.7e9], 2**22: [0.8e9, 0.8e9, 0.8e9], 2**24: [0.75e9] * 3})
    probed = probe_allocation(ConstantBusBandwidth(1e9), probes, [instance()])
    assert probed.level == pytest.approx(0.75)  # medians 0.6, 0.8, 0.75 against 1.0
    assert probed.saturated_busbw_bytes_per_s == pytest.approx(0.8e9)
    assert probed.rows == 9 and probed.sizes_bytes == (2.0**20, 2.0**22, 2.0**24)
    assert probed.world_size == 2 and probed.n_nodes == 2
    assert len(probed.spread_log) == len(SPREAD_LEVELS)
    # the repeats around their size's median: from log(0.5/0.6) to log(0.7/0.6), most of them 0
    assert math.log(0.5 / 0.6) <= probed.spread_log[0] < -0.1
    assert 0.1 < probed.spread_log[-1] <= math.log(0.7 / 0.6)
    assert probed.spread_log[SPREAD_LEVELS.index(0.5)] == 0.0
    assert "x0.75" in probed.summary() and "9 rows" in probed.summary()


def test_rows_below_the_mtu_other_collectives_and_concurrency_are_left_out() -> None:
    probes = pd.concat(
        [
            probe_rows({2**20: [0.5e9]}, collective="allreduce", n_concurrent=1),
            probe_rows({4096: [1e6]}, collective="allreduce", n_concurrent=1),
            probe_rows({2**20: [5e9]}, collective="all_gather", n_concurrent=1),
            probe_rows({2**20: [0.1e9]}, collective="allreduce", n_concurrent=4),
        ],
        ignore_index=True,
    )
    probed = probe_allocation(ConstantBusBandwidth(1e9), probes, [instance()])
    assert probed.rows == 1 and probed.level == pytest.approx(0.5)
    assert probed.spread_log == (0.0,) * len(SPREAD_LEVELS)  # one repeat: no spread of its own


def test_the_model_scales_by_the_level_and_never_exceeds_the_saturated_bandwidth() -> None:
    probes = probe_rows({2**20: [1.2e9] * 3, 2**24: [1.2e9] * 3})
    model = AllocationModel(PeakedCurve(), probe_allocation(PeakedCurve(), probes, [instance()]))
    frame = {"size_bytes": np.array([2.0**20, 2.0**17, 2.0**24])}
    assert model.predict_busbw_bytes_per_s(frame) == pytest.approx([1.2e9, 1.2e9, 1.2e9])
    # b_cap is the largest prediction over sizes: the learned peak no longer sets it
    assert bus_cap_bytes_per_s(PeakedCurve(), 2, 2, [instance()]) == pytest.approx(2e9)
    assert bus_cap_bytes_per_s(model, 2, 2, [instance()]) == pytest.approx(1.2e9)
    quantiles = model.residual_quantiles(frame, SPREAD_LEVELS)
    assert quantiles.shape == (3, len(SPREAD_LEVELS)) and np.all(quantiles == 0)


def test_the_ratio_follows_the_size_and_beyond_the_probe_stays_at_the_nearest_size() -> None:
    # a ring still latency-bound at 1 MiB (half the model) and at 1.3x the model from 16 MiB on
    probes = probe_rows({2**20: [0.5e9] * 3, 2**22: [0.9e9] * 3, 2**24: [1.3e9] * 3})
    probed = probe_allocation(ConstantBusBandwidth(1e9), probes, [instance()])
    assert probed.level == pytest.approx(0.9)  # the median: the summary's one number
    assert np.exp(probed.log_ratio_by_size) == pytest.approx([0.5, 0.9, 1.3])
    assert "x0.50-1.30 by size" in probed.summary()
    model = AllocationModel(ConstantBusBandwidth(1e9), probed)
    sizes = np.array([2.0**17, 2.0**20, 2.0**21, 2.0**24, 90e6])
    got = model.predict_busbw_bytes_per_s({"size_bytes": sizes})
    # below the smallest probed size its ratio, half-way in log size the geometric mean, beyond the largest its
    assert got == pytest.approx([0.5e9, 0.5e9, math.sqrt(0.5 * 0.9) * 1e9, 1.3e9, 1.3e9])


def test_a_slower_allocation_slows_a_communication_bound_iteration() -> None:
    profile = synthetic_profile(cv=0.0)
    config = make_config([(instance(), 2, 32)])
    net = ConstantBusBandwidth(1e8)
    options = SimOptions(iters=20)
    average = Simulator({"T4": profile}, net, options).simulate(config, np.random.default_rng(0))
    slow = AllocationModel(net, probe_allocation(net, probe_rows({2**22: [0.5e8] * 3}), [instance()]))
    probed = Simulator({"T4": profile}, slow, options).simulate(config, np.random.default_rng(0))
    # half the bandwidth: the exchange takes twice as long after its first bucket is ready
    assert 1.8 * average.pe_mean_s < probed.pe_mean_s < 2 * average.pe_mean_s
    assert probed.b_cap_bytes_per_s == pytest.approx(0.5e8)


@settings(max_examples=40, deadline=None)
@given(
    scale=st.floats(0.05, 20.0),
    values=st.lists(st.floats(1e7, 1e10), min_size=2, max_size=6),
)
def test_scaling_every_measurement_scales_the_level_and_the_ceiling(scale: float, values: list[float]) -> None:
    sizes = [2.0 ** (20 + i) for i in range(len(values))]
    net = ConstantBusBandwidth(1e9)
    base = probe_allocation(net, probe_rows({s: [v] for s, v in zip(sizes, values, strict=True)}), [instance()])
    scaled = probe_allocation(
        net, probe_rows({s: [v * scale] for s, v in zip(sizes, values, strict=True)}), [instance()]
    )
    assert scaled.level == pytest.approx(base.level * scale, rel=1e-9)
    assert scaled.saturated_busbw_bytes_per_s == pytest.approx(base.saturated_busbw_bytes_per_s * scale, rel=1e-9)


@pytest.mark.parametrize(
    ("probes", "message"),
    [
        (probe_rows({4096: [1e6]}), "no allreduce row above the MTU"),
        (pd.concat([probe_rows({2**20: [1e9]}), probe_rows({2**20: [1e9]}, world=4)]), "several world sizes"),
        (pd.DataFrame({"size_bytes": [2.0**20]}), "no 'busbw_bytes_per_s' column"),
    ],
)
def test_unusable_probes_say_what_to_do(probes: pd.DataFrame, message: str) -> None:
    with pytest.raises(SriftyError, match=message):
        probe_allocation(ConstantBusBandwidth(1e9), probes, [instance()])


def test_simulate_takes_an_allocation_probe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from srifty.cli.main import app, run

    spec = EXAMPLES / "case5-bert.yaml"
    fast = tmp_path / "fast.csv"
    probe_rows({2**22: [50e9] * 3, 2**24: [50e9] * 3}, world=4).to_csv(fast, index=False)
    runner = CliRunner()
    argv = ["simulate", str(spec), "--config", "4xg4dn.12xlarge@64", "--iters", "20"]
    plain = runner.invoke(app, argv)
    probed = runner.invoke(app, [*argv, "--allocation-probes", str(fast)])
    assert plain.exit_code == 0 and probed.exit_code == 0, probed.output
    assert "an average allocation" in plain.output
    assert "allocation probed" in probed.output

    def iteration_ms(output: str) -> float:
        line = next(row for row in output.splitlines() if "iteration mean" in row)
        return float(line.split("│")[2].split("±")[0].replace(",", "").strip())

    assert iteration_ms(probed.output) < iteration_ms(plain.output)
    bad = tmp_path / "small.csv"
    probe_rows({4096: [1e6]}).to_csv(bad, index=False)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        run([*argv, "--allocation-probes", str(bad)])
    assert exited.value.code == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in said and "--allocation-probes" in said and "above the MTU" in said
