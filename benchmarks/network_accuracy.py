"""Bus-bandwidth model accuracy: on public nccl-tests tables of real clusters and on the emulated testbed.

Writes BENCHMARKS.md "Bus-bandwidth model accuracy":

1. nccl-tests, alternate sizes held out (median per-table MAPE above and below the MTU, beside log-log
   interpolation) and leave one fabric out (beside the rated link and alpha-beta); see
   ``benchmarks/network_public.py``;
2. the testbed, held-out allocations, as in the paper's "Allreduce Bandwidth Model Accuracy" (23.9 % ≤ MTU,
   11.7 % > MTU), against alpha-beta and the noise floor;
3. the share of held-out points inside the predicted 80 % interval, in each protocol;
4. the embedded default against public measurements it was not fitted on.

Testbed protocol: the probe set is split into folds **grouped by allocation** (no allocation is on both
sides). In each fold, srifty's model is tuned (Optuna, inner cross-validation also grouped by allocation)
and fitted on the training allocations only, and so is the alpha-beta baseline; both predict every row
of the held-out allocations. The noise floor predicts each row by the mean bus bandwidth of the *other*
allocations with the same configuration (family, world size, GPUs per node, concurrency, size): the
error left by placement variance alone. (The mean is not the MAPE-optimal guess, so a robust model can
come in slightly under it.)

Run from the repository root (heavy: hold the CPU lock on a shared machine):

    flock /tmp/srifty-cpu.lock python -m benchmarks.network_accuracy --write

Raw figures go to ``--save`` (``benchmarks/results/network_accuracy.json``); ``--before FILE`` puts the
figures of an earlier run (its ``--save`` file) beside this one's. The same
protocols run on older versions of the model: the script needs only ``BandwidthModel`` and
``AlphaBetaModel`` from ``srifty.network``, plus ``srifty.network.public`` and its data files.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from benchmarks import network_public as public
from benchmarks.common import markdown_table
from srifty.artifacts import atomic_write_text
from srifty.network import (
    BandwidthModel,
    busbw_cap_bytes_per_s,
    default_probes_path,
    grouped_folds,
    load_default_model,
    mape,
    read_probes,
)
from srifty.network.probe import cpu_model
from srifty.plan import AlphaBetaModel

REPO = Path(__file__).resolve().parents[1]
SECTION = "## Bus-bandwidth model accuracy"
CONFIG_COLUMNS = (
    "instance_type",
    "rated_network_gbps",
    "world_size",
    "gpus_per_node",
    "n_concurrent",
    "size_bytes",
)
PAPER = {"small": "23.9 % (floor 9.6 %)", "large": "11.7 % (floor 8.2 %)", "all": "—"}
FloatArray = npt.NDArray[np.float64]


def noise_floor_predictions(frame: pd.DataFrame, config: Sequence[str] = CONFIG_COLUMNS) -> FloatArray:
    """Each row's prediction by the mean ``busbw`` of the other allocations' rows of its configuration
    (NaN where no other allocation measured that configuration)."""
    keys = [c for c in config if c in frame.columns]
    by_config = frame.groupby(keys, dropna=False, sort=False)["busbw_bytes_per_s"]
    total, count = by_config.transform("sum").to_numpy(), by_config.transform("count").to_numpy()
    by_alloc = frame.groupby([*keys, "allocation_id"], dropna=False, sort=False)["busbw_bytes_per_s"]
    own_total, own_count = by_alloc.transform("sum").to_numpy(), by_alloc.transform("count").to_numpy()
    others = count - own_count
    with np.errstate(invalid="ignore", divide="ignore"):
        pred = (total - own_total) / others
    return np.where(others > 0, pred, np.nan)


#: Predictors compared, in table order: srifty, the alpha-beta baseline fitted over all sizes (as APM),
#: the same split at the MTU like srifty, the rated link, and the noise floor.
PREDICTORS = ("srifty", "alpha_beta", "alpha_beta_split", "rated_link", "noise_floor")


def _alpha_beta_split(train: pd.DataFrame, test: pd.DataFrame, mtu_bytes: int) -> FloatArray:
    """Alpha-beta fitted separately on each side of the MTU, as srifty's model is."""
    out = np.full(len(test), np.nan)
    small_test = (test["size_bytes"] <= mtu_bytes).to_numpy()
    small_train = (train["size_bytes"] <= mtu_bytes).to_numpy()
    for test_mask, train_mask in ((small_test, small_train), (~small_test, ~small_train)):
        if test_mask.any():
            model = AlphaBetaModel().fit(train[train_mask])
            out[test_mask] = model.predict_busbw_bytes_per_s(test[test_mask])
    return out


def cross_validated(frame: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """Held-out predictions of every predictor in :data:`PREDICTORS`, per row, and srifty's 80 % interval
    (``low``, ``high``; NaN for a model without intervals)."""
    rng = np.random.default_rng(args.seed)
    folds = grouped_folds(frame["allocation_id"].astype(str).to_numpy(), args.folds, rng)
    out = pd.DataFrame(np.nan, index=frame.index, columns=[*PREDICTORS, "low", "high"])
    for i, (train, test) in enumerate(folds):
        start = time.perf_counter()
        train_frame, held_out = frame.iloc[train], frame.iloc[test]
        model = BandwidthModel(n_trials=args.trials, n_folds=3, seed=args.seed + i).fit(train_frame)
        out.iloc[test, 0] = model.predict_busbw_bytes_per_s(held_out)
        out.iloc[test, 1] = AlphaBetaModel().fit(train_frame).predict_busbw_bytes_per_s(held_out)
        out.iloc[test, 2] = _alpha_beta_split(train_frame, held_out, args.mtu_bytes)
        if hasattr(model, "predict_busbw_interval"):
            low, high = model.predict_busbw_interval(held_out, 0.8)
            out.iloc[test, len(PREDICTORS)] = low
            out.iloc[test, len(PREDICTORS) + 1] = high
        print(
            f"testbed fold {i + 1}/{len(folds)}: {len(train)} train rows, {len(test)} test rows, "
            f"{time.perf_counter() - start:.0f} s",
            flush=True,
        )
    cap = busbw_cap_bytes_per_s(frame)
    out["rated_link"] = np.where(np.isfinite(cap), cap, np.nan)
    out["noise_floor"] = noise_floor_predictions(frame)
    return out


def _mape_pct(truth: FloatArray, pred: FloatArray, mask: npt.NDArray[np.bool_]) -> float:
    ok = mask & np.isfinite(pred)
    return 100 * mape(truth[ok], pred[ok]) if ok.any() else float("nan")


def _coverage_pct(truth: FloatArray, low: FloatArray, high: FloatArray, mask: npt.NDArray[np.bool_]) -> float:
    ok = mask & np.isfinite(low)
    return 100 * float(((truth >= low) & (truth <= high))[ok].mean()) if ok.any() else float("nan")


def summarise(frame: pd.DataFrame, preds: pd.DataFrame, mtu_bytes: int) -> pd.DataFrame:
    """MAPE (%) of each predictor for ≤ MTU, > MTU and all rows (rows a predictor cannot predict, such
    as a configuration no other allocation measured, are left out of its figure), and srifty's interval
    coverage (%)."""
    truth = frame["busbw_bytes_per_s"].to_numpy(dtype=np.float64)
    small = frame["size_bytes"].to_numpy() <= mtu_bytes
    low, high = preds["low"].to_numpy(dtype=np.float64), preds["high"].to_numpy(dtype=np.float64)
    rows = []
    for side, mask in (("small", small), ("large", ~small), ("all", np.ones_like(small))):
        row: dict[str, object] = {"side": side, "rows": int(mask.sum())}
        row.update({name: _mape_pct(truth, preds[name].to_numpy(dtype=np.float64), mask) for name in PREDICTORS})
        row["coverage"] = _coverage_pct(truth, low, high, mask)
        rows.append(row)
    return pd.DataFrame(rows)


def by_group(frame: pd.DataFrame, preds: pd.DataFrame, column: str) -> list[dict[str, object]]:
    """MAPE (%) of each predictor by one column (world size or family), all message sizes together."""
    truth = frame["busbw_bytes_per_s"].to_numpy(dtype=np.float64)
    rows = []
    for value in sorted(frame[column].unique()):
        mask = (frame[column] == value).to_numpy()
        row: dict[str, object] = {column: value.item() if hasattr(value, "item") else value}
        row.update({name: _mape_pct(truth, preds[name].to_numpy(dtype=np.float64), mask) for name in PREDICTORS})
        rows.append(row)
    return rows


def prediction_cost_ms(model: Any, n_rows: int = 200, calls: int = 50) -> float:
    """Median wall time (ms) of one ``predict_busbw_bytes_per_s`` over ``n_rows`` rows."""
    query = pd.DataFrame(
        {
            "size_bytes": np.geomspace(4, 2**29, n_rows).astype(np.int64),
            "world_size": 16,
            "gpus_per_node": 1,
            "n_concurrent": 1,
            "rated_network_gbps": 50.0,
        }
    )
    model.predict_busbw_bytes_per_s(query)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        model.predict_busbw_bytes_per_s(query)
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def machine() -> str:
    """One line naming the machine."""
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu_model()}, {os.cpu_count()} cores, {mem_gib:.0f} GiB, Linux {platform.release()}"


def placement_range(frame: pd.DataFrame) -> str:
    """``"0.58 to 0.94"``: the range of the slowest host's placement factor over the allocations."""
    factor = (frame["slowest_link_gbps"] / frame["shaped_gbps"]).groupby(frame["allocation_id"]).first()
    return f"{factor.min():.2f} to {factor.max():.2f}"


# ---------------------------------------------------------------------------------------------- results
def public_results(args: argparse.Namespace) -> dict[str, Any]:
    """The nccl-tests protocols, summarised as JSON-ready figures (fractions)."""
    alt = public.alternate_sizes(BandwidthModel, args.trials, args.seed)
    loto = public.leave_one_fabric_out(BandwidthModel, args.trials, args.seed)
    above_alt = alt[alt["size_bytes"] > public.MTU_BYTES]
    tables: dict[str, dict[str, float | None]] = {}
    for table in sorted(alt["table_id"].unique()):
        tables[table] = {}
    for column, prefix in (("model", "model"), ("interpolation", "interpolation")):
        for is_above, side in ((True, "above"), (False, "below")):
            for table, value in public.per_table_mape(alt, column, is_above).items():
                tables[str(table)][f"{prefix}_{side}"] = float(value)
    fabric_rows: dict[str, dict[str, Any]] = {}
    above = loto[loto["size_bytes"] > public.MTU_BYTES]
    for table, rows in above.groupby("table_id"):
        fabric_rows[str(table)] = {
            "fabric": str(rows["fabric"].iloc[0]),
            **{c: float(public.ape(rows[c], rows["truth"]).mean()) for c in ("model", "alpha_beta", "rated_link")},
            "coverage": public.coverage(rows),
        }
    return {
        "alternate_sizes": {
            "tables": tables,
            "coverage": public.coverage(alt),
            "coverage_above": public.coverage(above_alt),
        },
        "leave_one_fabric_out": {
            "tables": fabric_rows,
            "all_above": {c: float(public.ape(above[c], above["truth"]).mean()) for c in ("model", "alpha_beta")},
            "coverage": public.coverage(loto),
            "coverage_above": public.coverage(above),
        },
    }


def testbed_results(args: argparse.Namespace) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    path = args.data or default_probes_path()
    frame = read_probes(path).reset_index(drop=True)
    preds = cross_validated(frame, args)
    summary = summarise(frame, preds, args.mtu_bytes)
    figures = {
        "summary": summary.to_dict(orient="records"),
        "world_size": by_group(frame, preds, "world_size"),
        "instance_type": by_group(frame, preds, "instance_type"),
    }
    return figures, frame, preds


def check_results() -> list[dict[str, Any]]:
    rows = public.check_points(load_default_model())
    return [{str(k): v for k, v in row.items()} for row in rows.to_dict(orient="records")]


# ---------------------------------------------------------------------------------------------- render
def _pct(value: float | None) -> str:
    if value is None or not np.isfinite(value):
        return "—"
    return f"{value:,.0f} %" if value >= 1000 else f"{value:.1f} %"


def _frac(value: float | None) -> str:
    return "—" if value is None else _pct(100 * value)


def _median(values: list[float | None], reduce: Any = np.median) -> float | None:
    """``reduce`` (the median by default) of the finite values, or ``None``."""
    finite = [v for v in values if v is not None and np.isfinite(v)]
    return float(reduce(finite)) if finite else None


def render_public(now: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    alt, prev = now["alternate_sizes"]["tables"], (before or {}).get("alternate_sizes", {}).get("tables", {})
    rows = []
    keys = ("model_above", "interpolation_above", "model_below", "interpolation_below")
    for table, fig in alt.items():
        old = prev.get(table, {})
        rows.append(
            [
                table,
                _frac(old.get("model_above")),
                f"**{_frac(fig.get('model_above'))}**",
                _frac(fig.get("interpolation_above")),
                _frac(old.get("model_below")),
                f"**{_frac(fig.get('model_below'))}**",
                _frac(fig.get("interpolation_below")),
            ]
        )
    med = {k: _median([f.get(k) for f in alt.values()]) for k in keys}
    old_med = {k: _median([f.get(k) for f in prev.values()]) for k in ("model_above", "model_below")}
    rows.append(
        [
            "**median over tables**",
            _frac(old_med["model_above"]),
            f"**{_frac(med['model_above'])}**",
            _frac(med["interpolation_above"]),
            _frac(old_med["model_below"]),
            f"**{_frac(med['model_below'])}**",
            _frac(med["interpolation_below"]),
        ]
    )
    lines = [
        "### nccl-tests: alternate sizes held out",
        "",
        "11 complete nccl-tests `all_reduce_perf` tables of real clusters (`srifty/network/data/public-*.csv`: "
        "AWS EFA p4d/p4de/p5 and g4dn.metal, DGX-1 on RoCE, DGX A100 on InfiniBand, one 8× A100 NVLink node; "
        "see the data README). Every other size of every table is held out; one model is fitted on the "
        "rest of all tables (the table as a categorical feature and as the configuration) and asked about "
        "the held-out sizes. Log-log interpolation between the same training sizes of the same table is the "
        "reference. MAPE per table; target ≤ 5 % above the MTU, ≤ 15 % below.",
        "",
    ]
    lines += markdown_table(
        [
            "table",
            "before > MTU",
            "srifty > MTU",
            "log-log interp. > MTU",
            "before ≤ MTU",
            "srifty ≤ MTU",
            "log-log interp. ≤ MTU",
        ],
        rows,
    )
    loto, prev_loto = now["leave_one_fabric_out"], (before or {}).get("leave_one_fabric_out", {})
    rows = []
    for table, fig in loto["tables"].items():
        old = prev_loto.get("tables", {}).get(table, {})
        rows.append(
            [
                table,
                fig["fabric"],
                _frac(old.get("model")),
                f"**{_frac(fig['model'])}**",
                _frac(fig["alpha_beta"]),
                _frac(fig["rated_link"]),
                _frac(fig["coverage"]),
            ]
        )
    figs = list(loto["tables"].values())
    old_figs = list(prev_loto.get("tables", {}).values())
    for name, reduce in (("median", np.median), ("mean", np.mean)):

        def over(column: str, tables: list[dict[str, Any]], reduce: Any = reduce) -> str:
            return _frac(_median([f[column] for f in tables], reduce))

        rows.append(
            [
                f"**{name} over tables**",
                "",
                over("model", old_figs),
                f"**{over('model', figs)}**",
                *(over(column, figs) for column in ("alpha_beta", "rated_link", "coverage")),
            ]
        )
    pooled, old_pooled = loto.get("all_above", {}), prev_loto.get("all_above", {})
    rows.append(
        [
            "**all held-out rows > MTU, pooled**",
            "",
            _frac(old_pooled.get("model")),
            f"**{_frac(pooled.get('model'))}**",
            _frac(pooled.get("alpha_beta")),
            "",
            _frac(loto.get("coverage")),
        ]
    )
    lines += [
        "",
        "### nccl-tests: leave one fabric out",
        "",
        "Every table of one instance type (DGX A100: both tables) is held out; the model is fitted on the other "
        "tables and asked about a fabric it never saw. *Alpha-beta* (APM's model) is fitted on the same tables "
        "(it falls back to coarser groups for an unseen rating); *rated link* predicts the network cap between "
        "VMs (the rated link times the hierarchical allowance) and the GPUs' intra-node link inside one VM. "
        "MAPE above the MTU per held-out table; coverage: share of the table's held-out rows (all sizes) inside "
        "the predicted 80 % interval.",
        "",
    ]
    lines += markdown_table(
        ["held-out table", "fabric", "before", "srifty", "alpha-beta", "rated link", "80 % interval coverage"], rows
    )
    return lines


def render_testbed(now: dict[str, Any], before: dict[str, Any] | None, frame: pd.DataFrame, args: Any) -> list[str]:
    label = {"small": f"≤ MTU ({args.mtu_bytes} B)", "large": "> MTU", "all": "all"}
    worlds = ", ".join(str(w) for w in sorted(frame["world_size"].unique()))
    old = {r["side"]: r for r in (before or {}).get("testbed", {}).get("summary", [])}
    lines = [
        "",
        "### Testbed: held-out allocations",
        "",
        f"Data: `{args.data_label}`, {len(frame)} probe rows, {frame['allocation_id'].nunique()} "
        f"allocations of {frame['instance_type'].nunique()} instance families, world sizes {worlds}, "
        f"messages {frame['size_bytes'].min()} B to {frame['size_bytes'].max() // 2**20} MiB, 1, 2 and 4 "
        "concurrent transfers. **It was measured on the emulated testbed, not on a cloud**: real gloo "
        "allreduce between network namespaces on one machine, links shaped with `tc` to 1/50 of each "
        "family's rated bandwidth, no added latency (see `src/srifty/network/data/README.md`). Bandwidths "
        "are in represented (cloud) units.",
        "",
        f"Protocol: {args.folds}-fold cross-validation grouped by allocation. In each fold srifty's model "
        f"is tuned ({args.trials} Optuna trials per side, 3 inner folds, also grouped by allocation) and "
        "fitted on the training allocations only, and so are the baselines. *Alpha-beta* is APM's "
        "communication model, `t = α + 2(n−1)/n·s/β`, fitted (non-negative least squares on relative time "
        "error) per rated link, GPUs per node, world size and concurrency over all sizes; *split at MTU* "
        "fits it separately on each side of the MTU, as srifty's model is. *Rated link* predicts busbw = "
        "the provider's rating. *Noise floor* predicts each row by the mean of the other allocations with "
        "the same configuration (the mean is not the MAPE-optimal guess, so a robust model can come in "
        "under it). The paper column is srifty's test MAPE on EC2 and its noise floor there. *Before* is "
        "the previous model (a tree per side) under the same protocol.",
        "",
    ]
    names = ["srifty", "alpha-beta", "alpha-beta split at MTU", "rated link", "noise floor"]
    lines += markdown_table(
        ["messages", "rows", "before", *(f"{n} MAPE" for n in names[:-1]), "noise floor", "80 % coverage", "paper"],
        [
            [
                label[r["side"]],
                r["rows"],
                _pct(old.get(r["side"], {}).get("srifty")),
                f"**{_pct(r['srifty'])}**",
                *(_pct(r[p]) for p in PREDICTORS[1:]),
                _pct(r["coverage"]),
                PAPER[r["side"]],
            ]
            for r in now["summary"]
        ],
    )
    for column, title in (("world_size", "world size"), ("instance_type", "family (represented)")):
        lines += [""]
        lines += markdown_table([title, *names], [[r[column], *(_pct(r[p]) for p in PREDICTORS)] for r in now[column]])
    lines += [
        "",
        "Reading: compare srifty with the noise floor and the baselines, not with the paper's absolute "
        "figures. The floors here are higher than on EC2 because the testbed's placement draws are wider "
        f"than what the paper saw (slowest-host factors {placement_range(frame)}, see the data README) and "
        "because small-message times are this 2-core machine's scheduling latency, which varies from run to run.",
    ]
    return lines


def render_coverage(now: dict[str, Any]) -> list[str]:
    testbed = {r["side"]: r for r in now["testbed"]["summary"]}
    alt, loto = now["alternate_sizes"], now["leave_one_fabric_out"]
    rows = [
        ["testbed, held-out allocations (probed configurations)", "≤ MTU", _pct(testbed["small"]["coverage"])],
        ["", "> MTU", _pct(testbed["large"]["coverage"])],
        ["nccl-tests, leave one fabric out (never probed)", "all sizes", _frac(loto["coverage"])],
        ["", "> MTU", _frac(loto["coverage_above"])],
        ["nccl-tests, alternate sizes (same table, unprobed size)", "all sizes", _frac(alt["coverage"])],
    ]
    return [
        "",
        "### Interval coverage",
        "",
        "Share of held-out points inside the predicted 80 % interval (target 75–85 %). The intervals are "
        "quantiles of the model's own held-out residuals, for a *new allocation* of a probed configuration "
        "or for a configuration never probed (`srifty.network.intervals`). The alternate-size protocol asks "
        "something else, a probed table at a size between its probes, whose error is far smaller than a new "
        "allocation's (and the public tables, one allocation each, give no new-allocation residuals of "
        "their own, so those intervals borrow the never-probed ones): it is over-covered by design.",
        "",
        *markdown_table(["protocol", "messages", "inside the 80 % interval"], rows),
    ]


def _size(size_bytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:,.0f} {unit}"
    return f"{size_bytes} B"


def _gbytes(value: float) -> str:
    return f"{value / 1e9:.1f}" if value >= 1e8 else f"{value / 1e9:.2g}"


def render_checks(rows: list[dict[str, Any]], before: list[dict[str, Any]] | None) -> list[str]:
    old = {(r["table_id"], r["size_bytes"]): r["model"] for r in before or []}
    body = []
    for r in rows:
        has_interval = r["low"] is not None and np.isfinite(r["low"])
        inside = r["low"] <= r["truth"] <= r["high"] if has_interval else None
        body.append(
            [
                r["table_id"],
                r["instance_type"],
                f"{r['n_nodes']} × {r['world_size'] // r['n_nodes']}",
                _size(int(r["size_bytes"])),
                _gbytes(r["truth"]),
                _gbytes(old[(r["table_id"], r["size_bytes"])]) if (r["table_id"], r["size_bytes"]) in old else "—",
                _gbytes(r["model"]),
                f"{_gbytes(r['low'])}–{_gbytes(r['high'])}" if has_interval else "—",
                "—" if inside is None else ("yes" if inside else "no"),
            ]
        )
    large = [abs(r["model"] / r["truth"] - 1) for r in rows if r["size_bytes"] > public.MTU_BYTES]
    large_old = [abs(r["model"] / r["truth"] - 1) for r in before or [] if r["size_bytes"] > public.MTU_BYTES]
    was = f" (before: {100 * float(np.mean(large_old)):.1f} %, median {100 * float(np.median(large_old)):.1f} %)"
    covered = [r["low"] <= r["truth"] <= r["high"] for r in rows if r["low"] is not None and np.isfinite(r["low"])]
    share = f"; {sum(covered)} of {len(covered)} inside the 80 % interval" if covered else ""
    return [
        "",
        "### The embedded default on public points it was not fitted on",
        "",
        "Partial sweeps and single sizes from the same public sources (marked `check` in "
        "`public-tables.csv`), predicted by the embedded default. Above the MTU: MAPE "
        f"{100 * float(np.mean(large)):.1f} %, median {100 * float(np.median(large)):.1f} % over {len(large)} "
        f"points{was if large_old else ''}{share}.",
        "",
        *markdown_table(
            ["table", "instance", "VMs × GPUs", "message", "busbw GB/s", "before", "srifty", "80 % interval", "inside"],
            body,
        ),
    ]


def render(now: dict[str, Any], before: dict[str, Any] | None, frame: pd.DataFrame, args: argparse.Namespace) -> str:
    """The Markdown section (without its heading)."""
    command = (
        "flock /tmp/srifty-cpu.lock python -m benchmarks.network_accuracy "
        f"--trials {args.trials} --folds {args.folds} --seed {args.seed} --save {args.save}"
        + (f" --before {args.before}" if args.before else "")
        + " --write"
    )
    lines = [
        f"Measured on {datetime.now(UTC):%Y-%m-%d} with `{command}` ({args.elapsed_s / 60:.0f} min) on {machine()}.",
    ]
    if before is not None:
        lines += ["", f"*Before*: {before.get('label', 'the previous model')}."]
    lines += [""]
    lines += render_public(now, before)
    lines += render_testbed(now["testbed"], before, frame, args)
    lines += render_coverage(now)
    lines += render_checks(now["checks"], (before or {}).get("checks"))
    lines += [
        "",
        f"Prediction cost of the embedded default model: {now['cost_ms']:.1f} ms per call of 200 rows (median "
        "of 50 calls, one thread).",
    ]
    return "\n".join(lines)


def replace_section(document: str, heading: str, body: str) -> str:
    """``document`` with the text under ``heading`` (up to the next ``## `` heading) replaced by ``body``."""
    lines = document.splitlines(keepends=True)
    try:
        start = next(i for i, line in enumerate(lines) if line.rstrip("\n") == heading)
    except StopIteration:
        raise ValueError(f"no '{heading}' section in the document") from None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "".join([*lines[: start + 1], "\n", body.rstrip("\n") + "\n", "\n", *lines[end:]])


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="testbed probe file (default: the embedded set)")
    parser.add_argument("--trials", type=int, default=40, help="Optuna trials per side in each fold")
    parser.add_argument("--folds", type=int, default=5, help="outer folds, grouped by allocation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mtu-bytes", type=int, default=9001)
    parser.add_argument("--save", type=Path, default=Path("benchmarks/results/network_accuracy.json"))
    parser.add_argument("--before", type=Path, default=None, help="an earlier run's --save file to compare with")
    parser.add_argument("--label", default="this model", help="what this run measures (kept in --save)")
    parser.add_argument("--write", action="store_true", help="write the section into BENCHMARKS.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    path = args.data or default_probes_path()
    args.data_label = str(path.relative_to(REPO / "src")) if path.is_relative_to(REPO / "src") else str(path)
    now = public_results(args)
    now["testbed"], frame, _ = testbed_results(args)
    now["checks"] = check_results()
    now["cost_ms"] = prediction_cost_ms(load_default_model())
    now["label"] = args.label
    args.elapsed_s = time.perf_counter() - started
    atomic_write_text(args.save, json.dumps(_jsonable(now), indent=1) + "\n")
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    body = render(_jsonable(now), before, frame, args)
    print(body)
    if args.write:
        bench = REPO / "BENCHMARKS.md"
        atomic_write_text(bench, replace_section(bench.read_text(encoding="utf-8"), SECTION, body))
        print(f"wrote the '{SECTION[3:]}' section of {bench}")


if __name__ == "__main__":
    main()
