"""Model selection for the bandwidth model: age-decayed weights, allocation-grouped folds, MAPE, Optuna.

The paper tunes its XGBoost models with an autotuner by MAPE. Here each trial's score is the mean MAPE
over cross-validation folds that are **grouped by allocation**: every row of one allocation (one draw of
VM placement) lands in the same fold, so a model is always scored on placements it never saw, as it
will be when the user rents new VMs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from srifty.network.errors import NetModelError

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.int64]
Fold = tuple[IndexArray, IndexArray]

#: Objectives the tuner chooses among (pseudo-Huber is the robust one), all on the log of the label (so they
#: fit relative error). Not ``reg:absoluteerror``: XGBoost re-fits its leaf values to residual medians after
#: each tree, which breaks the monotone constraints (measured with xgboost 3.2: bandwidth rose by up to
#: 3 % from 3 to 4 ranks in a tuned model; a synthetic check rose by 0.28 in log units).
OBJECTIVES = ("reg:squarederror", "reg:pseudohubererror")

#: Hyperparameters used without tuning (``n_trials=0``) and as the tuner's first trial. Squared error:
#: pseudo-Huber's hessian vanishes for residuals far above its slope, so on a small probe set whose labels
#: start far from the base score ``min_child_weight`` blocks every split (train MAPE 230 % on 36 rows).
DEFAULT_PARAMS: Mapping[str, Any] = {
    "objective": "reg:squarederror",
    "max_depth": 6,
    "learning_rate": 0.1,
    "n_estimators": 200,
    "min_child_weight": 2.0,
    "subsample": 0.9,
    "colsample_bytree": 1.0,
    "reg_lambda": 1.0,
}


def decay_weights(
    timestamps_s: npt.ArrayLike,
    half_life_s: float | None,
    reference_s: float | None = None,
    groups: Sequence[Any] | npt.NDArray[Any] | None = None,
) -> FloatArray:
    """Sample weights ``0.5 ** (age / half_life)`` that favour recent probes (the paper's model updating).

    Args:
        timestamps_s: when each row was measured, epoch seconds.
        half_life_s: age at which a row weighs half as much as a new one; ``None`` weighs all rows 1.
        reference_s: "now"; the newest timestamp (of the row's group) when not given, so results never
            depend on the wall clock. Rows newer than the reference weigh 1.
        groups: one label per row (the instance type, say): each row's age is counted from the newest
            row of its group, so that new probes of one type outweigh old probes of that type without
            erasing what is known about types nobody probed again.

    Raises:
        NetModelError: a non-positive half-life or non-finite timestamps.
    """
    stamps = np.asarray(timestamps_s, dtype=np.float64)
    if half_life_s is None:
        return np.ones(stamps.shape, dtype=np.float64)
    if not half_life_s > 0:
        raise NetModelError(f"the half-life must be a positive number of seconds, got {half_life_s}.")
    if stamps.size and not np.isfinite(stamps).all():
        raise NetModelError("some rows have no valid timestamp_s; fix them or fit with no half-life.")
    if not stamps.size:
        return stamps
    if reference_s is not None:
        ref: FloatArray | float = float(reference_s)
    elif groups is None:
        ref = float(stamps.max())
    else:
        labels = np.asarray(groups, dtype=object).astype(str)
        _, inverse = np.unique(labels, return_inverse=True)
        newest = np.full(int(inverse.max()) + 1, -np.inf)
        np.maximum.at(newest, inverse, stamps)
        ref = newest[inverse]
    age_s = np.maximum(ref - stamps, 0.0)
    return np.power(0.5, age_s / half_life_s)


def grouped_folds(groups: Sequence[Any] | npt.NDArray[Any], n_folds: int, rng: np.random.Generator) -> list[Fold]:
    """``(train_indices, test_indices)`` folds in which no group (allocation) is on both sides.

    Groups are shuffled with ``rng`` and dealt to folds so that fold sizes in rows stay balanced (the
    largest remaining group goes to the smallest fold). ``n_folds`` is lowered to the number of groups.

    Raises:
        NetModelError: fewer than two groups, so no held-out allocation can exist.
    """
    labels = np.asarray(groups, dtype=object)
    unique, inverse, counts = np.unique(labels.astype(str), return_inverse=True, return_counts=True)
    if unique.size < 2:
        raise NetModelError(
            f"cross-validation grouped by allocation needs rows from at least 2 allocations, got "
            f"{unique.size}. Probe on a second set of VMs (a new allocation), or fit without tuning "
            "(--trials 0)."
        )
    k = int(min(max(n_folds, 2), unique.size))
    order = rng.permutation(unique.size)
    order = order[np.argsort(-counts[order], kind="stable")]
    fold_of_group = np.empty(unique.size, dtype=np.int64)
    load = np.zeros(k, dtype=np.int64)
    for g in order:
        f = int(np.argmin(load))
        fold_of_group[g] = f
        load[f] += counts[g]
    row_fold = fold_of_group[inverse]
    all_rows = np.arange(labels.size, dtype=np.int64)
    return [(all_rows[row_fold != f], all_rows[row_fold == f]) for f in range(k)]


def mape(y_true: npt.ArrayLike, y_pred: npt.ArrayLike, weights: npt.ArrayLike | None = None) -> float:
    """Mean absolute percentage error as a fraction (0.117 is 11.7 %), optionally weighted."""
    truth = np.asarray(y_true, dtype=np.float64)
    errors = np.abs(np.asarray(y_pred, dtype=np.float64) - truth) / np.abs(truth)
    if weights is None:
        return float(errors.mean())
    w = np.asarray(weights, dtype=np.float64)
    return float((errors * w).sum() / w.sum())


def suggest_params(trial: Any) -> dict[str, Any]:
    """One point of the search space from an Optuna trial."""
    params: dict[str, Any] = {
        "objective": trial.suggest_categorical("objective", list(OBJECTIVES)),
        "max_depth": trial.suggest_int("max_depth", 3, 8),
        "learning_rate": trial.suggest_float("learning_rate", 0.03, 0.3, log=True),
        "n_estimators": trial.suggest_int("n_estimators", 50, 400, log=True),
        "min_child_weight": trial.suggest_float("min_child_weight", 0.5, 20.0, log=True),
        "subsample": trial.suggest_float("subsample", 0.6, 1.0),
        "colsample_bytree": trial.suggest_float("colsample_bytree", 0.6, 1.0),
        "reg_lambda": trial.suggest_float("reg_lambda", 1e-3, 10.0, log=True),
    }
    if params["objective"] == "reg:pseudohubererror":
        params["huber_slope"] = trial.suggest_float("huber_slope", 0.02, 1.0, log=True)
    return params


ScoreFold = Callable[[Mapping[str, Any], IndexArray, IndexArray], float]


def cross_validate(params: Mapping[str, Any], folds: Sequence[Fold], score_fold: ScoreFold) -> float:
    """Mean of ``score_fold(params, train, test)`` over the folds (each a MAPE)."""
    return float(np.mean([score_fold(params, train, test) for train, test in folds]))


def tune_params(
    folds: Sequence[Fold],
    score_fold: ScoreFold,
    n_trials: int,
    seed: int,
    timeout_s: float | None = None,
) -> tuple[dict[str, Any], float, int]:
    """Search hyperparameters with Optuna's seeded TPE sampler, minimising grouped-CV MAPE.

    The first trial is :data:`DEFAULT_PARAMS`, so tuning never does worse than no tuning on the folds.
    Trials whose first folds already lag the median are pruned.

    Returns:
        ``(best_params, best_cv_mape, trials_run)``.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=seed),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=1),
    )
    study.enqueue_trial(dict(DEFAULT_PARAMS))

    def objective(trial: optuna.Trial) -> float:
        params = suggest_params(trial)
        scores = []
        for step, (train, test) in enumerate(folds):
            scores.append(score_fold(params, train, test))
            trial.report(float(np.mean(scores)), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return float(np.mean(scores))

    study.optimize(objective, n_trials=n_trials, timeout=timeout_s, gc_after_trial=False)
    best = study.best_trial
    return suggest_params(optuna.trial.FixedTrial(best.params)), float(study.best_value), len(study.trials)
