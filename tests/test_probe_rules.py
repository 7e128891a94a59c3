"""The leave-one-model-out choice of the 4-probe latency rule (benchmarks/probe_rules.py) on synthetic curves."""

from __future__ import annotations

import pytest
from benchmarks import probe_rules

ERRORS = {
    "a": {("p", "x"): (1.0, 1.0, 1.0), ("p", "y"): (9.0, 9.0, 9.0)},
    "b": {("p", "x"): (2.0, 2.0, 2.0), ("p", "y"): (1.0, 1.0, 1.0)},
    "c": {("p", "x"): (3.0, 3.0, 3.0), ("p", "y"): (1.5, 1.5, 1.5)},
}


def test_each_model_is_scored_by_the_rule_chosen_without_it() -> None:
    held = probe_rules.leave_one_model_out(ERRORS)
    assert held["a"] == (("p", "y"), (9.0, 9.0, 9.0))  # b and c prefer y: a pays for it
    assert held["b"] == (("p", "x"), (2.0, 2.0, 2.0))  # without b, x wins (mean 2 against 5.25)
    assert held["c"][0] == ("p", "x")
    assert probe_rules.chosen(ERRORS, list(ERRORS)) == ("p", "x")


def test_every_candidate_rule_scores_a_smooth_gpu_like_curve() -> None:
    def curve(b: int) -> float:
        return (10.0**4 + (1.0 + 0.05 * b) ** 4) ** 0.25

    batches = [2**k for k in range(11)]
    fit = {b: {ph: curve(b) for ph in probe_rules.PHASES} for b in batches}
    scores = probe_rules.score_rules(fit, fit)
    assert len(scores) == 36 and all(len(e) == 3 for e in scores.values())
    assert scores[("log-even", "smooth max q=4")][2] == pytest.approx(0.0, abs=1e-3)
    assert all(min(e) >= 0 for e in scores.values())
