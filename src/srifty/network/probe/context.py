"""What a probe row says about where it was measured: torchrun's layout, the instance and the allocation.

On a real cluster the instance comes from the user's options (``--instance-type`` looks up the GPU and
the rated network in the bundled catalog). On the network testbed the launcher points
``SRIFTY_TESTBED_STATE`` at the testbed's state file, and the row describes the *represented* instance
family (its name, GPU, rated link), plus the shaped rate and scale that really applied. ``cpu`` is
always the CPU that really ran the processes.
"""

from __future__ import annotations

import math
import os
import platform
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from srifty.errors import CatalogError, did_you_mean
from srifty.network.errors import ProbeError
from srifty.network.testbed import ENV_RATE_VARIATION, ENV_TESTBED_HOST, ENV_TESTBED_STATE

#: Names the allocation a probe's rows belong to, when ``--allocation-id`` does not.
ENV_ALLOCATION_ID = "SRIFTY_ALLOCATION_ID"


@dataclass(frozen=True)
class TorchrunLayout:
    """The process layout torchrun gives this worker (``RANK``, ``WORLD_SIZE`` and friends)."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    n_nodes: int
    master_addr: str
    master_port: int
    agent_store: bool

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> TorchrunLayout:
        """Read the layout from the environment.

        Raises:
            ProbeError: not started by torchrun, or fewer than two ranks.
        """
        env = os.environ if environ is None else environ
        needed = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
        if any(k not in env for k in needed):
            raise ProbeError(
                "srifty probe must run under torchrun, one process per GPU (or per host on CPU), for "
                "example: torchrun --nproc-per-node 2 -m srifty.cli.main probe --out probes.parquet"
            )
        world = int(env["WORLD_SIZE"])
        if world < 2:
            raise ProbeError(
                "an allreduce probe needs at least 2 processes; start torchrun with --nproc-per-node 2 "
                "or more, or with --nnodes 2 or more."
            )
        local_world = int(env.get("LOCAL_WORLD_SIZE", "1"))
        nodes = int(env.get("GROUP_WORLD_SIZE", str(math.ceil(world / local_world))))
        return cls(
            rank=int(env["RANK"]),
            world_size=world,
            local_rank=int(env["LOCAL_RANK"]),
            local_world_size=local_world,
            n_nodes=nodes,
            master_addr=env["MASTER_ADDR"],
            master_port=int(env["MASTER_PORT"]),
            agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true",
        )


@dataclass(frozen=True)
class InstanceOptions:
    """What the user said about the machines (all optional)."""

    instance_type: str | None = None
    cloud: str | None = None
    region: str | None = None
    zone: str | None = None
    rated_network_gbps: float | None = None
    allocation_id: str | None = None


@dataclass(frozen=True)
class ProbeContext:
    """The per-row description columns of a probe run (see ``dataset.PROBE_COLUMNS``)."""

    cloud: str
    region: str
    zone: str
    instance_type: str
    gpu: str
    cpu: str
    rated_network_gbps: float
    gpus_per_node: int
    allocation_id: str
    host: str
    emulated: bool = False
    emulation_scale: float = 1.0
    shaped_gbps: float = math.nan
    slowest_link_gbps: float = math.nan
    intra_node_shaped_gbps: float = math.nan
    rate_variation: float = 0.0
    testbed_name: str = ""


def cpu_model() -> str:
    """The CPU model name from ``/proc/cpuinfo``, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _catalog_lookup(options: InstanceOptions) -> tuple[str, str, float | None]:
    """``(cloud, gpu, rated_gbps)`` of ``options.instance_type`` from the bundled catalog."""
    from srifty.catalog import load_catalog

    catalog = load_catalog()
    rows = [
        t
        for t in catalog.instance_types
        if t.name == options.instance_type
        and (options.cloud is None or t.cloud == options.cloud)
        and (options.region is None or t.region == options.region)
    ]
    if not rows:
        name = options.instance_type or ""
        raise CatalogError(
            f"instance type '{name}' is not in the bundled catalog"
            f"{' for that cloud/region' if options.cloud or options.region else ''}."
            f"{did_you_mean(name, catalog.names())} Name a catalog type, or give its rating with "
            "--rated-network-gbps to probe a custom machine."
        )
    first = rows[0]
    return first.cloud, first.gpu_name, first.rated_network_gbps


def resolve_context(
    options: InstanceOptions,
    layout: TorchrunLayout,
    run_id: str,
    device_name: str | None,
    environ: Mapping[str, str] | None = None,
) -> ProbeContext:
    """Build the row description from the testbed state (if launched on the testbed) or the options.

    Args:
        options: what the user passed on the command line.
        layout: torchrun's layout; GPUs per node default to processes per node.
        run_id: this run's id, the allocation id unless one is given.
        device_name: the accelerator's name (``torch.cuda.get_device_name``), or ``None`` on CPU.
        environ: the environment (tests pass their own).

    Raises:
        CatalogError: an instance type that is neither in the catalog nor given a rating.
        ProbeError: an unreadable testbed state file.
    """
    env = os.environ if environ is None else environ
    host = env.get(ENV_TESTBED_HOST) or socket.gethostname()
    allocation = options.allocation_id or env.get(ENV_ALLOCATION_ID) or run_id
    state_path = env.get(ENV_TESTBED_STATE)
    if state_path:
        from srifty.network.testbed import read_state

        state = read_state(Path(state_path))
        rates = [h.shaped_gbps for h in state.hosts[: layout.n_nodes]]
        return ProbeContext(
            cloud="testbed",
            region="local",
            zone="local",
            instance_type=state.instance_type,
            gpu=state.gpu,
            cpu=cpu_model(),
            rated_network_gbps=state.rated_network_gbps,
            gpus_per_node=layout.local_world_size,
            allocation_id=options.allocation_id or state.allocation_id,
            host=host,
            emulated=True,
            emulation_scale=state.emulation_scale,
            shaped_gbps=state.family_shaped_gbps,
            slowest_link_gbps=min(rates) if rates else math.nan,
            intra_node_shaped_gbps=state.intra_node_shaped_gbps or math.nan,
            rate_variation=float(env.get(ENV_RATE_VARIATION, "0") or 0.0),
            testbed_name=state.name,
        )
    cloud, gpu, rated = options.cloud or "local", device_name or "none", options.rated_network_gbps
    if options.instance_type is not None and options.rated_network_gbps is None:
        cloud, catalog_gpu, rated = _catalog_lookup(options)
        gpu = device_name or catalog_gpu
    if rated is not None and not rated > 0:
        raise ProbeError(f"--rated-network-gbps must be a positive number, got {rated}.")
    return ProbeContext(
        cloud=cloud,
        region=options.region or "local",
        zone=options.zone or "local",
        instance_type=options.instance_type or "local",
        gpu=gpu,
        cpu=cpu_model(),
        rated_network_gbps=math.nan if rated is None else float(rated),
        gpus_per_node=layout.local_world_size,
        allocation_id=allocation,
        host=host,
    )
