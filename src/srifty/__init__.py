"""srifty: choose cloud VMs for distributed PyTorch training, and keep the choice right while it runs.

Importing this package is cheap: it imports neither torch nor xgboost. Each pipeline stage lives in its
own subpackage (``catalog``, ``spec``, ``compute``, ``network``, ``sim``, ``plan``, ``cloud``,
``runtime``, ``evaluate``, ``report``) and loads its heavy dependencies only when called.
"""

from srifty.errors import (
    ArtifactError,
    CatalogError,
    InfeasiblePlanError,
    ProfileError,
    SpecError,
    SriftyError,
)

__version__ = "0.1.0"

__all__ = [
    "ArtifactError",
    "CatalogError",
    "InfeasiblePlanError",
    "ProfileError",
    "SpecError",
    "SriftyError",
    "__version__",
]
