"""The fit stage (``srifty fit-net``) as a function: probe files in, a fitted, saved bandwidth model out.

Reads the probe files (each checked on its own first, so a bad row is named by its file), adds the embedded
rows the caller asks for (public nccl-tests tables, or those and the testbed's probes), fits a
:class:`~srifty.network.model.BandwidthModel` and saves it. Heavy imports (pandas, xgboost, optuna) happen
inside.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from srifty.network.errors import NetModelError, NetModelOptionError
from srifty.network.model import SECONDS_PER_DAY, TARGETS, BandwidthModel

#: Embedded rows a fit may add to the user's: none, the public nccl-tests tables, or those and the testbed's.
BASES = ("none", "public", "default")


@dataclass(frozen=True)
class FitResult:
    """A fitted model, the files it was saved to (by role) and the rows it learned from."""

    model: BandwidthModel
    paths: dict[str, Path]
    rows: int


def fit_network(
    datasets: Sequence[Path],
    out: Path,
    mtu_bytes: int = 9001,
    n_trials: int = 40,
    n_folds: int = 5,
    half_life_days: float = 30.0,
    target: str = "auto",
    base: str = "none",
    seed: int = 0,
    n_jobs: int | None = None,
) -> FitResult:
    """Fit the bus-bandwidth model on ``datasets`` (probe files: ``.parquet`` from ``srifty probe``, or
    ``.csv``), with ``base``'s embedded rows beside them, and save it as ``out`` (``NAME.meta.json`` and two
    XGBoost JSON files).

    Args:
        half_life_days: probes this much older than their type's newest weigh half; 0: no decay.
        target: ``auto``, ``link_fraction`` (busbw / rated link) or ``busbw``.
        base: one of :data:`BASES`.

    Raises:
        NetModelOptionError: an option out of range, naming it.
        NetModelError: a probe file a model cannot learn from, naming the file.
    """
    import pandas as pd

    from srifty.network.dataset import file_fingerprint, read_probes, validate_frame

    if target not in TARGETS:
        raise NetModelOptionError("target", f"must be one of {', '.join(TARGETS)}, got '{target}'.")
    if base not in BASES:
        raise NetModelOptionError("base", f"must be one of {', '.join(BASES)}, got '{base}'.")
    if not (half_life_days >= 0 and math.isfinite(half_life_days)):  # catches NaN as well
        raise NetModelOptionError("half_life_days", f"must be ≥ 0 (0: no decay), got {half_life_days}.")
    for dataset in datasets:  # rows a model cannot learn from are named by their file
        try:
            validate_frame(read_probes(dataset), need_label=True, need_time=half_life_days > 0)
        except NetModelError as error:
            raise NetModelError(f"{dataset}: {error}") from None
    frame = read_probes(list(datasets))
    provenance: dict[str, object] = {
        "datasets": [{"path": str(p), "fingerprint": file_fingerprint(p)} for p in datasets]
    }
    if base != "none":
        from srifty.network.default import load_default_training_set
        from srifty.network.public import load_public_probes

        embedded = load_public_probes() if base == "public" else load_default_training_set()
        provenance["base"] = {"rows": len(embedded), "which": base}
        frame = pd.concat([frame, embedded], ignore_index=True)
    model = BandwidthModel(
        mtu_bytes=mtu_bytes,
        target=target,
        half_life_s=half_life_days * SECONDS_PER_DAY if half_life_days > 0 else None,
        n_trials=n_trials,
        n_folds=n_folds,
        seed=seed,
        n_jobs=n_jobs,
    )
    model.fit(frame, provenance=provenance)
    return FitResult(model, model.save(out), len(frame))
