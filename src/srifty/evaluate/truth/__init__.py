"""The judge: true outcomes of configurations on the emulated cloud, the space it searches and its reference.

The truth side of ``srifty eval`` (EMULATED cloud), written apart from srifty: it reaches none of srifty's
predictors or its planner (``srifty.sim``, ``srifty.network``, ``srifty.plan``, ``srifty.compute``,
``srifty.spot``; the ``judge-apart`` import contract in ``pyproject.toml``). It shares only the neutral
vocabulary (configurations and their notation, catalog rows) and the job spec.

* :mod:`.offers`: what a spec may rent and where (the judge's own reading of the spec);
* :mod:`.scoring`: true job time, cost and broken constraints, and how outcomes rank;
* :mod:`.judge`: :class:`TruthJudge`, a configuration's true outcome (and its steady one, for searches);
* :mod:`.space`: the judge's space (any local batch, uneven shares within an offer) and srifty's rule;
* :mod:`.search`: the reference, found by the judge alone (exhaustive, or branch and bound on its bounds).
"""

from srifty.evaluate.truth.judge import TruthJudge
from srifty.evaluate.truth.offers import RentalOffer, rental_offers
from srifty.evaluate.truth.scoring import (
    JobTerms,
    TrueOutcome,
    best_outcome,
    objective,
    preference,
    time_cost_front,
)
from srifty.evaluate.truth.search import BRANCH_AND_BOUND, EXHAUSTIVE, SearchResult, SearchSettings, search
from srifty.evaluate.truth.space import POWERS_OF_TWO, WIDE, Space

__all__ = [
    "BRANCH_AND_BOUND",
    "EXHAUSTIVE",
    "POWERS_OF_TWO",
    "WIDE",
    "JobTerms",
    "RentalOffer",
    "SearchResult",
    "SearchSettings",
    "Space",
    "TrueOutcome",
    "TruthJudge",
    "best_outcome",
    "objective",
    "preference",
    "rental_offers",
    "search",
    "time_cost_front",
]
