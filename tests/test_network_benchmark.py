"""Pure helpers of benchmarks/network_accuracy.py: the noise floor and the BENCHMARKS.md writer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchmarks.network_accuracy import noise_floor_predictions, replace_section


def test_noise_floor_uses_only_other_allocations_of_the_same_configuration() -> None:
    frame = pd.DataFrame(
        {
            "instance_type": ["a"] * 5 + ["b"],
            "size_bytes": [4, 4, 4, 4, 8, 4],
            "world_size": 2,
            "allocation_id": ["x", "x", "y", "z", "x", "x"],
            "busbw_bytes_per_s": [1.0, 3.0, 10.0, 20.0, 5.0, 7.0],
        }
    )
    pred = noise_floor_predictions(frame, config=("instance_type", "size_bytes", "world_size"))
    # rows of allocation x are predicted by y and z (10, 20); y by x and z (1, 3, 20); z by x and y
    assert pred[:4].tolist() == pytest.approx([15.0, 15.0, 8.0, 14.0 / 3])
    assert np.isnan(pred[4]) and np.isnan(pred[5])  # nobody else measured those configurations


def test_replace_section_keeps_the_other_sections() -> None:
    doc = "# B\n\n## One\n\nold\n\n## Two\n\nkeep\n"
    new = replace_section(doc, "## One", "| new |")
    assert new == "# B\n\n## One\n\n| new |\n\n## Two\n\nkeep\n"
    assert replace_section("## Last\nold\n", "## Last", "x") == "## Last\n\nx\n\n"
    with pytest.raises(ValueError, match="no '## Three' section"):
        replace_section(doc, "## Three", "x")
