"""``srifty eval``: srifty and its baselines judged on the emulated cloud's ground truth (EMULATED).

* :func:`run_cases`: job specs (the paper's case studies, or the harder suite's), every method's plan against
  the true optimum (or the best known, in spaces too large to judge whole), on one seed's cloud;
* :func:`run_seeds`: the same over many seeds, with each method's spread (:mod:`srifty.evaluate.seeds`);
* :func:`generate_suite`: the harder suite's seeded specs (:mod:`srifty.evaluate.suite`);
* :func:`run_accuracy`: one-shot iteration-time prediction error over a large grid (Table 5, Figure 7);
* :func:`run_scenario`: a job's scenario replayed on the emulated cloud's clock with the real runtime
  controller (``srifty run --emulated``, Figure 8).

Light to import: xgboost, optuna and torch load only when an evaluation runs.
"""

from srifty.evaluate.accuracy import AccuracyRun, AccuracySettings, run_accuracy
from srifty.evaluate.cases import ALL_METHODS, CaseResult, CaseSettings, CasesRun, MethodOutcome, run_cases
from srifty.evaluate.files import ACCURACY_KIND, CASES_KIND, SEEDS_KIND, save_accuracy, save_cases, save_seeds
from srifty.evaluate.scenario import ScenarioOutcome, run_scenario
from srifty.evaluate.seeds import SeedsRun, run_seeds, summarise
from srifty.evaluate.suite import generate_suite, write_suite
from srifty.evaluate.truth import SearchResult, TrueOutcome, TruthJudge, search

__all__ = [
    "ACCURACY_KIND",
    "ALL_METHODS",
    "CASES_KIND",
    "SEEDS_KIND",
    "AccuracyRun",
    "AccuracySettings",
    "CaseResult",
    "CaseSettings",
    "CasesRun",
    "MethodOutcome",
    "ScenarioOutcome",
    "SearchResult",
    "SeedsRun",
    "TrueOutcome",
    "TruthJudge",
    "generate_suite",
    "run_accuracy",
    "run_cases",
    "run_scenario",
    "run_seeds",
    "save_accuracy",
    "save_cases",
    "save_seeds",
    "search",
    "summarise",
    "write_suite",
]
