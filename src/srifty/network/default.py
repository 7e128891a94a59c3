"""The embedded default bandwidth model and the probes it was fitted on.

``plan`` uses the model when the user has no probes of their own. It is fitted on two sources, each
described in ``data/README.md``:

* probes measured on srifty's emulated testbed (real gloo allreduce between network namespaces on one
  machine, links shaped with ``tc`` to 1/50 of four AWS families' ratings): an emulation, not a cloud;
* public nccl-tests and torch.distributed allreduce sweeps on real clusters (AWS EFA p4d/p4de/p5/p6,
  g4dn.metal; DGX systems on InfiniBand and RoCE; single 8-GPU NVLink nodes), transcribed from their
  sources (:mod:`srifty.network.public`); nothing there was measured by srifty;
* all-gather and reduce-scatter probes on the same emulated testbed, which only the model of every
  collective is fitted on (:mod:`srifty.network.bycollective`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from srifty.errors import ArtifactError
from srifty.network.bycollective import ByCollective
from srifty.network.dataset import read_probes
from srifty.network.model import BandwidthModel

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_PROBES_FILE = "testbed-probes.parquet"
#: All-gather and reduce-scatter probes on the same testbed (the collectives sharded data parallelism runs).
COLLECTIVE_PROBES_FILE = "testbed-collectives.parquet"
DEFAULT_MODEL_FILE = "default-net.json"
#: The model of every collective (allreduce, all-gather, reduce-scatter), fitted on all of the above.
COLLECTIVES_MODEL_FILE = "default-net-collectives.json"
#: Where the default model's numbers come from, for plans to say.
DEFAULT_MODEL_SOURCE = (
    "embedded default: emulated-testbed gloo probes (g4dn/g5 families at 1/50 scale) and public nccl-tests "
    "sweeps on real clusters (AWS EFA p4d/p4de/p5/p6-b200, g4dn.metal; DGX on InfiniBand/RoCE; NVLink nodes)"
)


def _data_file(name: str) -> Path:
    path = Path(str(resources.files("srifty.network").joinpath("data", name)))
    if not path.is_file():
        raise ArtifactError(
            f"the embedded network default '{name}' is missing from this srifty install; reinstall srifty."
        )
    return path


def default_probes_path() -> Path:
    """Path of the embedded testbed probe set (Parquet)."""
    return _data_file(DEFAULT_PROBES_FILE)


def load_default_probes() -> pd.DataFrame:
    """The embedded testbed probe set: real gloo allreduce on the emulated testbed, in represented (cloud)
    units."""
    return read_probes(default_probes_path())


def load_default_training_set() -> pd.DataFrame:
    """Every row the default model is fitted on: the testbed probes, then the public tables marked
    ``train`` (with their extra columns; NaN for the testbed rows)."""
    import pandas as pd

    from srifty.network.public import load_public_probes

    return pd.concat([load_default_probes(), load_public_probes()], ignore_index=True)


def load_collective_probes() -> pd.DataFrame:
    """The embedded all-gather and reduce-scatter probes (testbed, represented units)."""
    return read_probes(_data_file(COLLECTIVE_PROBES_FILE))


def load_collectives_training_set() -> pd.DataFrame:
    """Every row the model of all collectives is fitted on: :func:`load_default_training_set` and
    :func:`load_collective_probes`."""
    import pandas as pd

    return pd.concat([load_default_training_set(), load_collective_probes()], ignore_index=True)


def load_default_model() -> ByCollective:
    """The embedded bandwidth model: allreduces answered by the model fitted on :func:`load_default_training_set`
    (allreduce probes), all-gathers and reduce-scatters by the one fitted on
    :func:`load_collectives_training_set` (see :mod:`srifty.network.bycollective`). Loaded afresh on each call."""
    allreduce = BandwidthModel.load(_data_file(DEFAULT_MODEL_FILE.replace(".json", ".meta.json")))
    others = BandwidthModel.load(_data_file(COLLECTIVES_MODEL_FILE.replace(".json", ".meta.json")))
    return ByCollective(allreduce, others)
