"""Fit srifty's embedded default bandwidth models on the embedded testbed probes and public tables.

Run from the repository root (heavy on a shared machine: hold the CPU lock):

    flock /tmp/srifty-cpu.lock python scripts/fit_default_network_model.py [--only allreduce|collectives]

Writes ``src/srifty/network/data/default-net.*`` (allreduce: the testbed allreduce probes and the public
tables) and ``default-net-collectives.*`` (every collective: those and the testbed all-gather and
reduce-scatter probes, with the collective as a categorical feature); each sidecar records the fingerprints
of its data files and these settings. ``src/srifty/network/data/README.md`` describes the data.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from srifty.network import (
    COLLECTIVE_PROBES_FILE,
    COLLECTIVES_MODEL_FILE,
    DEFAULT_MODEL_FILE,
    ROWS_FILE,
    TABLES_FILE,
    BandwidthModel,
    default_probes_path,
    file_fingerprint,
    load_collectives_training_set,
    load_default_training_set,
)

DATA = Path(__file__).resolve().parents[1] / "src" / "srifty" / "network" / "data"
#: Location columns say only "testbed" or "public" here, which the backend column already says; a
#: planner's query says "aws". So the default uses the backend alone among the categorical features.
CATEGORICAL = ("backend",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=("allreduce", "collectives"), default=None)
    args = parser.parse_args()
    base = [default_probes_path(), DATA / TABLES_FILE, DATA / ROWS_FILE]
    jobs = {
        "allreduce": (load_default_training_set, base, CATEGORICAL, DEFAULT_MODEL_FILE),
        "collectives": (
            load_collectives_training_set,
            [*base, DATA / COLLECTIVE_PROBES_FILE],
            (*CATEGORICAL, "collective"),
            COLLECTIVES_MODEL_FILE,
        ),
    }
    for which, (load, sources, categorical, target) in jobs.items():
        if args.only not in (None, which):
            continue
        started = time.perf_counter()
        provenance = {
            "datasets": [
                {"path": f"srifty/network/data/{p.name}", "fingerprint": file_fingerprint(p)} for p in sources
            ],
            "command": "python scripts/fit_default_network_model.py "
            f"--trials {args.trials} --folds {args.folds} --seed {args.seed} --only {which}",
        }
        model = BandwidthModel(
            categorical_features=categorical, n_trials=args.trials, n_folds=args.folds, seed=args.seed, n_jobs=1
        )
        model.fit(load(), provenance=provenance)
        paths = model.save(DATA / target)
        for side in ("small", "large"):
            print(which, side, model.metrics_[side], model.quantiles_[side].counts)
        print(f"wrote {', '.join(p.name for p in paths.values())} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
