"""srifty's learning pipeline against the emulated cloud, as it would run against a real one.

1. **Profile** each GPU type once, on one VM of a candidate type with that GPU: 4 probes, placed by
   srifty's own probe placement (:mod:`srifty.evaluate.profiling`).
2. **Grid-probe** the network of each instance type on a few fresh allocations
   (:meth:`srifty.cloud.EmulatedCloud.probe`): world sizes 2 to 64, 4 B to 512 MiB, 1, 2 and 4
   concurrent transfers, as the paper's dataset.
3. **Fit** srifty's bandwidth model (XGBoost, split at the MTU) and the APM baseline's alpha-beta model on
   the same probe rows. To keep an evaluation within minutes, the bandwidth model's Optuna search runs
   only a few trials (``n_trials``, 4 by default, against 40 for ``srifty fit-net``), with 3 folds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from srifty.cloud import EmulatedCloud, named_rng

if TYPE_CHECKING:  # importing them needs xgboost; the fields are filled by fit_network
    from srifty.network import BandwidthModel
    from srifty.plan import AlphaBetaModel

DEFAULT_FIT_TRIALS = 4
DEFAULT_FIT_FOLDS = 3


@dataclass(frozen=True)
class NetworkKnowledge:
    """What srifty learned about the network: the probe rows and the two models fitted on them.

    Attributes:
        probes: every probe row (probe-row schema).
        bandwidth_model: srifty's :class:`~srifty.network.BandwidthModel`.
        alpha_beta: APM's :class:`~srifty.network.AlphaBetaModel`, fitted on the same rows.
        n_trials: Optuna trials per side of the MTU.
        probe_s, fit_s: wall time of probing (emulated: fast) and fitting.
    """

    probes: pd.DataFrame
    bandwidth_model: BandwidthModel
    alpha_beta: AlphaBetaModel
    n_trials: int
    probe_s: float
    fit_s: float


def probe_network(
    cloud: EmulatedCloud, instance_types: Sequence[str], seed: int, n_allocations: int = 3, max_world: int = 64
) -> pd.DataFrame:
    """Grid-probe every type on ``n_allocations`` allocations (world sizes up to ``max_world``)."""
    from srifty.cloud import default_node_counts

    frames = []
    for name in sorted(set(instance_types)):
        gpus = cloud.instance(name).gpus_per_vm
        frames.append(
            cloud.probe(
                name,
                named_rng(seed, "probe", name),
                node_counts=default_node_counts(gpus, max_world),
                n_allocations=n_allocations,
            )
        )
    return pd.concat(frames, ignore_index=True)


def learn_network(
    cloud: EmulatedCloud,
    instance_types: Sequence[str],
    seed: int,
    n_trials: int = DEFAULT_FIT_TRIALS,
    n_allocations: int = 3,
    max_world: int = 64,
) -> NetworkKnowledge:
    """Probe, then fit srifty's bandwidth model and the alpha-beta baseline on the same rows."""
    from srifty.network import BandwidthModel
    from srifty.plan import AlphaBetaModel

    started = time.perf_counter()
    probes = probe_network(cloud, instance_types, seed, n_allocations, max_world)
    probed = time.perf_counter()
    # One thread: with two, XGBoost's OpenMP threads spin against whatever else runs on a 2-core machine, and a
    # 16k-row fit went from 2 s to 190 s.
    model = BandwidthModel(n_trials=n_trials, n_folds=DEFAULT_FIT_FOLDS, seed=seed, n_jobs=1).fit(
        probes, provenance={"source": cloud.label, "instance_types": sorted(set(instance_types))}
    )
    alpha_beta = AlphaBetaModel().fit(probes)
    return NetworkKnowledge(probes, model, alpha_beta, n_trials, probed - started, time.perf_counter() - probed)
