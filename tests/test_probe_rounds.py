"""Timing the probed batches in rounds (``srifty profile --rounds``): every chosen batch is timed again in passes
over all of them, and each phase is fitted through every round's samples."""

from __future__ import annotations

import pytest

from srifty.compute.probing import probe_latency
from srifty.compute.profile import PhaseSamples

SAMPLES_PER_CALL = 5


def true_ms(batch: int) -> float:
    """A CPU-like curve: a fixed cost and a cost per sample (ms)."""
    return 20.0 + 3.0 * batch


class Timer:
    """Times a batch as ``true_ms`` stretched by ``slow`` during the calls numbered in ``spell`` (a slow spell
    of a shared machine), and records the order of the calls."""

    def __init__(self, spell: set[int], slow: float = 1.5) -> None:
        self.calls: list[int] = []
        self.spell = spell
        self.slow = slow

    def __call__(self, batch: int) -> PhaseSamples:
        factor = self.slow if len(self.calls) in self.spell else 1.0
        self.calls.append(batch)
        it = tuple(true_ms(batch) * factor * (1 + 0.001 * k) for k in range(SAMPLES_PER_CALL))
        fw = tuple(t / 3 for t in it)
        return PhaseSamples(batch, fw, tuple(2 * f for f in fw), (0.1,) * SAMPLES_PER_CALL, it, 100.0 * batch)


def test_one_round_times_each_chosen_batch_once() -> None:
    timer = Timer(spell=set())
    samples, latency = probe_latency(timer, 64, 4, flat_floor=False)
    assert len(timer.calls) == len(set(timer.calls)) == len(samples) == 4
    assert all(len(s.iter_ms) == SAMPLES_PER_CALL for s in samples)
    for s in samples:
        assert float(latency["iter"].predict_ms(s.batch)) == pytest.approx(s.robust_mean_ms("iter"), rel=0.02)


def test_later_rounds_pass_over_every_chosen_batch_and_pool_their_samples() -> None:
    timer = Timer(spell=set())
    samples, _ = probe_latency(timer, 64, 4, flat_floor=False, rounds=3)
    chosen = sorted(timer.calls[:4])
    assert timer.calls[4:] == chosen + chosen  # passes in batch order, after the first (choosing) pass
    assert [s.batch for s in samples] == chosen
    assert all(len(s.iter_ms) == 3 * SAMPLES_PER_CALL for s in samples)
    assert all(s.peak_bytes == 100.0 * s.batch for s in samples)


def test_a_slow_spell_moves_the_fit_less_when_it_is_one_round_of_three() -> None:
    """The same slow spell (one call at 1.5x) lands on the largest batch: with one round it is all that batch's
    time (+50 %); with three it is a third of that batch's samples, which the robust mean (within 3 MADs of the
    median) sets aside, so the fitted curve stays at the truth there."""
    errors = {}
    for rounds in (1, 3):
        timer = Timer(spell={0})  # the first call times the largest batch
        _, latency = probe_latency(timer, 64, 4, flat_floor=False, rounds=rounds)
        assert timer.calls[0] == 64
        errors[rounds] = abs(float(latency["iter"].predict_ms(64)) / true_ms(64) - 1)
    assert errors[1] == pytest.approx(0.5, abs=0.01)
    assert errors[3] < 0.01


def test_rounds_below_one_and_pooling_other_batches_are_refused() -> None:
    with pytest.raises(ValueError, match="rounds must be at least 1"):
        probe_latency(Timer(spell=set()), 64, 4, flat_floor=False, rounds=0)
    a, b = Timer(spell=set())(8), Timer(spell=set())(16)
    with pytest.raises(ValueError, match="batch 16 with batch 8"):
        a.pooled_with(b)


def test_the_profiler_times_in_rounds_and_says_how_many_iterations_each_batch_kept() -> None:
    pytest.importorskip("torch")
    from srifty.compute.measure import profile_model, profile_options

    options = profile_options(
        max_batch_cap=4, warmup_iters=1, timed_iters=2, rounds=2, threads=1, interference=False, count_ops=False
    )
    profile = profile_model("srifty.compute.zoo:tiny_mlp", options)
    assert profile.timed_iters == 4
    assert profile.samples and all(len(s.iter_ms) == 4 and len(s.fw_ms) == 4 for s in profile.samples)


def test_the_rounds_benchmark_measures_moves_between_every_two_profiles_of_a_way() -> None:
    from benchmarks import profile_rounds as pr

    a = {b: 100.0 for b in pr.AT_BATCHES}
    b = {k: 110.0 for k in pr.AT_BATCHES}
    c = {k: 100.0 for k in pr.AT_BATCHES}
    changes = pr.moves([a, b, c])  # a-b, a-c, b-c at each batch
    n = len(pr.AT_BATCHES)
    assert sorted(changes) == pytest.approx([0.0] * n + [100 / 11] * n + [10.0] * n)
    runs = [{"way": w, "pair": 0, "iter_ms": {str(k): v for k, v in p.items()}, "seconds": 5.0}
            for w, _, _ in pr.WAYS for p in (a, b)]  # fmt: skip
    saved = {"pairs": 2, "quota": 0.45, "elapsed_s": 20.0, "machine": "M", "runs": runs}
    section = pr.render(saved)
    assert "| 1 round of 6 | 2 | 10.0% | 10.0% | 5 |" in section and "--pairs 2 --quota 0.45` (20 s)" in section
