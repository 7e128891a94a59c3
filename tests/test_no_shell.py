"""No shell injection: every value that reaches ip, tc, ssh or torchrun is an argument of a vector, never
part of a shell string, and names and addresses are validated first."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from srifty.network.errors import TestbedError
from srifty.network.testbed.state import NAME_PATTERN, TestbedHost, TestbedState, check_name, read_state, write_state
from tests.conftest import REPO

METACHARACTERS = ["; touch /tmp/srifty-pwned", "$(touch /tmp/srifty-pwned)", "`id`", "a|b", "a&&b", "x > y", "-h", "\n"]
SHELL_PATTERNS = [r"shell\s*=\s*True", r"os\.system\(", r"os\.popen\(", r"[\"'](ba)?sh[\"']\s*,\s*[\"']-c[\"']"]


@pytest.mark.parametrize("folder", ["src/srifty", "benchmarks", "scripts"])
def test_no_code_starts_a_shell(folder: str) -> None:
    offenders = []
    for path in sorted((REPO / folder).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(REPO)}: {p}" for p in SHELL_PATTERNS if re.search(p, text)]
    assert not offenders, offenders


@pytest.mark.parametrize("evil", METACHARACTERS + ["tb" + m for m in METACHARACTERS])
def test_testbed_names_with_shell_metacharacters_are_refused(evil: str, cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TestbedError, match="is not 1 to 6 lowercase letters or digits"):
        check_name(evil)
    code, _, err = cli("testbed", "down", "--name", evil)
    assert code == 2 and "Traceback" not in err


@given(st.text(max_size=12))
def test_an_accepted_testbed_name_is_only_letters_and_digits(name: str) -> None:
    try:
        check_name(name)
    except TestbedError:
        return
    assert re.fullmatch(r"[a-z0-9]{1,6}", name) and NAME_PATTERN.fullmatch(name)


def _state(**host_changes: object) -> TestbedState:
    host = {"index": 0, "namespace": "srifty-tb-h0", "link": "sft-tb-0", "ip": "10.213.0.1"}
    host.update(host_changes)  # type: ignore[arg-type]
    return TestbedState(
        name="tb", instance_type="g4dn.8xlarge", gpu="T4", gpus_per_host=1, rated_network_gbps=50.0,
        emulation_scale=50.0, family_shaped_gbps=1.0, allocation_id="tb-x", seed=0, allocation_factor=1.0,
        hosts=(TestbedHost(bandwidth_factor=1.0, shaped_gbps=1.0, **host),),  # type: ignore[arg-type]
        mtu_bytes=9000, intra_node_shaped_gbps=None, created_s=0.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"ip": "10.213.0.1; touch /tmp/srifty-pwned"}, r"hosts\[0\]\.ip .* is not an IPv4 address"),
        ({"ip": "$(id)"}, r"hosts\[0\]\.ip"),
        ({"ip": 167}, r"hosts\[0\]\.ip"),
        ({"ip": "192.168.1.1"}, r"outside the testbed's 10\.213\.0\.0/24"),
        ({"namespace": "srifty-tb-h0; reboot"}, r"hosts\[0\] names namespace"),
        ({"link": "--all"}, r"hosts\[0\] names namespace"),
    ],
)
def test_a_tampered_state_file_never_reaches_ip_or_torchrun(tmp_path: Path, changes: dict, field: str) -> None:
    path = write_state(_state(), tmp_path)
    doc = json.loads(path.read_text())
    doc["hosts"][0].update(changes)
    path.write_text(json.dumps(doc))
    with pytest.raises(TestbedError, match=field):
        read_state(path)


def test_exported_commands_keep_a_hostile_job_name_out_of_the_shell() -> None:
    """The plain torchrun lines are for the user's shell: values srifty puts in them (the job name, batch
    sizes, the group) are sanitised or quoted, so each stays one word. (The training command is split as a
    shell would split it, and each of its words is quoted.)"""
    from srifty.plan import make_plan
    from srifty.plan.export import torchrun_commands
    from tests.test_planner import latency_ms, predictor, problem

    best = make_plan(problem({"t4.1": 2}, 64), predictor(), latency_ms, mode="exhaustive").best
    assert best is not None
    for line in torchrun_commands(best.config, "job; touch /tmp/srifty-pwned $(id) `id`"):
        words = shlex.split(line.splitlines()[-1])
        assert not [w for w in words if any(m in w for m in (";", "$(", "`", "|", "&"))], words
