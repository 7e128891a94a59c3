"""Bad input, systematically: hypothesis strategies over every file srifty reads and its command-line
options, and one check that each case ends as a user mistake must: exit code 2, no traceback, and a
message naming the file or field (or option) at fault.

Each family draws :class:`Case` values (files to write, a command line, the names one of which the message
must contain); :func:`run_case` runs the command in-process and returns an :class:`Outcome`. The tests
(``tests/test_bad_input.py``) draw a few dozen cases per family; ``benchmarks/reliability.py`` draws
hundreds and counts them for BENCHMARKS.md.

Families: ``spec`` (job specs), ``profile``, ``probe-set``, ``bandwidth-model``, ``plan``, ``timeline``
(artefacts, through the commands that read them), ``decision-log`` and ``testbed-state`` (read by the
Python API only: no command reads them yet), and ``options`` (zero, negative, absurd and non-numeric
command-line options). Host files do not exist yet (issue 15 adds them): :data:`FAMILIES` is where their
family goes, with the spec family's mutations as the model.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import shutil
import tempfile
import traceback
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
TINY_PROFILE = REPO / "examples" / "profiles" / "srifty.compute.zoo-tiny_mlp__cpu.json"
NET_DATA = REPO / "src" / "srifty" / "network" / "data"

BASE_SPEC: dict[str, Any] = {
    "model": "resnet50",
    "global_batch": 64,
    "iterations": 100,
    "goal": "min_time",
    "region": "us-east-1",
    "candidates": [{"instance_type": "g4dn.xlarge", "market": "spot", "quota": 4}],
}
TINY_SPEC: dict[str, Any] = {
    "model": {"name": "srifty.compute.zoo:tiny_mlp", "profiles": ["p.json"]},
    "global_batch": 32,
    "iterations": 30,
    "goal": "min_cost",
    "region": "us-east-1",
    "candidates": [{"instance_type": "g4dn.xlarge", "market": "spot", "quota": 2}],
}


@dataclass(frozen=True)
class Case:
    """One bad input.

    Attributes:
        family: which family drew it.
        argv: the srifty command line; ``{dir}`` stands for the case's own folder. ``()`` for API families.
        files: ``(name, content)`` written into the folder first.
        names: the message must contain one of these (a file name, a field, an option).
        may_succeed: the input is odd but valid (an absurd size, a field changed to another valid value):
            exit code 0 is right too. Never a traceback.
        api: for families no command reads: called with the folder; a ``SriftyError`` counts as exit code 2.
        label: what was done to the input, for reports.
    """

    family: str
    argv: tuple[str, ...] = ()
    files: tuple[tuple[str, bytes], ...] = ()
    names: tuple[str, ...] = ()
    may_succeed: bool = False
    api: Callable[[Path], object] | None = field(default=None, compare=False)
    label: str = ""


@dataclass(frozen=True)
class Outcome:
    """How a case ended."""

    case: Case
    code: int | None
    traceback: str | None
    message: str

    @property
    def named(self) -> bool:
        """Whether the message names one of the case's names (ignoring whitespace and the control characters
        a terminal cannot show, which Rich leaves out)."""
        if not self.case.names:
            return True
        text = _plain(self.message)
        return any(_plain(n) in text for n in self.case.names)

    @property
    def wrong_exit(self) -> bool:
        """An exit code other than 2 (or 0 for a case that may succeed)."""
        allowed = (0, 2) if self.case.may_succeed else (2,)
        return self.traceback is None and self.code not in allowed

    @property
    def ok(self) -> bool:
        """No traceback, the right exit code, and a message naming the fault when it failed."""
        return self.traceback is None and not self.wrong_exit and (self.code == 0 or self.named)

    def explain(self) -> str:
        """A few lines for an assertion message."""
        head = f"{self.case.family} [{self.case.label}] argv={self.case.argv} code={self.code} names={self.case.names}"
        return head + "\n" + (self.traceback or self.message)[-2500:]


def _plain(text: str) -> str:
    visible = "".join(c for c in text if not unicodedata.category(c).startswith("C") or c in " \n\t")
    return " ".join(visible.split())


def run_case(case: Case, base: Path) -> Outcome:
    """Write the case's files into a fresh folder under ``base``, run it in-process, and clean up."""
    from srifty.cli.main import run
    from srifty.errors import SriftyError

    folder = Path(tempfile.mkdtemp(dir=base))
    try:
        for name, content in case.files:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(content)
        argv = [a.replace("{dir}", str(folder)) for a in case.argv]
        out, err = io.StringIO(), io.StringIO()
        code: int | None = None
        caught: str | None = None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if case.api is not None:
                    try:
                        case.api(folder)
                        code = 0
                    except SriftyError as error:
                        print(f"error: {error}", file=err)
                        code = 2
                else:
                    run(argv)
                    code = 0
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            except KeyboardInterrupt:
                raise
            except BaseException:  # a bug: the traceback is the finding
                caught = traceback.format_exc()
        message = err.getvalue()
        if caught is None and "Traceback (most recent call last)" in message:
            caught = message
        return Outcome(case, code, caught, message)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- values

#: Text that is never a number, a known name, or blank.
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
WORDS = st.text(alphabet=st.characters(exclude_categories=SURROGATES), min_size=1, max_size=30).filter(
    lambda s: s.strip() != "" and not _numeric(s)
)
NOT_NUMBERS = st.one_of(
    WORDS,
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), min_size=1, max_size=2),
)
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])


def _numeric(text: str) -> bool:
    try:
        float(text)
    except (ValueError, OverflowError):
        return False
    return True


def bad_count(low: int, high: int | None = None) -> st.SearchStrategy[Any]:
    """Values a count with ``low ≤ n ≤ high`` must refuse."""
    options = [
        st.integers(max_value=low - 1),
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)),
        NON_FINITE,
        NOT_NUMBERS,
    ]
    if high is not None:
        options.append(st.integers(min_value=high + 1))
    return st.one_of(*options)


def bad_positive_number() -> st.SearchStrategy[Any]:
    """Values a positive number of seconds or dollars must refuse."""
    return st.one_of(st.floats(max_value=0, allow_nan=False), st.just(math.nan), NOT_NUMBERS)


def bad_non_negative_number() -> st.SearchStrategy[Any]:
    return st.one_of(st.floats(max_value=-1e-9, allow_nan=False), st.just(math.nan), NOT_NUMBERS)


def choice_not_in(valid: set[str]) -> st.SearchStrategy[Any]:
    return st.one_of(WORDS.filter(lambda s: s.strip().lower().replace("-", "_") not in valid), st.integers())


# ------------------------------------------------------------------------------------------------ spec


def _yaml(doc: Any) -> bytes:
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode("utf-8")


def _spec_case(doc: Any, names: tuple[str, ...], label: str, may_succeed: bool = False) -> Case:
    return Case("spec", ("plan", "{dir}/job.yaml"), (("job.yaml", _yaml(doc)),), names, may_succeed, label=label)


SPEC_FIELDS: dict[str, tuple[tuple[str | int, ...], st.SearchStrategy[Any]]] = {
    "global_batch": ((), bad_count(1, 2**24)),
    "iterations": ((), bad_count(1)),
    "deadline_s": ((), bad_positive_number()),
    "budget_usd": ((), bad_positive_number()),
    "goal": ((), choice_not_in({"min_time", "min_cost"})),
    "cloud": ((), choice_not_in({"aws", "gcp", "azure"})),
    "region": ((), choice_not_in({"us_east_1"}).filter(lambda v: not isinstance(v, int))),
    "seed": ((), st.one_of(WORDS, st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != int(x)))),
    "schema_version": ((), st.integers().filter(lambda v: v != 1) | WORDS),
    "model": ((), st.one_of(st.integers(), st.lists(st.integers(), max_size=2), st.just({}), st.just({"name": ""}))),
    "candidates": ((), st.one_of(st.just([]), st.integers(), WORDS, st.lists(st.integers(), min_size=1, max_size=2))),
    "instance_type": (("candidates", 0), WORDS),
    "market": (("candidates", 0), choice_not_in({"spot", "on_demand", "ondemand"})),
    "quota": (("candidates", 0), bad_count(1, 100_000)),
    "zone": (("candidates", 0), WORDS),
    "vm_launch_s": (("overheads",), bad_non_negative_number()),
    "checkpoint_restore_s": (("overheads",), bad_non_negative_number()),
    "precision": (("model",), choice_not_in({"fp32", "bf16"})),
    "seq_len": (("model",), bad_count(1)),
    "network_model": ((), st.one_of(WORDS, st.integers(), st.lists(st.integers(), max_size=2))),
    "profiles": (("model",), st.one_of(st.lists(WORDS, min_size=1, max_size=2), st.integers(), WORDS)),
    "emulation": ((), st.one_of(st.integers(), WORDS, st.just({"preemptions": [{"at_iteration": 0}]}))),
}


def _set(doc: dict[str, Any], path: tuple[Any, ...], key: str, value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(doc))
    node = out
    for part in path:
        if part == "model" and isinstance(node.get("model"), str):
            node["model"] = {"name": node["model"]}
        if part == "overheads" and "overheads" not in node:
            node["overheads"] = {}
        node = node[part]
    node[key] = value
    return out


@st.composite
def spec_cases(draw: st.DrawFn) -> Case:
    kind = draw(st.sampled_from(["field", "unknown_key", "file", "absurd", "duplicate"]))
    if kind == "field":
        name = draw(st.sampled_from(sorted(SPEC_FIELDS)))
        path, values = SPEC_FIELDS[name]
        value = draw(values)
        doc = _set(BASE_SPEC, path, name, value)
        shown = (
            [value.strip()]
            if isinstance(value, str)
            else [v.strip() for v in value if isinstance(v, str)]
            if isinstance(value, list)
            else []
        )
        return _spec_case(doc, (name, "job.yaml", *shown), f"{name} = {value!r:.40}")
    if kind == "unknown_key":
        where = draw(st.sampled_from([(), ("model",), ("candidates", 0), ("overheads",)]))
        key = draw(st.text(min_size=1, max_size=20).filter(lambda k: k.strip() and k not in _all_fields()))
        doc = _set(BASE_SPEC, where, key, draw(st.integers() | st.text(max_size=5)))
        return _spec_case(doc, (key.strip(), "unknown key"), f"unknown key {key!r}")
    if kind == "file":
        content = draw(
            st.one_of(
                st.just(b""),
                st.binary(min_size=1, max_size=200),
                st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
                st.sampled_from([b"- a\n- b\n", b"42\n", b"'just a string'\n", b"model: [unclosed\n", b"\x00\x01"]),
            )
        )
        return Case("spec", ("plan", "{dir}/job.yaml"), (("job.yaml", content),), ("job.yaml",), label="whole file")
    if kind == "duplicate":
        doc = _set(BASE_SPEC, (), "candidates", [BASE_SPEC["candidates"][0]] * 2)
        return _spec_case(doc, ("listed twice",), "duplicate candidate")
    # valid but absurd: must not hang, crash or run out of memory
    name, value = draw(
        st.one_of(
            st.tuples(st.just("iterations"), st.integers(10**6, 10**30)),
            st.tuples(st.just("deadline_s"), st.floats(1e-9, 1e300)),
            st.tuples(st.just("budget_usd"), st.floats(1e-9, 1e300) | st.just(math.inf)),
            st.tuples(st.just("global_batch"), st.integers(1, 2**24)),
        )
    )
    return _spec_case(_set(BASE_SPEC, (), name, value), (), f"absurd {name} = {value!r:.30}", may_succeed=True)


@functools.cache
def _all_fields() -> frozenset[str]:
    from srifty.spec.model import CandidateSpec, JobSpec, ModelSpec, OverheadSpec

    models = (JobSpec, ModelSpec, CandidateSpec, OverheadSpec)
    return frozenset(name for m in models for name in m.model_fields)


# ------------------------------------------------------------------------------------------- artefacts


def _json_mutations(base: bytes, kind: str) -> st.SearchStrategy[tuple[bytes, str, bool]]:
    """``(content, label, may_succeed)``: truncated, wrong kind, newer or broken schema version, a NaN or
    infinity somewhere, a leaf or key changed at random, or garbage."""
    doc = json.loads(base)
    leaves = _leaf_paths(doc)

    @st.composite
    def draw_one(draw: st.DrawFn) -> tuple[bytes, str, bool]:
        kinds = ["truncate", "kind", "version", "nan", "leaf", "drop", "garbage"]
        if not isinstance(doc, dict):
            kinds = [k for k in kinds if k not in ("kind", "version")]
        what = draw(st.sampled_from(kinds))
        if what == "truncate":
            cut = draw(st.integers(0, len(base) - 2))
            return base[:cut], f"truncated at {cut}", False
        if what == "kind":
            other = draw(st.one_of(WORDS.filter(lambda k: k != kind), st.integers(), st.none()))
            return _dumps({**doc, "kind": other}), f"kind {other!r:.30}", False
        if what == "version":
            version = draw(st.one_of(st.integers(min_value=100), st.integers(max_value=0), WORDS, st.none()))
            return _dumps({**doc, "schema_version": version}), f"schema_version {version!r:.30}", False
        if what == "nan":
            path = draw(st.sampled_from([p for p in leaves if isinstance(_get(doc, p), float | int)] or leaves))
            value = draw(NON_FINITE)
            return _dumps(_replace(doc, path, value)), f"{value} at {_show(path)}", False
        if what == "leaf":
            path = draw(st.sampled_from(leaves))
            leaf = draw(st.one_of(st.none(), st.integers(), st.text(max_size=8), st.lists(st.integers(), max_size=2)))
            return _dumps(_replace(doc, path, leaf)), f"{_show(path)} = {leaf!r:.30}", True
        if what == "drop":
            path = draw(st.sampled_from(leaves))
            return _dumps(_replace(doc, path, _DROP)), f"no {_show(path)}", True
        garbage = draw(st.one_of(st.binary(max_size=100), st.just(b""), st.just(b"[]"), st.just(b'"text"')))
        return garbage, "garbage", False

    return draw_one()


_DROP = object()


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=1).encode("utf-8")


def _leaf_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in _leaf_paths(v, (*prefix, k))] or [prefix]
    if isinstance(doc, list) and doc:
        return [p for i, v in enumerate(doc[:3]) for p in _leaf_paths(v, (*prefix, i))]
    return [prefix]


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return doc if value is _DROP else value
    copy: Any = dict(doc) if isinstance(doc, dict) else list(doc)
    head, rest = path[0], path[1:]
    if not rest and value is _DROP:
        del copy[head]
    else:
        copy[head] = _replace(doc[head], rest, value)
    return copy


def _show(path: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in path) or "(root)"


@st.composite
def profile_cases(draw: st.DrawFn) -> Case:
    content, label, may = draw(_json_mutations(TINY_PROFILE.read_bytes(), "profile"))
    if draw(st.booleans()):
        return Case(
            "profile", ("profile", "show", "{dir}/p.json"), (("p.json", content),), ("p.json",), may, label=label
        )
    files = (("p.json", content), ("job.yaml", _yaml(TINY_SPEC)))
    return Case("profile", ("plan", "{dir}/job.yaml"), files, ("p.json",), may, label=f"{label} (plan)")


@functools.cache
def _probe_base() -> tuple[bytes, bytes]:
    """A small valid probe set (Parquet and CSV) drawn from the embedded one."""
    import pandas as pd

    from srifty.network.dataset import _to_parquet_bytes, read_probes

    frame = read_probes(NET_DATA / "testbed-probes.parquet")
    small = frame[frame["size_bytes"] <= 9001].sample(30, random_state=0)
    large = frame[frame["size_bytes"] > 9001].sample(30, random_state=0)
    both = pd.concat([small, large]).reset_index(drop=True)
    return _to_parquet_bytes(both), both.to_csv(index=False).encode()


PROBE_ARGS = ("--trials", "0", "--folds", "2", "--jobs", "1", "--out", "{dir}/m/net.json")


@st.composite
def probe_cases(draw: st.DrawFn) -> Case:
    parquet, csv = _probe_base()
    what = draw(st.sampled_from(["truncate", "flip", "garbage", "csv_column", "csv_value", "empty_csv"]))
    if what in ("truncate", "flip", "garbage"):
        if what == "truncate":
            cut = draw(st.integers(0, len(parquet) - 1))
            content, label, may = parquet[:cut], f"truncated at {cut}", False
        elif what == "flip":
            at = draw(st.integers(0, len(parquet) - 1))
            content = parquet[:at] + bytes([parquet[at] ^ 0xFF]) + parquet[at + 1 :]
            label, may = f"byte {at} flipped", True
        else:
            content, label, may = draw(st.binary(max_size=200)), "garbage", False
        files = (("p.parquet", content),)
        return Case("probe-set", ("fit-net", "{dir}/p.parquet", *PROBE_ARGS), files, ("p.parquet",), may, label=label)
    import pandas as pd

    frame = pd.read_csv(io.BytesIO(csv))
    # the model learns busbw from size and world size; other columns are context it may do without
    needed = ["busbw_bytes_per_s", "size_bytes", "world_size"]
    may = False
    if what == "csv_column":
        column = draw(st.sampled_from([*needed, "time_s", "n_nodes", "timestamp_s"]))
        frame = frame.drop(columns=[column])
        label, may = f"no column {column}", column not in needed
    elif what == "csv_value":
        column = draw(st.sampled_from([*needed, "time_s", "timestamp_s"]))
        value = draw(st.one_of(NON_FINITE, st.just(-1.0), st.just(0.0), st.just("x")))
        row = draw(st.integers(0, len(frame) - 1))
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
        label, may = f"{column}[{row}] = {value!r}", column not in needed
    else:
        frame = frame.iloc[:0]
        label = "no rows"
    files = (("p.csv", frame.to_csv(index=False).encode()),)
    return Case("probe-set", ("fit-net", "{dir}/p.csv", *PROBE_ARGS), files, ("p.csv",), may, label=label)


def _net_spec() -> bytes:
    return _yaml({**BASE_SPEC, "network_model": "net.json"})


SIM_ARGS = ("simulate", "{dir}/job.yaml", "--config", "2xg4dn.xlarge@32", "--iters", "5")


@st.composite
def model_cases(draw: st.DrawFn) -> Case:
    meta = (NET_DATA / "default-net.meta.json").read_bytes()
    doc = json.loads(meta)
    boosters = {side: (NET_DATA / doc["files"][side]["file"]).read_bytes() for side in ("small", "large")}
    what = draw(st.sampled_from(["meta", "missing", "booster"]))
    files = {"job.yaml": _net_spec(), "net.meta.json": meta}
    files.update({doc["files"][side]["file"]: raw for side, raw in boosters.items()})
    names: tuple[str, ...] = ("net.meta.json",)
    if what == "meta":
        content, label, may = draw(_json_mutations(meta, "bandwidth-model"))
        files["net.meta.json"] = content
    elif what == "missing":
        side = draw(st.sampled_from(["small", "large"]))
        del files[doc["files"][side]["file"]]
        label, may, names = f"no {side} booster", False, (doc["files"][side]["file"],)
    else:
        side = draw(st.sampled_from(["small", "large"]))
        raw = boosters[side]
        cut = draw(st.integers(0, len(raw) - 1))
        files[doc["files"][side]["file"]] = raw[:cut] + b"x"
        label, may, names = f"{side} booster cut at {cut}", False, (doc["files"][side]["file"],)
    return Case("bandwidth-model", SIM_ARGS, tuple(files.items()), names, may, label=label)


@functools.cache
def _plan_base() -> tuple[bytes, bytes]:
    """A plan of the tiny spec (and the spec, whose digest the plan records)."""
    from srifty.plan.api import plan_spec

    folder = Path(tempfile.mkdtemp(prefix="srifty-badinput-"))
    try:
        (folder / "p.json").write_bytes(TINY_PROFILE.read_bytes())
        (folder / "job.yaml").write_bytes(_yaml(TINY_SPEC))
        plan, _ = plan_spec(folder / "job.yaml")
        return plan.save(folder / "plan.json").read_bytes(), (folder / "job.yaml").read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@st.composite
def plan_cases(draw: st.DrawFn) -> Case:
    plan, spec = _plan_base()
    content, label, may = draw(_json_mutations(plan, "plan"))
    files = (("plan.json", content), ("job.yaml", spec), ("p.json", TINY_PROFILE.read_bytes()))
    if may:  # it may be a valid plan: read it with the report, never start training from it
        argv: tuple[str, ...] = ("report", "{dir}/plan.json", "--out", "{dir}/r.html")
    else:
        argv = ("run", "{dir}/job.yaml", "--plan", "{dir}/plan.json", "--run-dir", "{dir}/run", "--", "false")
    return Case("plan", argv, files, ("plan.json",), may, label=label)


TIMELINE = [
    {"time_s": 0.0, "iteration": 0, "event": "launch", "config": "2xg4dn.xlarge@16"},
    {"time_s": 1.5, "iteration": 5, "event": "iteration", "loss": 2.1},
    {"time_s": 3.0, "iteration": 10, "event": "finished"},
]


@st.composite
def timeline_cases(draw: st.DrawFn) -> Case:
    base = _dumps(TIMELINE)
    what = draw(st.sampled_from(["json", "record"]))
    if what == "json":
        content, label, may = draw(_json_mutations(base, "timeline"))
        may = may and not label.startswith("(root)")
    else:
        index = draw(st.integers(0, len(TIMELINE) - 1))
        key = draw(st.sampled_from(["time_s", "iteration", "event"]))
        value = draw(st.one_of(NON_FINITE, st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=1)))
        if key == "event" and isinstance(value, str):
            value = 3
        records = [dict(r) for r in TIMELINE]
        records[index][key] = value
        content, label, may = _dumps(records), f"record {index} {key} = {value!r}", False
    argv = ("report", "--timeline", "{dir}/t.json", "--out", "{dir}/r.html")
    return Case("timeline", argv, (("t.json", content),), ("t.json",), may, label=label)


def _read_log(folder: Path) -> object:
    from srifty.runtime.decisions import DecisionLog

    return DecisionLog(folder / "decisions.jsonl").read()


@st.composite
def decision_log_cases(draw: st.DrawFn) -> Case:
    lines = [
        json.dumps(
            {"time_s": 0.0, "iteration": 0, "action": "start", "reason": "go", "config": "1xa@1", "details": {}}
        ),
        json.dumps(
            {"time_s": 9.0, "iteration": 30, "action": "finish", "reason": "done", "config": None, "details": {}}
        ),
    ]
    what = draw(st.sampled_from(["middle", "torn_last", "garbage"]))
    if what == "middle":
        bad = draw(st.one_of(st.just("{"), st.just("[]"), st.just('{"action": 3}'), WORDS.map(str)))
        content = "\n".join([lines[0], bad, lines[1]]) + "\n"
        return Case("decision-log", files=(("decisions.jsonl", content.encode()),), names=("decisions.jsonl",),
                    api=_read_log, label=f"line 2 = {bad!r:.30}")  # fmt: skip
    if what == "torn_last":  # a crash while appending: the complete lines are kept, no error
        cut = draw(st.integers(1, len(lines[1]) - 1))
        content = lines[0] + "\n" + lines[1][:cut]
        return Case("decision-log", files=(("decisions.jsonl", content.encode()),), may_succeed=True,
                    api=_read_log, label=f"last line torn at {cut}")  # fmt: skip
    content_b = draw(st.binary(min_size=1, max_size=100))
    return Case("decision-log", files=(("decisions.jsonl", content_b),), names=("decisions.jsonl",),
                may_succeed=True, api=_read_log, label="garbage")  # fmt: skip


def _read_state(folder: Path) -> object:
    from srifty.network.testbed.state import read_state

    return read_state(folder / "tb.json")


@functools.cache
def _state_base() -> bytes:
    from srifty.network.testbed.state import TestbedHost, TestbedState, write_state

    state = TestbedState(
        name="tb", instance_type="g4dn.8xlarge", gpu="T4", gpus_per_host=1, rated_network_gbps=50.0,
        emulation_scale=50.0, family_shaped_gbps=1.0, allocation_id="tb-x", seed=0, allocation_factor=1.0,
        hosts=(TestbedHost(0, "srifty-tb-h0", "sft-tb-0", "10.213.0.1", 1.0, 1.0),),
        mtu_bytes=9000, intra_node_shaped_gbps=None, created_s=0.0,
    )  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="srifty-badinput-"))
    try:
        return write_state(state, folder).read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@st.composite
def state_cases(draw: st.DrawFn) -> Case:
    content, label, may = draw(_json_mutations(_state_base(), "testbed-state"))
    return Case("testbed-state", files=(("tb.json", content),), names=("tb.json",), may_succeed=may, api=_read_state,
                label=label)  # fmt: skip


# ---------------------------------------------------------------------------------------------- options

SPEC_FILE = (("job.yaml", _yaml(BASE_SPEC)),)
PROFILE_MIN = {
    "--max-batch": 1, "--warmup": 0, "--threads": 1, "--seq-len": 1, "--image-size": 1, "--iters": 2,
    "--max-probes": 2, "--op-iters": 1, "--interference-reps": 1,
}  # fmt: skip
FIT_MIN = {"--mtu-bytes": 1, "--trials": 0, "--folds": 2, "--jobs": 1}


def _text_value(value: Any) -> str:
    """A value as it would be typed (a command line cannot hold a NUL byte)."""
    text = value if isinstance(value, str) else str(value)
    return text.replace("\x00", "")


@st.composite
def option_cases(draw: st.DrawFn) -> Case:
    command = draw(st.sampled_from(["plan", "simulate", "profile", "fit-net", "run", "testbed-up"]))
    files: tuple[tuple[str, bytes], ...] = SPEC_FILE
    if command == "plan":
        option = draw(st.sampled_from(["--top-k", "--max-sim-calls", "--iters", "--mode", "--method"]))
        if option in ("--mode", "--method"):
            value = draw(choice_not_in({"auto", "exhaustive", "ilp", "srifty", "apm", "cgf", "fgf", "paleo"}))
        else:
            value = draw(bad_count(1 if option == "--iters" else 0))
        argv: tuple[str, ...] = ("plan", "{dir}/job.yaml", option, _text_value(value))
    elif command == "simulate":
        option = draw(st.sampled_from(["--iters", "--config", "--transfers", "--overlap"]))
        if option == "--iters":
            value = _text_value(draw(bad_count(1)))
        elif option == "--config":
            value = draw(
                st.one_of(
                    WORDS,
                    st.builds("{}xg4dn.xlarge@{}".format, st.integers(-5, 0), st.integers(1, 64)),
                    st.builds("2xg4dn.xlarge@{}".format, st.integers(10**4, 10**30)),
                )
            )
        else:
            value = _text_value(draw(choice_not_in({"bucket", "layer", "fair_share", "sequential"})))
        argv = ("simulate", "{dir}/job.yaml", option, value) + (
            () if option == "--config" else ("--config", "2xg4dn.xlarge@32")
        )
    elif command == "profile":
        option = draw(st.sampled_from([*PROFILE_MIN, "--bucket-cap-mb", "--memory-limit", "--device", "--precision"]))
        if option in PROFILE_MIN:
            value = _text_value(draw(st.one_of(st.integers(max_value=PROFILE_MIN[option] - 1), WORDS)))
        elif option == "--bucket-cap-mb":
            value = _text_value(draw(st.one_of(st.floats(max_value=0), NON_FINITE, WORDS)))
        elif option == "--memory-limit":
            value = draw(st.one_of(WORDS, st.integers(max_value=0).map(str), st.just("-1GiB")))
        else:
            value = _text_value(draw(choice_not_in({"cpu", "fp32", "bf16", "fp16"})))
        argv = ("profile", "--model", "srifty.compute.zoo:tiny_mlp", option, value, "--out", "{dir}/p.json")
        files = ()
    elif command == "fit-net":
        option = draw(st.sampled_from([*FIT_MIN, "--half-life-days", "--target"]))
        if option in FIT_MIN:
            value = _text_value(draw(st.one_of(st.integers(max_value=FIT_MIN[option] - 1), WORDS)))
        elif option == "--half-life-days":
            value = _text_value(draw(st.one_of(st.floats(max_value=-1e-9), st.just(math.nan), WORDS)))
        else:
            value = _text_value(draw(choice_not_in({"auto", "link_fraction", "busbw"})))
        files = (("p.parquet", _probe_base()[0]),)
        argv = ("fit-net", "{dir}/p.parquet", "--trials", "0", "--out", "{dir}/m/net.json", option, value)
    elif command == "run":
        option = draw(st.sampled_from(["--hang-timeout", "--ckpt-every", "--preempt-at", "--preempt-rank"]))
        if option == "--hang-timeout":
            value = _text_value(draw(st.one_of(st.floats(max_value=0), NON_FINITE, WORDS)))
        elif option == "--ckpt-every":
            value = _text_value(draw(st.one_of(st.integers(max_value=0), WORDS)))
        elif option == "--preempt-at":
            value = _text_value(draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=100), WORDS)))
        else:
            value = _text_value(draw(st.one_of(st.integers(max_value=-1), st.integers(min_value=1), WORDS)))
        extra = ("--preempt-at", "1") if option == "--preempt-rank" else ()
        argv = ("run", "{dir}/job.yaml", "--config", "1xg4dn.xlarge@64", "--run-dir", "{dir}/run", option, value,
                *extra, "--", "false")  # fmt: skip
    else:
        option = draw(st.sampled_from(["--hosts", "--scale", "--gpus-per-host"]))
        if option == "--hosts":
            value = _text_value(draw(st.one_of(st.integers(max_value=0), st.integers(min_value=65), WORDS)))
        elif option == "--scale":
            value = _text_value(draw(st.one_of(st.floats(max_value=0.999), st.just(math.nan), WORDS)))
        else:
            value = _text_value(draw(st.one_of(st.integers(max_value=0), WORDS)))
        argv = ("testbed", "up", "--name", "zzfuzz"[:6], option, value)
        files = ()
    return Case("options", argv, files, (option,), label=f"{command} {option} {value!r:.30}")


FAMILIES: dict[str, st.SearchStrategy[Case]] = {
    "spec": spec_cases(),
    "profile": profile_cases(),
    "probe-set": probe_cases(),
    "bandwidth-model": model_cases(),
    "plan": plan_cases(),
    "timeline": timeline_cases(),
    "decision-log": decision_log_cases(),
    "testbed-state": state_cases(),
    "options": option_cases(),
    # "host-file": issue 15 adds host files; its family goes here (lines with random addresses, instance
    # types and markets, duplicates, comments, binary and empty files), checked by the same run_case.
}
