"""The iteration simulator on synthetic profiles and bandwidth models."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.compute.profile import Profile
from srifty.errors import ProfileError, SpecError
from srifty.sim import SimOptions, Simulator, simulate
from srifty.vocab import Config, make_config, parse_config
from tests.factories import ConstantBusBandwidth, instance, synthetic_profile

FAST_NET = ConstantBusBandwidth(1e12)


def test_no_variance_single_vm_is_the_latency_model() -> None:
    profile = synthetic_profile(cv=0.0)
    config = make_config([(instance(), 1, 32)])
    result = simulate(config, {"T4": profile}, FAST_NET, iters=10, rng=0)
    expected_ms = float(profile.predict_ms("fw", 32) + profile.predict_ms("bw", 32) + profile.predict_ms("step", 32))
    assert result.iter_mean_s == pytest.approx(expected_ms / 1000)
    assert result.throughput_samples_per_s == pytest.approx(32 / result.iter_mean_s)
    assert result.pe_mean_s == 0.0 and result.world_size == 1


@settings(max_examples=60, deadline=None)
@given(
    cv=st.floats(0.0, 0.3),
    counts=st.lists(st.integers(1, 16), min_size=1, max_size=3),
    batches=st.lists(st.integers(1, 256), min_size=3, max_size=3),
    busbw=st.floats(1e6, 1e11),
    seed=st.integers(0, 1000),
)
def test_iteration_is_at_least_compute_and_deterministic(cv, counts, batches, busbw, seed) -> None:  # type: ignore[no-untyped-def]
    profile = synthetic_profile(cv=cv)
    types = [instance(f"t{i}", gpus=1 + i) for i in range(len(counts))]
    config = make_config([(t, c, b) for t, c, b in zip(types, counts, batches, strict=False)])
    sim = Simulator({"T4": profile}, ConstantBusBandwidth(busbw), SimOptions(iters=50))
    a = sim.simulate(config, np.random.default_rng(seed))
    b = Simulator({"T4": profile}, ConstantBusBandwidth(busbw), SimOptions(iters=50)).simulate(
        config, np.random.default_rng(seed)
    )
    assert a == b
    assert a.iter_mean_s >= a.fw_mean_s + a.bwd_mean_s + a.step_mean_s - 1e-12
    assert a.iter_p5_s <= a.iter_p50_s <= a.iter_p95_s


def test_slowest_vm_dominates() -> None:
    fast, slow = synthetic_profile(bwd=(1.0, 1.0), gpu="A10G"), synthetic_profile(bwd=(10.0, 1.0), gpu="T4")
    profiles = {"A10G": fast, "T4": slow}
    a10 = instance("fast.vm", gpu="A10G")
    t4 = instance("slow.vm", gpu="T4")
    mixed = simulate(make_config([(a10, 8, 64), (t4, 1, 64)]), profiles, FAST_NET, iters=200, rng=1)
    slow_alone = simulate(make_config([(t4, 1, 64)]), profiles, FAST_NET, iters=200, rng=1)
    fast_alone = simulate(make_config([(a10, 8, 64)]), profiles, FAST_NET, iters=200, rng=1)
    assert mixed.slowest_group == "1xslow.vm@64"
    assert mixed.iter_mean_s >= slow_alone.iter_mean_s - 1e-9
    assert mixed.iter_mean_s > fast_alone.iter_mean_s


def test_more_vms_make_the_straggler_slower() -> None:
    profile = synthetic_profile(cv=0.1)
    t4 = instance()
    few = simulate(make_config([(t4, 1, 64)]), {"T4": profile}, FAST_NET, iters=2000, rng=3)
    many = simulate(make_config([(t4, 32, 64)]), {"T4": profile}, FAST_NET, iters=2000, rng=3)
    assert many.fw_mean_s + many.bwd_mean_s > 1.05 * (few.fw_mean_s + few.bwd_mean_s)


def test_slow_network_exposes_communication() -> None:
    profile = synthetic_profile(cv=0.0, param_mib=(100.0,) * 4)
    t4 = instance()
    config = make_config([(t4, 4, 8)])
    slow = simulate(config, {"T4": profile}, ConstantBusBandwidth(1e8), iters=5, rng=0)
    # 400 MiB of gradients over 4 ranks at 100 MB/s bus bandwidth: 2·s·3/4 / b per byte moved.
    wire_s = 2 * 400 * 2**20 * 3 / 4 / 1e8
    assert slow.comm_exposed_mean_s > 0.5 * wire_s
    assert slow.iter_mean_s >= slow.fw_mean_s + wire_s * 0.99


def test_layer_mode_and_sequential_overlap_run() -> None:
    profile = synthetic_profile(cv=0.05)
    config = make_config([(instance(), 4, 16)])
    by_layer = simulate(config, {"T4": profile}, ConstantBusBandwidth(1e9), iters=20, rng=0, transfers="layer")
    sequential = simulate(config, {"T4": profile}, ConstantBusBandwidth(1e9), iters=20, rng=0, overlap="sequential")
    assert by_layer.n_transfers == 4 and sequential.n_transfers == len(profile.buckets)


def test_missing_profile_names_the_fix() -> None:
    with pytest.raises(ProfileError, match="srifty profile"):
        simulate(make_config([(instance(gpu="V100"), 1, 8)]), {"T4": synthetic_profile()}, FAST_NET)


def test_parse_config_notation() -> None:
    config = parse_config("4xg4dn.12xlarge@64, 2xp3.8xlarge@128[spot]", region="us-east-1")
    assert config.notation() == "4xg4dn.12xlarge@64,2xp3.8xlarge@128"
    assert config.world_size == 4 * 4 + 2 * 4
    assert config.global_batch == 16 * 64 + 8 * 128
    assert config.groups[1].market == "spot" and config.groups[0].market == "on_demand"
    with pytest.raises(SpecError, match="<count>x<instance>@<local batch>"):
        parse_config("4 g4dn@64", region="us-east-1")
    with pytest.raises(SpecError, match=r"Did you mean 'g4dn\.12xlarge'"):
        parse_config("4xg4dn.12xlarg@64", region="us-east-1")


def test_single_multi_gpu_vm_uses_the_intra_node_link() -> None:
    from srifty.catalog import load_catalog
    from srifty.sim import config_busbw_bytes_per_s
    from srifty.sim.netquery import INTRA_NODE_EFFICIENCY

    p3 = load_catalog().get("p3.8xlarge", region="us-east-1")  # 4x V100, NVLink 2, rated network 10 Gbps
    assert p3.gpu is not None
    net = ConstantBusBandwidth(1e9)  # what the network alone would give
    one_vm = config_busbw_bytes_per_s(net, [2.0**26], 4, 1, [p3])
    two_vms = config_busbw_bytes_per_s(net, [2.0**26], 8, 2, [p3])
    assert one_vm[0] == pytest.approx(0.5 * p3.gpu.link_bytes_per_s_per_gpu * INTRA_NODE_EFFICIENCY)
    assert two_vms[0] == pytest.approx(1e9)


class SpreadBusBandwidth(ConstantBusBandwidth):
    """Constant bus bandwidth that also says how far off it tends to be: log-normal with ``sigma``."""

    def __init__(self, busbw_bytes_per_s: float, sigma: float) -> None:
        super().__init__(busbw_bytes_per_s)
        self.sigma = sigma

    def residual_quantiles(self, frame, levels):  # type: ignore[no-untyped-def]
        from scipy.stats import norm

        return np.tile(norm.ppf(np.asarray(levels)) * self.sigma, (len(frame), 1))


def comm_bound() -> tuple[Profile, Config]:
    profile = synthetic_profile(cv=0.0, param_mib=(50.0,) * 4)
    return profile, make_config([(instance(), 8, 8)])


def test_communication_time_is_sampled_from_the_models_spread() -> None:
    profile, config = comm_bound()
    fixed = simulate(config, {"T4": profile}, ConstantBusBandwidth(1e8), iters=400, rng=4)
    narrow = simulate(config, {"T4": profile}, SpreadBusBandwidth(1e8, 0.05), iters=400, rng=4)
    wide = simulate(config, {"T4": profile}, SpreadBusBandwidth(1e8, 0.4), iters=400, rng=4)
    assert fixed.iter_std_s == pytest.approx(0.0, abs=1e-12)  # no compute noise, no network spread
    assert 0 < narrow.iter_std_s < wide.iter_std_s
    # mean-preserving: on average communication takes what the model predicts, however wide its spread
    assert narrow.pe_mean_s == pytest.approx(fixed.pe_mean_s, rel=0.02)
    assert wide.pe_mean_s == pytest.approx(fixed.pe_mean_s, rel=0.06)
    assert wide.iter_mean_s == pytest.approx(fixed.iter_mean_s, rel=0.06)
    assert wide.iter_p95_s > 1.3 * fixed.iter_p95_s
    assert wide.iter_p5_s < 0.8 * fixed.iter_p5_s
    again = simulate(config, {"T4": profile}, SpreadBusBandwidth(1e8, 0.4), iters=400, rng=4)
    assert again == wide


def test_net_spread_scale_zero_keeps_communication_as_predicted() -> None:
    _, config = comm_bound()
    fixed = simulate(config, {"T4": synthetic_profile(cv=0.1)}, ConstantBusBandwidth(1e8), iters=50, rng=2)
    off = simulate(
        config, {"T4": synthetic_profile(cv=0.1)}, SpreadBusBandwidth(1e8, 0.4), iters=50, rng=2, net_spread_scale=0.0
    )
    assert off == fixed


def test_a_model_that_learned_single_vms_answers_for_them() -> None:
    from srifty.catalog import load_catalog
    from srifty.sim.netquery import config_busbw_bytes_per_s

    class KnowsNvlink(ConstantBusBandwidth):
        predicts_intra_node = True

    p3 = load_catalog().get("p3.8xlarge", region="us-east-1")
    one_vm = config_busbw_bytes_per_s(KnowsNvlink(3e10), [2.0**26], 4, 1, [p3])
    assert one_vm[0] == pytest.approx(3e10)  # the model's own answer, not the datasheet × 0.85


def test_the_normal_quantile_gives_the_standard_librarys_doubles_in_both_branches() -> None:
    """numpy evaluates AS241's central polynomial; the result must be the standard library's to the bit (the
    simulator's draws, and so every plan, depend on it), in the centre, in the tails and at the clipped ends."""
    from statistics import NormalDist

    from srifty.sim.sampling import normal_quantile

    rng = np.random.default_rng(7)
    draws = np.concatenate(
        [
            rng.random(20_000),
            rng.random(20_000) ** (1 / 16),
            rng.random(300_000) ** (1 / 64),  # the maximum over many ranks: nearly all in the upper tail
            10.0 ** rng.uniform(-300, -8, 2_000),  # the far tail (r > 5 from p < 1.4e-11)
            [0.0, 0.075, 0.5, 0.925, 0.5 + 0.425, 1e-300, 0.999999, 0.3],
        ]
    )
    expected = np.array(
        [NormalDist().inv_cdf(min(max(p, np.finfo(float).tiny), np.nextafter(1.0, 0.0))) for p in draws]
    )
    got = normal_quantile(draws.reshape(2, -1)).ravel()
    assert np.array_equal(got.view(np.int64), expected.view(np.int64))
    central = np.abs(draws - 0.5) <= 0.425
    far = np.minimum(draws, 1 - draws) < 1.4e-11
    assert central.sum() > 10_000 and (~central & ~far).sum() > 10_000 and far.sum() > 1_000  # every branch
