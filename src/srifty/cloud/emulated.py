"""``EmulatedCloud``: the seeded ground-truth world srifty is judged against (EMULATED, not a real cloud).

It rents the bundled catalog's instance types at their catalog prices, and it knows the truth about
compute (:mod:`srifty.cloud.compute`), the network (:mod:`srifty.cloud.network`), placement
(:mod:`srifty.cloud.allocation`), launches and preemptions (:mod:`srifty.cloud.market`). srifty may learn
about it only as it would about a real cloud: :meth:`EmulatedCloud.profile` and
:meth:`EmulatedCloud.probe`. Evaluations and the runtime may also run configurations on it
(:meth:`~EmulatedCloud.allocate`, :meth:`~EmulatedCloud.iteration_times_s`, :meth:`~EmulatedCloud.run`,
:meth:`~EmulatedCloud.launch_time_s`, :meth:`~EmulatedCloud.preemption_times`): the API below is pure
(every draw comes from the generator passed in) and cheap (a configuration's iteration times take well
under a millisecond).

Everything is a function of ``seed``, the source profiles and :class:`~srifty.cloud.params.CloudParams`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from srifty.catalog import Catalog, InstanceType, load_catalog
from srifty.cloud import market
from srifty.cloud.allocation import Allocation, draw_allocation, group_key
from srifty.cloud.compute import ComputeTruth, build_compute_truth
from srifty.cloud.errors import CloudError, OutOfMemoryError
from srifty.cloud.iteration import group_computes, iteration_times_s
from srifty.cloud.measure import EMULATED_EPOCH_S, measure_profile, probe_rows
from srifty.cloud.network import LinkSetup, intra_link, rated_bytes_per_s
from srifty.cloud.params import CloudParams, HiddenDraw, named_rng
from srifty.compute import Profile
from srifty.errors import did_you_mean
from srifty.units import usd_for
from srifty.vocab import Config, make_config
from srifty.vocab.busbw import size_sweep_bytes
from srifty.vocab.probes import probe_frame

#: The paper's probe range: world sizes 2 to 64, buffers 4 B to 512 MiB.
DEFAULT_PROBE_MAX_WORLD = 64


@dataclass(frozen=True)
class RunResult:
    """A configuration run on the emulated cloud (training only: no launch, no restore).

    Attributes:
        iteration_times_s: every iteration's true time.
        time_s: their sum.
        cost_usd: the configuration's price for ``time_s``.
        allocation_id: the placement it ran in.
    """

    iteration_times_s: NDArray[np.float64]
    time_s: float
    cost_usd: float
    allocation_id: str


class EmulatedCloud:
    """A seeded statistical model of a cloud, the ground truth for evaluating plans (EMULATED).

    Args:
        sources: source profiles by model name (each a measured profile with op counts, for example the
            CPU profiles bundled with srifty); the compute truth of every GPU type is built from them.
        seed: everything hidden (compute factors, network efficiencies) is drawn from it.
        catalog: instance types and prices (default: the bundled catalog).
        params: the cloud's assumptions.
        region: where the cloud's VMs are rented.
        cloud: which catalog cloud it emulates.
        model: the model trained when a call does not name one (default: the only model in ``sources``).

    Raises:
        CloudError: no sources.
    """

    def __init__(
        self,
        sources: Mapping[str, Sequence[Profile]],
        *,
        seed: int = 0,
        catalog: Catalog | None = None,
        params: CloudParams | None = None,
        region: str = "us-east-1",
        cloud: str = "aws",
        model: str | None = None,
    ) -> None:
        if not sources or not any(sources.values()):
            raise CloudError("the emulated cloud needs at least one source profile to build its compute truth from")
        self.sources = {name: tuple(profiles) for name, profiles in sources.items() if profiles}
        self.seed = seed
        self.catalog = catalog or load_catalog()
        self.params = params or CloudParams()
        self.region = region
        self.cloud = cloud
        self.model = model if model is not None else (next(iter(self.sources)) if len(self.sources) == 1 else None)
        self._hidden = HiddenDraw(seed, self.params)
        self._truths: dict[tuple[str, str], ComputeTruth] = {}

    @property
    def label(self) -> str:
        """``"emulated cloud (seed 0)"``: how measurements made here are labelled."""
        return f"EMULATED cloud (seed {self.seed})"

    # ------------------------------------------------------------------------------------ lookups
    def instance(self, name: str) -> InstanceType:
        """The catalog record of ``name`` in this cloud's region.

        Raises:
            CatalogError: unknown type or not offered in the region.
        """
        return self.catalog.get(name, region=self.region, cloud=self.cloud)

    def _model(self, model: str | None) -> str:
        name = model or self.model
        if name is None:
            raise CloudError(f"name the model: this emulated cloud knows {', '.join(sorted(self.sources))}.")
        if name not in self.sources:
            raise CloudError(
                f"the emulated cloud has no source profile of '{name}'.{did_you_mean(name, self.sources)} "
                f"Known: {', '.join(sorted(self.sources))}."
            )
        return name

    def source_profile(self, model: str | None = None) -> Profile:
        """The source profile whose gradient timeline, buckets and memory model the truth uses."""
        return self.sources[self._model(model)][0]

    def truth(self, gpu: str, model: str | None = None) -> ComputeTruth:
        """The compute truth of ``model`` on ``gpu``: for evaluation code and tests, never for a planner."""
        name = self._model(model)
        key = (name, gpu)
        if key not in self._truths:
            spec = self.catalog.gpu_spec(gpu)
            self._truths[key] = build_compute_truth(self.sources[name], spec, self._hidden, self.params, self.catalog)
        return self._truths[key]

    def max_batch(self, gpu: str, model: str | None = None) -> int:
        """Largest local batch of ``model`` that fits one ``gpu`` (the truth)."""
        return self.truth(gpu, model).max_batch

    def describe(self) -> dict[str, Any]:
        """What this cloud drew and assumes, for reports after the fact (hidden from planners while planning)."""
        gpus = sorted({gpu for _, gpu in self._truths})
        return {
            "label": self.label,
            "seed": self.seed,
            "region": self.region,
            "mean_launch_time_s": self.params.mean_launch_time_s,
            "hidden_compute_factor": {g: self._hidden.compute_factor(g) for g in gpus},
            "truth_origin": {f"{m}@{g}": t.origin for (m, g), t in sorted(self._truths.items())},
        }

    def hidden_network_efficiency(self, instance_type: str) -> float:
        """Achieved/rated network bandwidth of a type (hidden; for evaluation reports and tests)."""
        return self._hidden.network_efficiency(instance_type)

    # ------------------------------------------------------------------------------- the world
    def allocate(self, config: Config, rng: np.random.Generator) -> Allocation:
        """A new placement draw for every VM of ``config``."""
        return draw_allocation(config, rng, self.params)

    def launch_time_s(self, rng: np.random.Generator) -> float:
        """How long one VM launch takes (s); a configuration's VMs launch in parallel, so take the largest."""
        return market.launch_time_s(rng, self.params)

    def preemption_times(
        self, config: Config, horizon_s: float, rng: np.random.Generator
    ) -> tuple[market.Preemption, ...]:
        """Spot preemptions of ``config``'s VMs within ``horizon_s`` seconds of its start, earliest first."""
        return market.preemption_times(config, horizon_s, rng, self.params)

    def link_setup(self, config: Config, allocation: Allocation) -> LinkSetup | None:
        """The links ``config``'s collective crosses in ``allocation``; ``None`` for a single GPU."""
        if config.world_size <= 1:
            return None
        slowest = np.inf
        for group in config.groups:
            draw = allocation.group(group_key(group))
            achievable = rated_bytes_per_s(group.instance, self.params) * self._hidden.network_efficiency(
                group.instance.name
            )
            links = achievable * allocation.bandwidth_factor * draw.link_factor[: group.count]
            slowest = min(slowest, float(np.min(links)))
        intra = tuple(intra_link(g.instance, self.params) for g in config.groups if g.instance.gpus_per_vm > 1)
        return LinkSetup(
            n_nodes=config.n_vms,
            streams_per_node=max(g.instance.gpus_per_vm for g in config.groups),
            net_bytes_per_s=slowest,
            net_hop_latency_s=allocation.hop_latency_s,
            intra=intra,
        )

    def _check_fits(self, config: Config, model: str) -> list[ComputeTruth]:
        truths = []
        for group in config.groups:
            truth = self.truth(group.instance.gpu_name, model)
            if group.local_batch > truth.max_batch:
                raise OutOfMemoryError(
                    f"{group.notation()}: a local batch of {group.local_batch} does not fit a {truth.gpu} "
                    f"training {model} in the emulated cloud (at most {truth.max_batch})."
                )
            truths.append(truth)
        return truths

    def iteration_times_s(
        self,
        config: Config,
        allocation: Allocation,
        iters: int,
        rng: np.random.Generator,
        *,
        model: str | None = None,
    ) -> NDArray[np.float64]:
        """``iters`` true iteration times (s) of ``config`` in ``allocation``.

        Raises:
            OutOfMemoryError: a local batch does not fit its GPU.
            CloudError: unknown model, or an allocation drawn for another configuration.
        """
        name = self._model(model)
        truths = self._check_fits(config, name)
        source = self.source_profile(name)
        try:
            setup = self.link_setup(config, allocation)
            groups = group_computes(config, truths)
            return iteration_times_s(
                groups,
                np.array([b.start_frac for b in source.buckets]),
                np.array([b.size_bytes for b in source.buckets], dtype=float),
                setup,
                allocation,
                iters,
                rng,
                self.params,
            )
        except KeyError as err:
            raise CloudError(
                f"allocation {allocation.allocation_id} has no VMs for group {err}; allocate this configuration first."
            ) from None

    def run(
        self,
        config: Config,
        iters: int,
        allocation: Allocation,
        rng: np.random.Generator | None = None,
        *,
        model: str | None = None,
    ) -> RunResult:
        """Train ``iters`` iterations of ``config`` in ``allocation``: true time and cost (no launch, no
        restore). ``rng`` defaults to one derived from the seed and the allocation."""
        generator = rng if rng is not None else named_rng(self.seed, "run", allocation.allocation_id)
        times = self.iteration_times_s(config, allocation, iters, generator, model=model)
        total = float(times.sum())
        return RunResult(times, total, usd_for(config.price_usd_per_hour(), total), allocation.allocation_id)

    def expected_iteration_s(
        self, config: Config, n_allocations: int = 4, iters: int = 25, *, model: str | None = None, tag: str = ""
    ) -> float:
        """Mean true iteration time over ``n_allocations`` fixed placement draws of ``iters`` iterations each.

        The draws depend only on ``(seed, tag, index)``, so every configuration is judged on the same
        placements (common random numbers).
        """
        total = 0.0
        for a in range(n_allocations):
            allocation = self.allocate(config, named_rng(self.seed, "expectation", tag, a))
            times = self.iteration_times_s(
                config, allocation, iters, named_rng(self.seed, "expectation-iters", tag, a), model=model
            )
            total += float(times.mean())
        return total / n_allocations

    # ---------------------------------------------------------------------------- measurements
    def profile(
        self,
        instance_type: str,
        rng: np.random.Generator,
        *,
        model: str | None = None,
        n_probes: int = 4,
        timed_iters: int = 20,
    ) -> Profile:
        """Profile ``model`` on one GPU of a freshly allocated ``instance_type`` VM: noisy measurements at
        ``n_probes`` batches chosen by srifty's probe placement, fitted with srifty's own fits."""
        name = self._model(model)
        instance = self.instance(instance_type)
        spec = self.catalog.gpu_spec(instance.gpu_name)
        truth = self.truth(instance.gpu_name, name)
        one_vm = make_config([(instance, 1, 1)])
        allocation = self.allocate(one_vm, rng)
        spatial = float(allocation.groups[0].spatial_factor[0])
        return measure_profile(
            truth, self.source_profile(name), instance, spec, spatial, rng, self.label, n_probes, timed_iters
        )

    def probe(
        self,
        instance_type: str,
        rng: np.random.Generator,
        *,
        node_counts: Sequence[int] | None = None,
        sizes_bytes: Sequence[int] | None = None,
        concurrency: Sequence[int] = (1, 2, 4),
        repeats: int = 3,
        n_allocations: int = 3,
    ) -> pd.DataFrame:
        """The paper's grid probe of ``instance_type``: allreduce rows over node counts, sizes and
        concurrency on ``n_allocations`` fresh allocations, in the probe-row schema.

        Args:
            node_counts: VMs per probe; default: powers of two whose world size is 2 to 64 GPUs (one VM too,
                for a multi-GPU type).
            sizes_bytes: default: 4 B to 512 MiB in steps of ×4.
        """
        instance = self.instance(instance_type)
        gpus = instance.gpus_per_vm
        counts = list(node_counts) if node_counts is not None else default_node_counts(gpus)
        if not counts or min(counts) < 1:
            raise CloudError(f"node counts must be positive integers, got {counts}.")
        sizes = list(sizes_bytes) if sizes_bytes is not None else size_sweep_bytes(4, 512 * 2**20, 4)
        zone = instance.cheapest_spot_zone or (instance.zones[0] if instance.zones else instance.region)
        rows: list[dict[str, Any]] = []
        for a in range(n_allocations):
            pool = make_config([(instance, max(counts), 1)])
            allocation = self.allocate(pool, rng)
            setups = []
            for n in counts:
                subset = make_config([(instance, n, 1)])
                setups.append((n, self.link_setup(subset, allocation)))
            clock = EMULATED_EPOCH_S + 3600.0 * a  # one allocation an hour: all within the decay half-life
            rows.extend(
                probe_rows(
                    instance,
                    setups,
                    sizes,
                    concurrency,
                    repeats,
                    allocation.allocation_id,
                    zone,
                    rng,
                    self.params,
                    self.label,
                    clock,
                )
            )
        return probe_frame(rows)


def default_node_counts(gpus_per_vm: int, max_world: int = DEFAULT_PROBE_MAX_WORLD) -> list[int]:
    """Powers of two ``N`` with ``2 ≤ N·gpus ≤ max_world`` (and ``N = 1`` when a VM has several GPUs)."""
    counts = []
    n = 1
    while n * gpus_per_vm <= max_world:
        if n * gpus_per_vm >= 2:
            counts.append(n)
        n *= 2
    return counts
