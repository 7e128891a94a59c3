"""``EmulatedCloud``: the seeded ground-truth world srifty is judged against (EMULATED, not a real cloud).

It rents the bundled catalog's instance types at their catalog prices, and it knows the truth about
compute (:mod:`srifty.cloud.compute`: the H200's measurements carried by the cloud's own kernel physics),
gradients and buckets (:mod:`srifty.cloud.gradients`), execution (:mod:`srifty.cloud.iteration`), the
network (:mod:`srifty.cloud.network`), placement (:mod:`srifty.cloud.allocation`), launches and preemptions
(:mod:`srifty.cloud.market`). srifty may learn about it only as it would about a real cloud, by measuring:
:meth:`EmulatedCloud.profiling_session` (one GPU of one VM to profile on) and :meth:`EmulatedCloud.probe`
(allreduce probe rows). Evaluations and the runtime may also run configurations on it
(:meth:`~EmulatedCloud.allocate`, :meth:`~EmulatedCloud.iteration_times_s`, :meth:`~EmulatedCloud.run`,
:meth:`~EmulatedCloud.launch_time_s`, :meth:`~EmulatedCloud.preemption_times`): the API below is pure
(every draw comes from the generator passed in) and cheap (a configuration's iteration times take about a
millisecond).

Everything is a function of ``seed``, the workloads (bundled, or given) and
:class:`~srifty.cloud.params.CloudParams`. It imports none of srifty's predictors (an import contract says so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from srifty.catalog import Catalog, InstanceType, load_catalog
from srifty.cloud import market
from srifty.cloud.allocation import (
    Allocation,
    GroupDraw,
    PlacementDraw,
    allocation_for,
    draw_allocation,
    draw_group,
    draw_placement,
    group_key,
    group_offsets,
)
from srifty.cloud.compute import ComputeTruth, build_truth
from srifty.cloud.compute_constants import Calibration, load_calibration
from srifty.cloud.errors import CloudError, OutOfMemoryError
from srifty.cloud.fabrics import family_of, intra_link_bytes_per_s, load_network_fit, node_group
from srifty.cloud.gradients import GradientTruth, gradient_truth
from srifty.cloud.iteration import group_computes, iteration_times_s, steady_iteration_s
from srifty.cloud.netfit import NetworkFit
from srifty.cloud.network import LinkSetup, allreduce_phases_s
from srifty.cloud.observations import EMULATED_EPOCH_S, ProfilingSession, probe_rows
from srifty.cloud.params import CloudParams, HiddenDraw, named_rng
from srifty.cloud.reference_data import h200_grad_ready, workloads
from srifty.cloud.stragglers import straggler_factors
from srifty.errors import did_you_mean
from srifty.units import gbps_to_bytes_per_s, usd_for
from srifty.vocab import Config, make_config, probe_frame, size_sweep_bytes

#: Largest world size whose slowest straggler is simulated (larger worlds take its value).
SLOWEST_RANKS = 1024
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
        models: the models it can train, by srifty's names (default: every bundled workload); each needs a
            workload record (bundled, or in ``extra_workloads``).
        seed: everything hidden (the truth's draws within its uncertainty, network efficiencies) comes from it.
        catalog: instance types and prices (default: the bundled catalog).
        params: the cloud's assumptions.
        region: where the cloud's VMs are rented.
        cloud: which catalog cloud it emulates.
        model: the model trained when a call does not name one (default: the only one in ``models``).
        extra_workloads: workload records of models not bundled (see :func:`srifty.cloud.reference_data.workloads`
            for the form; ``srifty.evaluate`` builds them from a profile's op counts).
        calibration: the compute physics' constants (default: the bundled calibration).
        network_fit: the network truth's constants (default: the bundled fit).

    Raises:
        CloudError: a model without a workload record.
    """

    def __init__(
        self,
        models: Sequence[str] | None = None,
        *,
        seed: int = 0,
        catalog: Catalog | None = None,
        params: CloudParams | None = None,
        region: str = "us-east-1",
        cloud: str = "aws",
        model: str | None = None,
        extra_workloads: Mapping[str, Mapping[str, Any]] | None = None,
        calibration: Calibration | None = None,
        network_fit: NetworkFit | None = None,
    ) -> None:
        known = {**workloads(), **dict(extra_workloads or {})}
        names = list(models) if models is not None else sorted(known)
        missing = [m for m in names if m not in known]
        if missing:
            raise CloudError(
                f"the emulated cloud has no workload for {', '.join(missing)}.{did_you_mean(missing[0], known)} "
                f"It knows {', '.join(sorted(known))}; for another model pass a profile with op counts "
                "(`srifty eval ... --profiles DIR`)."
            )
        if not names:
            raise CloudError("the emulated cloud needs at least one model to train")
        self.workloads = {m: known[m] for m in names}
        self.seed = seed
        self.catalog = catalog or load_catalog()
        self.params = params or CloudParams()
        self.calibration = calibration or load_calibration()
        self.region = region
        self.cloud = cloud
        self.model = model if model is not None else (names[0] if len(names) == 1 else None)
        self._hidden = HiddenDraw(seed, self.params)
        self._network_fit = network_fit or load_network_fit()
        self._truths: dict[tuple[str, str], ComputeTruth] = {}
        self._gradients: dict[str, GradientTruth] = {}
        self._slowest: NDArray[np.float64] | None = None
        self._placements: dict[tuple[str, int], PlacementDraw] = {}
        self._groups: dict[tuple[int, str], GroupDraw] = {}

    @property
    def label(self) -> str:
        """``"EMULATED cloud (seed 0)"``: how measurements made here are labelled."""
        return f"EMULATED cloud (seed {self.seed})"

    @property
    def models(self) -> tuple[str, ...]:
        """The models it can train."""
        return tuple(self.workloads)

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
            raise CloudError(f"name the model: this emulated cloud knows {', '.join(sorted(self.workloads))}.")
        if name not in self.workloads:
            raise CloudError(
                f"the emulated cloud does not train '{name}'.{did_you_mean(name, self.workloads)} "
                f"Known: {', '.join(sorted(self.workloads))}."
            )
        return name

    def truth(self, gpu: str, model: str | None = None) -> ComputeTruth:
        """The compute truth of ``model`` on ``gpu``: for evaluation code and tests, never for a planner."""
        name = self._model(model)
        key = (name, gpu)
        if key not in self._truths:
            self._truths[key] = build_truth(self.workloads[name], gpu, self.calibration, self.seed, self.params)
        return self._truths[key]

    def gradients(self, model: str | None = None) -> GradientTruth:
        """The gradient truth of ``model`` (ready fractions, bucket sizes): for evaluation code and tests."""
        name = self._model(model)
        if name not in self._gradients:
            h200 = str(self.workloads[name].get("h200_name", name))
            measured = h200_grad_ready().get(h200, ())
            self._gradients[name] = gradient_truth(self.workloads[name], measured, self.seed, self.params)
        return self._gradients[name]

    def max_batch(self, gpu: str, model: str | None = None) -> int:
        """Largest local batch of ``model`` that fits one ``gpu`` (the truth)."""
        return self.truth(gpu, model).max_batch

    def describe(self) -> dict[str, Any]:
        """What this cloud drew and assumes, for reports after the fact (hidden from planners while planning)."""
        truths = sorted(self._truths.items())
        return {
            "label": self.label,
            "seed": self.seed,
            "region": self.region,
            "mean_launch_time_s": self.params.mean_launch_time_s,
            "hidden_compute_factor": {f"{m}@{g}": t.hidden_factor for (m, g), t in truths},
            "truth_certainty": {f"{m}@{g}": t.certainty for (m, g), t in truths},
            "truth_origin": {f"{m}@{g}": t.origin for (m, g), t in truths},
        }

    def hidden_network_efficiency(self, instance_type: str) -> float:
        """This seed's factor on ``instance_type``'s network efficiency around its fabric's fit (hidden; for
        evaluation reports and tests)."""
        family = family_of(instance_type)
        sigma = self.network_fit.held_out_rms_log.get(family.fabric, 0.0)
        return self._hidden.network_efficiency(instance_type, sigma)

    # ------------------------------------------------------------------------------- the world
    def allocate(self, config: Config, rng: np.random.Generator) -> Allocation:
        """A new placement draw for every VM of ``config``."""
        return draw_allocation(config, rng, self.params)

    def expectation_allocation(self, config: Config, tag: str, index: int) -> Allocation:
        """Placement draw ``index`` of the fixed set :meth:`expected_iteration_s` averages over (a function of the
        seed, ``tag`` and ``index``; every configuration's VMs of a type are the first ones of one draw)."""
        placement = self._placements.get((tag, index))
        if placement is None:
            placement = draw_placement(named_rng(self.seed, "expectation", tag, index), self.params)
            self._placements[(tag, index)] = placement
        return allocation_for(config, placement, self.params, self._cached_group)

    def _cached_group(self, seed: int, key: str, count: int) -> GroupDraw:
        hit = self._groups.get((seed, key))
        if hit is None or hit.spatial_factor.size < count:
            hit = draw_group(
                seed, key, max(count, 2 * (0 if hit is None else hit.spatial_factor.size), 64), self.params
            )
            self._groups[(seed, key)] = hit
        return GroupDraw(key, hit.spatial_factor[:count], hit.link_factor[:count])

    def launch_time_s(self, rng: np.random.Generator) -> float:
        """How long one VM launch takes (s); a configuration's VMs launch in parallel, so take the largest."""
        return market.launch_time_s(rng, self.params)

    def preemption_times(
        self, config: Config, horizon_s: float, rng: np.random.Generator
    ) -> tuple[market.Preemption, ...]:
        """Spot preemptions of ``config``'s VMs within ``horizon_s`` seconds of its start, earliest first."""
        return market.preemption_times(config, horizon_s, rng, self.params)

    def link_setup(self, config: Config, allocation: Allocation, *, cross_zone: bool = True) -> LinkSetup | None:
        """The links ``config``'s collective crosses in ``allocation`` (see :mod:`srifty.cloud.network`);
        ``None`` for a single GPU. ``cross_zone=False`` leaves a zone crossing out (for bounds that must hold for
        every configuration holding these VMs, placed or not)."""
        if config.world_size <= 1:
            return None
        fit, params = self.network_fit, self.params
        fabric = node = None
        fabrics: set[str] = set()
        net = intra = np.inf
        for group, offset in zip(config.groups, group_offsets(config), strict=True):
            instance = group.instance
            family = family_of(instance.name)
            fabrics.add(family.fabric)
            sigma = fit.held_out_rms_log.get(family.fabric, max(fit.held_out_rms_log.values(), default=0.0))
            between = fit.family(family.fabric, family.group)
            hidden = self._hidden.network_efficiency(instance.name, sigma)
            between = replace(between, efficiency=between.efficiency * hidden)
            fabric = between if fabric is None else fabric.worst(between)
            gbps = instance.rated_network_gbps or family.network_gbps or params.default_network_gbps
            draw = allocation.group(group_key(group))
            links = (
                gbps_to_bytes_per_s(gbps)
                * allocation.bandwidth_factor
                * draw.link_factor[offset : offset + group.count]
            )
            net = min(net, float(np.min(links)))
            if instance.gpus_per_vm > 1:
                inside = fit.family("nvlink", node_group(instance.gpu_name))
                node = inside if node is None else node.worst(inside)
                intra = min(intra, inside.efficiency * intra_link_bytes_per_s(instance))
        assert fabric is not None
        n, gpus = config.n_vms, max(g.instance.gpus_per_vm for g in config.groups)
        extra = 0.0
        rack_vms = max(1, params.rack_gpus // gpus)
        spread = max((params.spread_probability.get(f, 0.0) for f in fabrics), default=0.0)
        if n >= 2 and (n > rack_vms or allocation.spread_draw < spread):
            net /= max(params.spine_oversubscription.get(f, 1.0) for f in fabrics)
            extra += 2 * (n - 1) * params.spine_latency_s
        on_demand_anywhere = config.zone is None and all(g.market == "on_demand" for g in config.groups)
        counts: dict[str, int] = {}
        for g in config.groups:
            counts[g.instance.name] = counts.get(g.instance.name, 0) + g.count
        if cross_zone and on_demand_anywhere and max(counts.values()) > params.zone_capacity_vms:
            net *= params.cross_zone_bandwidth_factor
            extra += 2 * (n - 1) * params.cross_zone_latency_s
        return LinkSetup(
            n_nodes=n,
            ranks=config.world_size,
            gpus_per_node=gpus,
            fabric=fabric,
            node_fabric=node if node is not None else fit.family("nvlink", ""),
            net_bytes_per_s=net,
            intra_bytes_per_s=intra,
            latency_factor=allocation.latency_factor,
            extra_latency_s=extra,
        )

    @property
    def network_fit(self) -> NetworkFit:
        """The network truth's constants (fitted to real clusters' tables)."""
        return self._network_fit

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
        try:
            setup = self.link_setup(config, allocation)
            groups = group_computes(config, truths)
            return iteration_times_s(
                groups,
                self.gradients(name),
                setup,
                allocation,
                self.calibration.stragglers,
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

    def steady_iteration_s(
        self, config: Config, n_allocations: int = 4, *, model: str | None = None, tag: str = ""
    ) -> float:
        """``config``'s iteration on the placements :meth:`expected_iteration_s` draws, with every other random
        part at its typical value (:func:`srifty.cloud.iteration.steady_iteration_s`: each rank's compute slowed
        by the expected slowest straggler factor of its world, no skew or transfer noise): deterministic and
        cheaper, for the judge's ranking of configurations, never for judging them.

        Raises:
            OutOfMemoryError: a local batch does not fit its GPU.
        """
        name = self._model(model)
        truths = self._check_fits(config, name)
        slowest = self.slowest_straggler(config.world_size)
        total = 0.0
        for a in range(n_allocations):
            allocation = self.expectation_allocation(config, tag, a)
            groups = group_computes(config, truths)
            spatial = [
                float(np.mean(allocation.group(g.key).spatial_factor[g.offset : g.offset + g.vms])) for g in groups
            ]
            setup = self.link_setup(config, allocation)
            total += steady_iteration_s(
                groups, self.gradients(name), setup, self.params, [slowest * x for x in spatial]
            )
        return total / n_allocations

    def allreduce_floor_s(
        self, config: Config, n_allocations: int = 4, *, model: str | None = None, tag: str = ""
    ) -> float:
        """The sum of one iteration's allreduces of ``model`` on ``config``'s VMs (its local batches do not matter),
        averaged over the placements :meth:`steady_iteration_s` uses: a configuration holding at least these VMs
        never has a shorter :meth:`steady_iteration_s` (its allreduces run one after another, a VM's draw does not
        depend on how many more there are, and more VMs or slower links never make an allreduce shorter)."""
        sizes, _ = self.gradients(self._model(model)).buckets(1)
        total = 0.0
        for a in range(n_allocations):
            setup = self.link_setup(config, self.expectation_allocation(config, tag, a), cross_zone=False)
            if setup is not None:
                latency_s, data_s = allreduce_phases_s(sizes, setup)
                total += float(np.sum(latency_s + data_s))
        return total / n_allocations

    def slowest_straggler(self, ranks: int) -> float:
        """The expected straggler factor of the slowest of ``ranks`` GPUs in an iteration (non-decreasing in
        ``ranks``; from 400 simulated iterations of the fitted process, the same draws for every count)."""
        if self._slowest is None:
            rng = named_rng(self.seed, "slowest-straggler")
            factors = straggler_factors(self.calibration.stragglers, rng, SLOWEST_RANKS, 400)
            self._slowest = np.maximum.accumulate(factors, axis=1).mean(axis=0)
        return float(self._slowest[min(max(ranks, 1), SLOWEST_RANKS) - 1])

    def expected_iteration_s(
        self, config: Config, n_allocations: int = 4, iters: int = 25, *, model: str | None = None, tag: str = ""
    ) -> float:
        """Mean true iteration time over ``n_allocations`` fixed placement draws of ``iters`` iterations each.

        The draws depend only on ``(seed, tag, index)``, so every configuration is judged on the same
        placements (common random numbers).
        """
        total = 0.0
        for a in range(n_allocations):
            allocation = self.expectation_allocation(config, tag, a)
            times = self.iteration_times_s(
                config, allocation, iters, named_rng(self.seed, "expectation-iters", tag, a), model=model
            )
            total += float(times.mean())
        return total / n_allocations

    # ---------------------------------------------------------------------------- measurements
    def profiling_session(
        self, instance_type: str, rng: np.random.Generator, *, model: str | None = None
    ) -> ProfilingSession:
        """Rent one VM of ``instance_type`` (a fresh placement draw) to profile ``model`` on one of its GPUs.

        The session answers what a profiler measures (fits or not, timed iterations, peak memory, gradient
        ready times) at batches the caller chooses; it fits nothing.
        """
        name = self._model(model)
        instance = self.instance(instance_type)
        truth = self.truth(instance.gpu_name, name)
        allocation = self.allocate(make_config([(instance, 1, 1)]), rng)
        spatial = float(allocation.groups[0].spatial_factor[0])
        return ProfilingSession(
            truth, self.gradients(name), spatial, self.calibration.stragglers, rng, instance, self.label
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
