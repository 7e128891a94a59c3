"""Provenance: a measured profile records its machine; measurements from different machines are not mixed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from srifty.compute import load_profile
from srifty.compute.bundled import bundled_profile_paths
from srifty.compute.machine import MachineRecord
from srifty.compute.provenance import check_one_machine, mixing_warnings, require_this_machine
from srifty.errors import ProfileError
from tests.factories import synthetic_profile

V1 = Path(__file__).parent / "data" / "tiny_mlp_schema1.json"


def machine(**changes: object) -> MachineRecord:
    base = MachineRecord(
        hostname="lab1",
        machine_id="abc",
        cpu_model="AMD EPYC",
        cpu_signature="family 25 model 17 stepping 1",
        cpu_mhz=2596.1,
        logical_cpus=2,
        memory_gib=24,
        kernel="6.1",
        python_version="3.11.7",
        torch_version="2.14.1",
        numeric_flags={"float32_matmul_precision": "highest", "cudnn.allow_tf32": "True"},
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_this_machine_is_described_with_its_cpu_and_software() -> None:
    from srifty.compute.measure.machine import current_machine

    here = current_machine(include_torch=False)
    assert here.cpu_model and here.logical_cpus >= 1 and here.memory_gib >= 1 and here.hostname
    assert here.same_machine(current_machine(include_torch=False))
    assert MachineRecord.from_dict(here.to_dict()) == here


def test_cpu_generations_that_share_a_model_name_are_told_apart(tmp_path: Path) -> None:
    """A cloud VM's CPU was named "AMD EPYC" both as a Zen 5 with AVX-512 and as a Zen 1 with AVX2 (three times
    apart on a convolution): the signature and the vector instructions tell them apart, also in benchmark lines."""
    from benchmarks.common import machine_description

    from srifty.compute.measure.device import cpu_fields, cpu_signature, cpu_vector_isa

    def cpuinfo(family: int, model: int, flags: str) -> Path:
        path = tmp_path / f"cpuinfo-{family}"
        first = f"processor\t: 0\nmodel name\t: AMD EPYC\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        path.write_text(first + f"stepping\t: 1\nflags\t\t: fpu sse2 {flags}\n\nprocessor\t: 1\ncpu family\t: 99\n")
        return path

    zen5, zen1 = cpu_fields(cpuinfo(26, 2, "avx avx2 avx512f avx512bw")), cpu_fields(cpuinfo(23, 1, "avx avx2"))
    assert zen5["model name"] == zen1["model name"] == "AMD EPYC"
    assert (cpu_signature(zen5), cpu_vector_isa(zen5)) == ("family 26 model 2 stepping 1", "AVX-512")
    assert (cpu_signature(zen1), cpu_vector_isa(zen1)) == ("family 23 model 1 stepping 1", "AVX2")
    assert cpu_fields(tmp_path / "missing") == {} and cpu_vector_isa({"flags": "fpu sse2"}) is None
    assert cpu_signature(cpu_fields()) in machine_description()


@given(
    hostname=st.text(min_size=1, max_size=20),
    cpus=st.integers(1, 4096),
    flags=st.dictionaries(st.text(max_size=10), st.text(max_size=10), max_size=4),
    gpu=st.none() | st.text(min_size=1, max_size=30),
)
def test_machine_records_round_trip_through_json(hostname: str, cpus: int, flags: dict[str, str], gpu) -> None:  # type: ignore[no-untyped-def]
    record = machine(hostname=hostname, logical_cpus=cpus, numeric_flags=flags, gpu_name=gpu)
    assert MachineRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_a_measured_profile_keeps_its_machine_record(tmp_path: Path) -> None:
    profile = synthetic_profile().with_changes(machine=machine())
    loaded = load_profile(profile.save(tmp_path / "p.json"))
    assert loaded.machine == machine() and loaded == profile


def test_profiles_from_before_the_record_still_load_with_an_unknown_machine() -> None:
    assert load_profile(V1).machine is None
    for path in bundled_profile_paths():
        assert load_profile(path).model  # every bundled profile still loads


def test_a_malformed_machine_record_is_a_clear_error(tmp_path: Path) -> None:
    doc = json.loads(synthetic_profile().with_changes(machine=machine()).save(tmp_path / "p.json").read_text())
    doc["machine"] = {"hostname": "x"}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match=r"p\.json: malformed profile.*machine record is incomplete"):
        load_profile(tmp_path / "p.json")


def test_gpu_profiles_with_different_torch_or_numeric_settings_are_warned_about_by_name() -> None:
    t4 = synthetic_profile(gpu="T4").with_changes(machine=machine(gpu_name="Tesla T4"))
    v100 = synthetic_profile(gpu="V100").with_changes(machine=machine(hostname="lab2", gpu_name="Tesla V100"))
    assert mixing_warnings({"t4.json": t4, "v100.json": v100}) == []  # other machines, same software: normal
    older = v100.with_changes(machine=machine(hostname="lab2", torch_version="2.5.0"))
    (warning,) = mixing_warnings({"t4.json": t4, "v100.json": older})
    assert "t4.json: torch 2.14.1" in warning and "v100.json: torch 2.5.0" in warning
    tf32 = v100.with_changes(machine=machine(numeric_flags={"float32_matmul_precision": "high"}))
    (warning,) = mixing_warnings({"t4.json": t4, "v100.json": tf32})
    assert "numeric settings" in warning and "float32_matmul_precision=high" in warning


def test_cpu_profiles_of_one_job_from_different_machines_are_refused() -> None:
    fast = synthetic_profile(gpu=None).with_changes(machine=machine())
    same = synthetic_profile(gpu=None).with_changes(machine=machine(cpu_mhz=2400.0))  # the clock drifts
    check_one_machine({"q0.9.json": fast, "q0.45.json": same})
    other = synthetic_profile(gpu=None).with_changes(machine=machine(cpu_model="Intel Xeon", logical_cpus=8))
    with pytest.raises(ProfileError, match=r"q0\.45\.json and q0\.9\.json were measured on different machines"):
        check_one_machine({"q0.9.json": fast, "q0.45.json": other})


def test_a_profile_from_elsewhere_is_refused_as_a_local_measurement() -> None:
    here = machine()
    require_this_machine(synthetic_profile(gpu=None).with_changes(machine=here), "mine.json", here)
    elsewhere = synthetic_profile(gpu=None).with_changes(machine=machine(hostname="lab9", logical_cpus=16))
    with pytest.raises(ProfileError, match=r"theirs\.json was measured on another machine.*logical_cpus: 16 vs 2"):
        require_this_machine(elsewhere, "theirs.json", here)
    with pytest.raises(ProfileError, match=r"old\.json does not record the machine"):
        require_this_machine(synthetic_profile(gpu=None), "old.json", here)
    newer_torch = synthetic_profile(gpu=None).with_changes(machine=machine(torch_version="2.15.0"))
    with pytest.raises(ProfileError, match=r"torch_version: '2\.15\.0' vs '2\.14\.1'"):
        require_this_machine(newer_torch, "mine.json", here)


def test_plan_warns_about_profiles_measured_with_different_torch_versions(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    t4 = synthetic_profile(gpu="T4", model="resnet50").with_changes(machine=machine(gpu_name="Tesla T4"))
    v100 = synthetic_profile(gpu="V100", model="resnet50").with_changes(
        machine=machine(hostname="lab2", gpu_name="Tesla V100", torch_version="2.5.0")
    )
    t4.save(tmp_path / "t4.json")
    v100.save(tmp_path / "v100.json")
    spec = {
        "model": {"name": "resnet50", "profiles": ["t4.json", "v100.json"]},
        "global_batch": 256,
        "iterations": 100,
        "goal": "min_time",
        "region": "us-east-1",
        "candidates": [
            {"instance_type": "g4dn.xlarge", "market": "spot", "quota": 2},
            {"instance_type": "p3.2xlarge", "market": "spot", "quota": 2},
        ],
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    code, out, err = cli("plan", str(tmp_path / "job.yaml"), "--json", str(tmp_path / "plan.json"))
    text = " ".join((out + err).split())
    assert code == 0 and "different torch versions" in text and "V100 (measured:" in text
    notes = json.loads((tmp_path / "plan.json").read_text())["notes"]
    assert any("different torch versions" in note for note in notes)
