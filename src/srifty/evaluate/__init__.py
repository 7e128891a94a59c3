"""``srifty eval``: srifty and its baselines judged on the emulated cloud's ground truth (EMULATED).

* :func:`run_cases`: job specs (the paper's case studies, or the harder suite's), every method's plan against
  the true optimum (or the best known, in spaces too large to judge whole), on one seed's cloud;
* :func:`run_seeds`: the same over many seeds, with each method's spread (:mod:`srifty.evaluate.seeds`);
* :func:`generate_suite`: the harder suite's seeded specs (:mod:`srifty.evaluate.suite`);
* :func:`run_accuracy`: one-shot iteration-time prediction error over a large grid (Table 5, Figure 7);
* :func:`run_scenario`: a job's scenario replayed on the emulated cloud's clock with the real runtime
  controller (``srifty run --emulated``, Figure 8);
* :func:`eval_spot`: spot policies replayed over spot traces (``srifty eval spot``);
* the tables the CLI prints (``*_HEADER``, ``*_rows``).

Other packages import these public names, never the modules (the ``public-evaluate`` import contract).

Light to import: xgboost, optuna and torch load only when an evaluation runs.
"""

from srifty.evaluate.accuracy import (
    DEFAULT_MODELS,
    DEFAULT_TYPES,
    DEFAULT_WORLD_SIZES,
    AccuracyRun,
    AccuracySettings,
    run_accuracy,
)
from srifty.evaluate.cases import ALL_METHODS, CaseResult, CaseSettings, CasesRun, MethodOutcome, run_cases
from srifty.evaluate.files import ACCURACY_KIND, CASES_KIND, SEEDS_KIND, save_accuracy, save_cases, save_seeds
from srifty.evaluate.scenario import ScenarioOutcome, run_scenario
from srifty.evaluate.seeds import SeedsRun, run_seeds, summarise, summarise_by_case, why_summary
from srifty.evaluate.spot_eval import POLICIES, eval_spot
from srifty.evaluate.suite import generate_suite, write_suite
from srifty.evaluate.tables import (
    ACCURACY_HEADER,
    CASE_HEADER,
    SEEDS_CASE_HEADER,
    SEEDS_HEADER,
    UNDER_HEADER,
    WHY_HEADER,
    accuracy_rows,
    cases_rows,
    seeds_case_rows,
    seeds_summary_rows,
    underestimation_rows,
    why_rows,
)
from srifty.evaluate.truth import SearchResult, TrueOutcome, TruthJudge, search

__all__ = [
    "ACCURACY_HEADER",
    "ACCURACY_KIND",
    "ALL_METHODS",
    "CASES_KIND",
    "CASE_HEADER",
    "DEFAULT_MODELS",
    "DEFAULT_TYPES",
    "DEFAULT_WORLD_SIZES",
    "POLICIES",
    "SEEDS_CASE_HEADER",
    "SEEDS_HEADER",
    "SEEDS_KIND",
    "UNDER_HEADER",
    "WHY_HEADER",
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
    "accuracy_rows",
    "cases_rows",
    "eval_spot",
    "generate_suite",
    "run_accuracy",
    "run_cases",
    "run_scenario",
    "run_seeds",
    "save_accuracy",
    "save_cases",
    "save_seeds",
    "search",
    "seeds_case_rows",
    "seeds_summary_rows",
    "summarise",
    "summarise_by_case",
    "underestimation_rows",
    "why_rows",
    "why_summary",
    "write_suite",
]
