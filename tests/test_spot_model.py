"""The spot model: trace files (format, names, bad input), what is fitted from them, the artefact and the
embedded default."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.catalog import load_catalog
from srifty.errors import TraceError
from srifty.spot import (
    SpotModel,
    bundled_trace_paths,
    count_trace,
    default_spot_model,
    fit_spot_files,
    fit_spot_model,
    load_trace,
)
from srifty.vocab.spot_trace import SpotTrace


def write_trace(folder: Path, name: str, data: object, gap: object = 60, **extra: object) -> Path:
    path = folder / name
    path.write_text(json.dumps({"metadata": {"gap_seconds": gap}, "data": data, **extra}))
    return path


def made_up(data: list[int], gap_s: float = 60.0, zone: str = "us-east-1f", name: str = "t.json") -> SpotTrace:
    return SpotTrace(name, "p3.2xlarge", "aws", zone, zone[:-1], gap_s, tuple(data), "0" * 64)


def test_file_name_names_zone_region_and_instance_type(tmp_path: Path) -> None:
    path = write_trace(tmp_path, "us-east-1f_v100_1.json", [1, 1, 0, 1])
    trace = load_trace(path, load_catalog())
    where = (trace.instance_type, trace.cloud, trace.zone, trace.region)
    assert where == ("p3.2xlarge", "aws", "us-east-1f", "us-east-1")
    assert trace.gap_s == 60 and trace.held == (1, 1, 0, 1) and trace.max_held == 1
    assert trace.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert trace.held_at(0) == 1 and trace.held_at(125) == 0 and trace.held_at(1e9) == 1
    eight = load_trace(write_trace(tmp_path, "us-west-2c_v100_8.json", [2]), load_catalog())
    assert eight.instance_type == "p3.16xlarge"


def test_file_equals_instance_type_overrides_the_name(tmp_path: Path) -> None:
    path = write_trace(tmp_path, "capacity.json", [3, 2, 3])
    trace = load_trace(f"{path}=g4dn.12xlarge", load_catalog())
    assert trace.instance_type == "g4dn.12xlarge" and trace.zone == ""


@pytest.mark.parametrize(
    ("name", "body", "field"),
    [
        ("us-east-1f_v100_1.json", {"data": [1, 0]}, "`metadata`"),
        ("us-east-1f_v100_1.json", {"metadata": {}, "data": [1]}, "`metadata.gap_seconds`"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": -5}, "data": [1]}, "`metadata.gap_seconds`"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": "60"}, "data": [1]}, "`metadata.gap_seconds`"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": 60}}, "`data`"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": 60}, "data": []}, "`data` is empty"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": 60}, "data": [1, -1]}, "`data[1]`"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": 60}, "data": [1, 2.5]}, "`data[1]`"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": 60}, "data": [1, True]}, "`data[1]`"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": 60}, "data": "1,0"}, "`data`"),
        ("us-east-1f_v100_1.json", {"metadata": {"gap_seconds": 60}, "data": [0, 0]}, "never holds"),
        ("us-east-1f_k80_3.json", {"metadata": {"gap_seconds": 60}, "data": [1]}, "k80_3"),
        ("capacity.json", {"metadata": {"gap_seconds": 60}, "data": [1]}, "FILE=INSTANCE_TYPE"),
    ],
)
def test_bad_trace_files_exit_2_naming_file_and_field(cli, tmp_path: Path, name: str, body: dict, field: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(json.dumps(body))
    code, _, err = cli("fit-spot", str(path), "--out", str(tmp_path / "m.json"))
    assert code == 2 and str(path) in err and field in err and "Traceback" not in err
    assert not (tmp_path / "m.json").exists()


def test_an_unknown_instance_type_or_a_missing_file_exits_2(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_trace(tmp_path, "us-east-1f_v100_1.json", [1])
    code, _, err = cli("fit-spot", f"{path}=p3.2xlarg", "--out", str(tmp_path / "m.json"))
    assert code == 2 and "p3.2xlarg" in err and "Did you mean 'p3.2xlarge'" in err
    code, _, err = cli("fit-spot", str(tmp_path / "nope.json"), "--out", str(tmp_path / "m.json"))
    assert code == 2 and "nope.json" in err
    (tmp_path / "broken.json").write_text("{not json")
    code, _, err = cli("fit-spot", f"{tmp_path / 'broken.json'}=p3.2xlarge", "--out", str(tmp_path / "m.json"))
    assert code == 2 and "broken.json" in err and "Traceback" not in err


def test_counts_of_a_small_made_up_trace() -> None:
    # ticks:  2 2 1 1 2 2 0 0 2 (60 s each)
    counts = count_trace(made_up([2, 2, 1, 1, 2, 2, 0, 0, 2]))
    assert counts.held_vm_hours == pytest.approx(12 * 60 / 3600)
    assert (counts.vms_lost, counts.loss_events) == (3, 2)
    # 2 -> 1 loses one of two (no other VM went with it); 2 -> 0 loses both (the other one went too)
    assert (counts.burst_extra, counts.burst_room) == (1, 2)
    assert counts.downtimes_s == (180.0, 180.0) and counts.censored == 0
    assert counts.ticks_holding == (7, 5)


def test_fitted_figures_of_made_up_traces() -> None:
    model = fit_spot_model([made_up([2, 2, 1, 1, 2, 2, 0, 0, 2]), made_up([1] * 50 + [0] * 10, 120, "us-west-2a")])
    figures = model.figures_for("p3.2xlarge", "us-east-1f", "us-east-1")
    assert figures.level == "zone" and figures.traces == ("t.json",)
    f = figures.figures
    assert f.burst_rho == pytest.approx(0.5)
    assert f.p_obtain == pytest.approx((7 / 9, 5 / 9))
    assert f.downtime_median_s == pytest.approx(180.0)
    # shrunk towards the prior: between the trace's own 15 per VM-hour and the prior's mean
    assert model.prior.mean_per_vm_hour < f.loss_rate_per_vm_hour < 15.0
    # one further VM keeps the last conditional chance
    assert figures.p_obtain(3) == pytest.approx(5 / 9 * (5 / 7))
    assert figures.events_per_hour(4) == pytest.approx(f.loss_rate_per_vm_hour * 4 / (1 + 0.5 * 3))
    # a catalog zone ID is matched by region; another type gets the prior, and says so
    assert model.figures_for("p3.2xlarge", "use1-az4", "us-east-1").level == "region"
    assert model.figures_for("p3.2xlarge", "euw1-az1", "eu-west-1").level == "type"
    other = model.figures_for("g4dn.xlarge", "use1-az4", "us-east-1")
    assert other.level == "prior" and "no trace of g4dn.xlarge" in other.source


def test_a_trace_whose_capacity_never_returns_is_censored() -> None:
    counts = count_trace(made_up([1, 1, 0, 0]))
    assert counts.downtimes_s == () and counts.censored == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=2, max_size=80).filter(lambda d: max(d) > 0))
def test_figures_stay_in_range(data: list[int]) -> None:
    model = fit_spot_model([made_up(data)])
    f = model.figures_for("p3.2xlarge", "us-east-1f").figures
    assert f.loss_rate_per_vm_hour >= 0 and f.rate_shape > 0 and 0 <= f.burst_rho <= 1
    assert all(a >= b - 1e-12 for a, b in zip(f.p_obtain, f.p_obtain[1:], strict=False))
    assert all(0 <= p <= 1 for p in f.p_obtain)
    counts = count_trace(made_up(data))
    assert all(d >= 60 for d in counts.downtimes_s)
    assert counts.loss_events + 0 <= counts.vms_lost


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    model = fit_spot_model([made_up([2, 2, 1, 2, 0, 2])])
    path = model.save(tmp_path / "spot.json")
    assert SpotModel.load(path) == model
    document = json.loads(path.read_text())
    assert document["kind"] == "spot-model" and document["schema_version"] == 1
    del document["entries"][0]["figures"]["burst_rho"]
    path.write_text(json.dumps(document))
    with pytest.raises(Exception, match="refit it"):
        SpotModel.load(path)


def test_fit_spot_cli_writes_a_model(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = write_trace(tmp_path, "us-east-2a_v100_1.json", [4, 4, 3, 4, 2, 4])
    b = write_trace(tmp_path, "us-west-2c_v100_1.json", [1, 0, 1, 1])
    code, out, _ = cli("fit-spot", str(a), str(b), "--out", str(tmp_path / "m.json"))
    assert code == 0 and "wrote" in out
    model = SpotModel.load(tmp_path / "m.json")
    assert {t.zone for t in model.traces} == {"us-east-2a", "us-west-2c"}


def test_the_embedded_default_is_a_refit_of_the_bundled_traces() -> None:
    paths = bundled_trace_paths()
    assert len(paths) == 15
    default = default_spot_model()
    refit = fit_spot_files(paths, load_catalog(), default.created_by)
    assert refit == default
    for record, path in zip(default.traces, paths, strict=True):
        assert record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert record.name == f"{path.parent.name}/{path.name}"


def test_trace_errors_are_sriftyerrors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="data"):
        load_trace(write_trace(tmp_path, "us-east-1f_v100_1.json", []), load_catalog())
