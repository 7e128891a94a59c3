"""``srifty eval``: srifty and its baselines judged on the emulated cloud's ground truth (EMULATED).

* :func:`run_cases`: the paper's case studies, every method's plan against the true optimum;
* :func:`run_accuracy`: one-shot iteration-time prediction error over a large grid (Table 5, Figure 7);
* :func:`run_scenario`: a job's scenario replayed on the emulated cloud's clock with the real runtime
  controller (``srifty run --emulated``, Figure 8).

Light to import: xgboost, optuna and torch load only when an evaluation runs.
"""

from srifty.evaluate.accuracy import AccuracyRun, AccuracySettings, run_accuracy
from srifty.evaluate.cases import ALL_METHODS, CaseResult, CaseSettings, CasesRun, MethodOutcome, run_cases
from srifty.evaluate.files import ACCURACY_KIND, CASES_KIND, save_accuracy, save_cases
from srifty.evaluate.scenario import ScenarioOutcome, run_scenario
from srifty.evaluate.truth import TrueOutcome, TruthJudge, true_optimum

__all__ = [
    "ACCURACY_KIND",
    "ALL_METHODS",
    "CASES_KIND",
    "AccuracyRun",
    "AccuracySettings",
    "CaseResult",
    "CaseSettings",
    "CasesRun",
    "MethodOutcome",
    "ScenarioOutcome",
    "TrueOutcome",
    "TruthJudge",
    "run_accuracy",
    "run_cases",
    "run_scenario",
    "save_accuracy",
    "save_cases",
    "true_optimum",
]
