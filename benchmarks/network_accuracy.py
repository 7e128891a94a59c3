"""Bus-bandwidth model accuracy on held-out allocations, against the alpha-beta baseline and the noise
floor, as in the paper's "Allreduce Bandwidth Model Accuracy" (23.9 % ≤ MTU, 11.7 % > MTU).

Protocol: the probe set is split into folds **grouped by allocation** (no allocation is on both sides).
In each fold, srifty's model is tuned (Optuna, inner cross-validation also grouped by allocation) and
fitted on the training allocations only, and so is the alpha-beta baseline; both predict every row of
the held-out allocations. The noise floor predicts each row by the mean bus bandwidth of the *other*
allocations with the same configuration (family, world size, GPUs per node, concurrency, size): no
model that sees only the configuration can do much better.

Run from the repository root (heavy: hold the measurement lock on a shared machine):

    flock /tmp/srifty-measure.lock python -m benchmarks.network_accuracy --write
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from srifty.artifacts import atomic_write_text
from srifty.network import AlphaBetaModel, BandwidthModel, read_probes
from srifty.network.default import default_probes_path, load_default_model
from srifty.network.features import busbw_cap_bytes_per_s
from srifty.network.probe_meta import cpu_model
from srifty.network.tuning import grouped_folds, mape

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


def cross_validated(frame: pd.DataFrame, n_folds: int, n_trials: int, seed: int) -> pd.DataFrame:
    """Held-out predictions of srifty's model, the alpha-beta baseline and the rated link, per row."""
    folds = grouped_folds(frame["allocation_id"].astype(str).to_numpy(), n_folds, np.random.default_rng(seed))
    out = pd.DataFrame(index=frame.index, columns=["srifty", "alpha_beta", "fold"], dtype=float)
    for i, (train, test) in enumerate(folds):
        start = time.perf_counter()
        model = BandwidthModel(n_trials=n_trials, n_folds=3, seed=seed + i).fit(frame.iloc[train])
        baseline = AlphaBetaModel().fit(frame.iloc[train])
        held_out = frame.iloc[test]
        out.iloc[test, 0] = model.predict_busbw_bytes_per_s(held_out)
        out.iloc[test, 1] = baseline.predict_busbw_bytes_per_s(held_out)
        out.iloc[test, 2] = i
        print(
            f"fold {i + 1}/{len(folds)}: {len(train)} train rows, {len(test)} test rows, "
            f"{time.perf_counter() - start:.0f} s",
            flush=True,
        )
    cap = busbw_cap_bytes_per_s(frame)
    out["rated_link"] = np.where(np.isfinite(cap), cap, np.nan)
    out["noise_floor"] = noise_floor_predictions(frame)
    return out


def summarise(frame: pd.DataFrame, preds: pd.DataFrame, mtu_bytes: int) -> pd.DataFrame:
    """MAPE (%) of each predictor for ≤ MTU, > MTU and all rows."""
    truth = frame["busbw_bytes_per_s"].to_numpy(dtype=np.float64)
    small = frame["size_bytes"].to_numpy() <= mtu_bytes
    rows = []
    for side, mask in (("small", small), ("large", ~small), ("all", np.ones_like(small))):
        row: dict[str, object] = {"side": side, "rows": int(mask.sum())}
        for name in ("srifty", "alpha_beta", "rated_link", "noise_floor"):
            pred = preds[name].to_numpy(dtype=np.float64)
            ok = mask & np.isfinite(pred)
            row[name] = 100 * mape(truth[ok], pred[ok])
        rows.append(row)
    return pd.DataFrame(rows)


def by_group(frame: pd.DataFrame, preds: pd.DataFrame, column: str) -> pd.DataFrame:
    """srifty and alpha-beta MAPE (%) by one column (world size or family), both sides together."""
    rows = []
    truth = frame["busbw_bytes_per_s"].to_numpy(dtype=np.float64)
    for value, index in frame.groupby(column).indices.items():
        rows.append(
            {
                column: value,
                "srifty": 100 * mape(truth[index], preds["srifty"].to_numpy()[index]),
                "alpha_beta": 100 * mape(truth[index], preds["alpha_beta"].to_numpy()[index]),
                "noise_floor": 100 * mape(truth[index], preds["noise_floor"].to_numpy()[index]),
            }
        )
    return pd.DataFrame(rows)


def prediction_cost_ms(model: BandwidthModel, n_rows: int = 200, calls: int = 50) -> float:
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


def _pct(value: float) -> str:
    return "—" if not np.isfinite(value) else f"{value:.1f} %"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def render(frame: pd.DataFrame, preds: pd.DataFrame, args: argparse.Namespace, cost_ms: float) -> str:
    """The Markdown section (without its heading)."""
    summary = summarise(frame, preds, args.mtu_bytes)
    label = {"small": f"≤ MTU ({args.mtu_bytes} B)", "large": "> MTU", "all": "all"}
    worlds = ", ".join(str(w) for w in sorted(frame["world_size"].unique()))
    command = (
        "flock /tmp/srifty-measure.lock python -m benchmarks.network_accuracy "
        f"--trials {args.trials} --folds {args.folds} --seed {args.seed} --write"
    )
    lines = [
        f"Measured on {datetime.now(UTC):%Y-%m-%d} with `{command}` ({args.elapsed_s / 60:.0f} min) on {machine()}.",
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
        "fitted on the training allocations only, and so is the alpha-beta baseline (APM's communication "
        "model, `t = α + 2(n−1)/n·s/β`, fitted per rated link, GPUs per node, world size and concurrency). "
        "Every row of the held-out allocations is predicted. *Rated link* predicts busbw = the provider's "
        "rating. *Noise floor* predicts each row by the mean of the other allocations with the same "
        "configuration. The paper column is srifty's test MAPE / its noise floor on EC2.",
        "",
    ]
    lines += _table(
        ["messages", "rows", "srifty MAPE", "alpha-beta MAPE", "rated-link MAPE", "noise floor", "paper"],
        [
            [
                label[r.side],
                r.rows,
                *map(_pct, (r.srifty, r.alpha_beta, r.rated_link, r.noise_floor)),
                PAPER[r.side],
            ]
            for r in summary.itertuples()
        ],
    )
    for column, title in (("world_size", "world size"), ("instance_type", "family (represented)")):
        lines += [""]
        lines += _table(
            [title, "srifty", "alpha-beta", "noise floor"],
            [
                [getattr(r, column), _pct(r.srifty), _pct(r.alpha_beta), _pct(r.noise_floor)]
                for r in by_group(frame, preds, column).itertuples()
            ],
        )
    lines += [
        "",
        f"Prediction cost of the embedded default model: {cost_ms:.1f} ms per call of 200 rows (median of "
        "50 calls, one thread).",
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="probe file (default: the embedded set)")
    parser.add_argument("--trials", type=int, default=20, help="Optuna trials per side in each fold")
    parser.add_argument("--folds", type=int, default=4, help="outer folds, grouped by allocation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mtu-bytes", type=int, default=9001)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    path = args.data or default_probes_path()
    args.data_label = str(path.relative_to(REPO / "src")) if path.is_relative_to(REPO / "src") else str(path)
    frame = read_probes(path).reset_index(drop=True)
    preds = cross_validated(frame, args.folds, args.trials, args.seed)
    cost_ms = prediction_cost_ms(load_default_model())
    args.elapsed_s = time.perf_counter() - started
    body = render(frame, preds, args, cost_ms)
    print(body)
    if args.write:
        bench = REPO / "BENCHMARKS.md"
        atomic_write_text(bench, replace_section(bench.read_text(encoding="utf-8"), SECTION, body))
        print(f"wrote the '{SECTION[3:]}' section of {bench}")


if __name__ == "__main__":
    main()
