"""Job specs: the user's intent, loaded from YAML with unknown keys rejected."""

from srifty.spec.load import check_against_catalog, load_spec, spec_from_mapping
from srifty.spec.model import SPEC_SCHEMA_VERSION, CandidateSpec, Goal, JobSpec, ModelSpec, OverheadSpec

__all__ = [
    "SPEC_SCHEMA_VERSION",
    "CandidateSpec",
    "Goal",
    "JobSpec",
    "ModelSpec",
    "OverheadSpec",
    "check_against_catalog",
    "load_spec",
    "spec_from_mapping",
]
