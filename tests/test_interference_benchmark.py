"""The interference table reads every measured profile, CPU and H200, and averages the DDP-overlap check per
device (a GPU's host-staged exchange and a CPU quota's are not one population)."""

from __future__ import annotations

import pytest
from benchmarks import interference


def test_the_table_has_the_h200_profiles_and_a_mean_per_device() -> None:
    rows = interference.rows()
    devices = {row[1] for row in rows if not row[0].startswith("**")}
    assert {"cpu", "H200"} <= devices
    h200 = [row for row in rows if row[1] == "H200"]
    assert len(h200) == 10 and all(row[2] == "none" for row in h200)  # no CPU quota on the device
    assert not any(row[0].startswith("smoke") for row in rows)
    means = [row[0] for row in rows if row[0].startswith("**")]
    assert means == ["**mean \\|error\\|, cpu**", "**mean \\|error\\|, H200**"]
    assert "H200" in interference.render() and interference.BEFORE in interference.render()


def test_each_row_checks_the_factors_against_perfect_overlap_and_the_additive_rule() -> None:
    rows = interference.rows()
    assert {len(row) for row in rows} == {14}
    for row in rows:
        if row[0].startswith("**"):
            assert all(cell.endswith("%") for cell in row[-3:])
            continue
        perfect_ms, additive_ms = (float(cell.split(" (")[0]) for cell in row[-2:])
        # perfect overlap ends at max(backward, exchange), never after backward plus the whole exchange
        assert perfect_ms <= additive_ms
        # t_bwd + t_comm: the median over repetitions of the sum, near the sum of the medians
        assert additive_ms == pytest.approx(float(row[7]) + float(row[8]), rel=0.1)


def _mean_row(device: str, factors: str, perfect: str, additive: str) -> list[str]:
    return [f"**mean \\|error\\|, {device}**", *[""] * 10, factors, perfect, additive]


def test_the_lead_line_reads_the_means_and_explains_only_what_they_show() -> None:
    shown = interference.lead_line([_mean_row("cpu", "18%", "27%", "17%"), _mean_row("H200", "4%", "4%", "30%")])
    assert "cpu: measured factors 18%, perfect overlap 27%, additive 17%" in shown
    assert "H200: measured factors 4%, perfect overlap 4%, additive 30%" in shown and "overlap, as srifty" in shown
    # where the additive rule wins on the GPU too, the explanation is not given
    neither = interference.lead_line([_mean_row("cpu", "18%", "27%", "17%"), _mean_row("H200", "9%", "9%", "5%")])
    assert "overlap, as srifty" not in neither
