"""`srifty report`: a self-contained HTML page, and (with Chromium) that it really draws its charts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from srifty.errors import ArtifactError
from srifty.evaluate import run_seeds, save_cases, save_seeds
from srifty.plan import make_plan
from srifty.report import build_report
from tests.eval_small import settings, small_run, timeline_records, write_specs
from tests.test_planner import latency_ms, predictor, problem

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
)


class StartTags(HTMLParser):
    """Every start tag of a page with its attributes (script bodies are not parsed as markup)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, dict(attrs)))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A plan file, an eval-cases file and a timeline, all made by srifty here."""
    folder = tmp_path_factory.mktemp("report")
    plan = make_plan(problem({"t4.1": 4, "t4.4": 2, "v100.4": 2}, 256), predictor(), latency_ms, mode="exhaustive")
    plan_path = plan.save(folder / "plan.json")
    cases_path, _ = save_cases(small_run(folder / "eval"), folder / "eval")
    specs, profiles = write_specs(folder / "seeds")
    seeds_path, _ = save_seeds(run_seeds(specs[:1], settings(profiles, methods=("srifty", "cgf")), [0, 1]), folder)
    timeline_path = folder / "timeline.json"
    timeline_path.write_text(json.dumps(timeline_records()), encoding="utf-8")
    return {"plan": plan_path, "cases": cases_path, "seeds": seeds_path, "timeline": timeline_path, "folder": folder}


def test_report_is_self_contained_and_labels_the_emulation(inputs: dict[str, Path]) -> None:
    path = build_report([inputs["plan"], inputs["cases"]], inputs["folder"] / "r.html", inputs["timeline"])
    page = path.read_text(encoding="utf-8")
    tags = StartTags()
    tags.feed(page)
    external = [(t, a) for t, a in tags.seen if (t == "script" and "src" in a) or t in ("link", "img", "iframe")]
    assert not external and tags.seen.count(("script", {})) >= 2
    assert "Plotly.newPlot" in page and len(page) > 3_000_000  # plotly.js itself is inlined
    # plan: 2 charts; two cases: 3 each; the timeline: 2 (iterations done, throughput; it records no loss).
    assert page.count('class="srifty-plot"') == 10
    assert "EMULATED cloud" in page and "inject_preempt" in page
    plan_only = build_report([inputs["plan"]], inputs["folder"] / "p.html").read_text(encoding="utf-8")
    assert "EMULATED cloud." not in plan_only  # a plan is srifty's prediction, not the emulation


def test_report_shows_each_methods_ratios_over_seeds_per_case(inputs: dict[str, Path]) -> None:
    page = build_report([inputs["seeds"]], inputs["folder"] / "s.html").read_text(encoding="utf-8")
    # all cases and seeds: 1 chart; the one case over its seeds: 1.
    assert page.count('class="srifty-plot"') == 2
    assert "over 2 seeds" in page and "small-case over seeds" in page and "ratio to the reference" in page


def test_report_rejects_what_it_cannot_show(inputs: dict[str, Path], tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ArtifactError, match="a report shows plans"):
        build_report([Path(__file__).parent / "data" / "tiny_mlp_schema1.json"], tmp_path / "x.html")
    bad = tmp_path / "timeline.json"
    bad.write_text(json.dumps([{"time_s": "soon", "iteration": 1, "event": "iteration"}]), encoding="utf-8")
    with pytest.raises(ArtifactError, match="record 0"):
        build_report([], tmp_path / "x.html", bad)
    code, _, err = cli("report", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x.html"))
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    code, out, _ = cli("report", str(inputs["plan"]), "--out", str(tmp_path / "ok.html"))
    assert code == 0 and (tmp_path / "ok.html").is_file() and "wrote" in out


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=15000", "--window-size=1280,3600", *args, page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(inputs: dict[str, Path], tmp_path: Path) -> None:
    from PIL import Image

    page = build_report([inputs["cases"]], tmp_path / "report.html", inputs["timeline"])
    charts = page.read_text(encoding="utf-8").count('class="srifty-plot"')
    assert charts >= 7
    dom = chromium(page, tmp_path / "profile-dom", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body is not None
    assert f'data-srifty-rendered="{charts}"' in body.group(0), body.group(0)[:500]
    assert "data-srifty-errors" not in body.group(0)
    assert dom.stdout.count('class="main-svg"') >= charts
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    boxes = json.loads(re.search(r'data-srifty-boxes="([^"]*)"', body.group(0)).group(1).replace("&quot;", '"'))  # type: ignore[union-attr]

    shot = tmp_path / "shot.png"
    result = chromium(page, tmp_path / "profile-shot", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    pixels = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)
    drawn = 0
    for left, top, width, height in boxes:
        region = pixels[top : top + height, left : left + width]
        if region.size == 0:
            continue
        ink = (np.abs(region - 255).sum(axis=2) > 60).mean()
        colours = len(np.unique(region.reshape(-1, 3) // 32, axis=0))
        assert ink > 0.01 and colours >= 4, (left, top, ink, colours)
        drawn += 1
    assert drawn >= 3  # charts below the window's height are checked through the DOM only


def test_a_run_timeline_shows_the_loss_curve_and_throughput_over_time(tmp_path: Path) -> None:
    from srifty.report.figures import launch_segments
    from srifty.report.sections import timeline_sections

    records: list[dict[str, object]] = [{"time_s": 0.0, "iteration": 0, "event": "launch"}]
    records += [{"time_s": 1.0 + i, "iteration": i, "event": "iteration", "loss": 2.0 / i} for i in range(1, 31)]
    records.append({"time_s": 31.5, "iteration": 20, "event": "relaunch", "from_checkpoint": 20})
    records += [
        {"time_s": 32.0 + i, "iteration": 20 + i, "event": "iteration", "loss": 2.0 / (20 + i)} for i in range(1, 11)
    ]
    assert [len(s) for s in launch_segments(records)] == [30, 10]  # the roll-back starts a second line
    (section,) = timeline_sections(records, "timeline.json")
    titles = [f.layout.title.text for f in section.figures]
    assert titles == [
        "iterations done against time",
        "training loss per iteration",
        "throughput over time (10-iteration window)",
    ]
    loss = section.figures[1]
    assert [len(t.x) for t in loss.data] == [30, 10] and loss.data[0].y[0] == 2.0
    rate = section.figures[2].data[0]
    assert all(abs(y - 1.0) < 1e-9 for y in rate.y)  # one iteration per second
    timeline = tmp_path / "timeline.json"
    timeline.write_text(json.dumps(records), encoding="utf-8")
    page = build_report([], tmp_path / "run.html", timeline).read_text(encoding="utf-8")
    assert page.count('class="srifty-plot"') == 3
