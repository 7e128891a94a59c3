"""Which network each instance family has, and the fitted network constants (EMULATED cloud).

``data/fabrics.csv`` says, per instance type (or ``*`` for the rest), its fabric between VMs (``efa-rdma``,
``efa-host``, ``tcp``, ``ib``), the family group whose tables ground it (empty: none of its own; its fabric's
constants, extrapolated) and, where the catalog has no rated network, the one to use. Inside a VM its GPUs
talk over NVLink or PCIe, grounded per GPU generation by the NVLink tables (``node-<GPU>`` groups).
``data/network_fit.json`` holds the constants :mod:`srifty.cloud.netfit` fitted
(``python -m benchmarks.cloud_network`` writes it).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from srifty.catalog import InstanceType
from srifty.cloud.netfit import NetworkFit

NETWORK_FIT_FILE = "network_fit.json"
#: Where a GPU has no datasheet link: PCIe 3.0 x16 per direction.
PCIE3_BYTES_PER_S = 16e9


@dataclass(frozen=True)
class Family:
    """An instance type's network: fabric, family group (``""``: none) and rated Gbit/s where the catalog has none."""

    fabric: str
    group: str
    network_gbps: float | None


def _text(name: str) -> str:
    return resources.files("srifty.cloud").joinpath("data", name).read_text(encoding="utf-8")


@cache
def _families() -> tuple[tuple[str, Family], ...]:
    rows = csv.DictReader(_text("fabrics.csv").splitlines())
    return tuple(
        (r["match"], Family(r["fabric"], r["group"], float(r["network_gbps"]) if r["network_gbps"] else None))
        for r in rows
    )


def family_of(instance_type: str) -> Family:
    """The network of ``instance_type`` (the first matching row; ``*`` matches every type)."""
    for match, family in _families():
        if match in ("*", instance_type):
            return family
    raise LookupError(f"data/fabrics.csv has no row for {instance_type} and no '*' row")


def node_group(gpu: str) -> str:
    """The group of the NVLink tables of ``gpu``'s generation (``node-A100`` for ``A100-80GB``; H200 is H100's)."""
    return "node-" + gpu.split("-")[0].replace("H200", "H100")


def intra_link_bytes_per_s(instance: InstanceType) -> float:
    """One GPU's link to the others of its VM, per direction (NVLink datasheet figures are bidirectional)."""
    spec = instance.gpu
    if spec is None:
        return PCIE3_BYTES_PER_S
    nvlink = spec.intra_node_link.startswith("nvlink")
    return spec.link_bytes_per_s_per_gpu / (2.0 if nvlink else 1.0)


@cache
def load_network_fit() -> NetworkFit:
    """The bundled fit of the network truth."""
    return NetworkFit.from_dict(json.loads(_text(NETWORK_FIT_FILE)))
