"""The interference table reads every measured profile, CPU and H200, and averages the DDP-overlap check per
device (a GPU's host-staged exchange and a CPU quota's are not one population)."""

from __future__ import annotations

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
