"""Bad input, systematically (see tests/badinput.py): every case ends in exit code 2 with a message naming
the file, field or option, and no traceback. benchmarks/reliability.py runs many more and counts them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.badinput import FAMILIES, Case, run_case
from tests.leakcheck import register_testbed

# Examples per family here; the benchmark draws hundreds. Families whose command does real work per case
# (fitting, simulating) get fewer.
EXAMPLES = {"probe-set": 12, "bandwidth-model": 15, "plan": 15, "timeline": 15, "options": 30, "spec": 30}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_bad_input_gives_a_clear_error(family: str, tmp_path: Path) -> None:
    register_testbed("zzfuzz")  # option cases try `testbed up` with bad values: nothing may be created

    @settings(
        max_examples=EXAMPLES.get(family, 20),
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )
    @given(FAMILIES[family])
    def check(case: Case) -> None:
        outcome = run_case(case, tmp_path)
        assert outcome.ok, outcome.explain()

    check()
