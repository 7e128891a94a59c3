"""The APM and Paleo baselines' predictor: compute plus communication, no overlap, no variance.

Cynthia's iteration model, as the paper's APM and Paleo baselines use it: the slowest group's forward +
backward + step sets the compute; every DDP bucket of its model is allreduced in turn at the bandwidth
model's rate; nothing overlaps and nothing varies.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from srifty.compute import LatencyModel, Profile, fit_linear
from srifty.errors import ProfileError
from srifty.plan.predict import Estimate
from srifty.sim import BusBandwidthModel, config_busbw_bytes_per_s, profile_for
from srifty.vocab import Config, bus_bytes


class AdditivePredictor:
    """Iteration time as ``compute + communication`` with no overlap and no variance.

    Args:
        name: ``"apm"`` or ``"paleo"``.
        profiles: profile per instance type or GPU name.
        net_model: bus-bandwidth model (alpha-beta for APM, Paleo's for Paleo).
        linearize: replace each profile's latency curves by one least-squares line through its measured
            batches (Nexus' compute model, as APM does).
    """

    def __init__(self, name: str, profiles: Mapping[str, Profile], net_model: BusBandwidthModel, linearize: bool):
        self.name = name
        self.profiles = dict(profiles)
        self.net_model = net_model
        self.linearize = linearize
        self._lines: dict[int, dict[str, LatencyModel]] = {}
        self._comm: dict[tuple[int, int, int, tuple[str, ...]], float] = {}

    def _profile(self, config: Config, index: int) -> Profile:
        return profile_for(self.profiles, config.groups[index].instance)

    def _curves(self, profile: Profile) -> Mapping[str, LatencyModel]:
        if not self.linearize:
            return profile.latency
        key = id(profile)
        if key not in self._lines:
            if len(profile.samples) >= 2:
                batches = [s.batch for s in profile.samples]
                self._lines[key] = {
                    ph: fit_linear(batches, [s.mean_ms(ph) for s in profile.samples]) for ph in ("fw", "bw", "step")
                }
            else:  # an estimated profile has no samples: a line through its model's vertices
                self._lines[key] = {
                    ph: fit_linear(profile.latency[ph].vertices_batch, profile.latency[ph].vertices_ms)
                    for ph in ("fw", "bw", "step")
                }
        return self._lines[key]

    def predict(self, config: Config) -> Estimate:
        per_group = []
        for i, group in enumerate(config.groups):
            curves = self._curves(self._profile(config, i))
            per_group.append(sum(float(curves[ph].predict_ms(group.local_batch)[()]) for ph in ("fw", "bw", "step")))
        slowest = int(np.argmax(per_group))
        compute_s = per_group[slowest] / 1000.0
        profile = self._profile(config, slowest)
        key = (id(profile), config.world_size, config.n_vms, tuple(sorted(g.instance.name for g in config.groups)))
        if key not in self._comm:
            sizes = np.array([b.size_bytes for b in profile.buckets], dtype=float)
            if config.world_size <= 1 or len(sizes) == 0:
                self._comm[key] = 0.0
            else:
                busbw = config_busbw_bytes_per_s(
                    self.net_model, sizes, config.world_size, config.n_vms, [g.instance for g in config.groups]
                )
                self._comm[key] = float(np.sum(bus_bytes(sizes, config.world_size) / busbw))
        comm_s = self._comm[key]
        total = compute_s + comm_s
        estimated = any(self._profile(config, i).is_estimate for i in range(len(config.groups)))
        return Estimate(
            total, 0.0, total, total, compute_s, comm_s, estimated, 0.0, "additive: compute + communication"
        )


def apm_predictor(profiles: Mapping[str, Profile], alpha_beta: BusBandwidthModel) -> AdditivePredictor:
    """The paper's APM baseline: Nexus' linear compute model through every profiled batch, Daydream's
    alpha-beta allreduce, Cynthia's no-overlap iteration model, no variance."""
    return AdditivePredictor("apm", profiles, alpha_beta, linearize=True)


def paleo_predictor(profiles: Mapping[str, Profile]) -> AdditivePredictor:
    """The Paleo baseline: per-layer FLOPs/peak and bytes/bandwidth on the datasheet (from op counts only,
    no measured time), Paleo's allreduce estimate (mean of tree and ring), no overlap, no variance."""
    from srifty.plan.methods.paleo import paleo_profile
    from srifty.plan.methods.paleo_net import PaleoBandwidthModel

    analytic = {}
    for key, profile in profiles.items():
        gpu = profile.device.gpu
        if gpu is None:
            raise ProfileError(f"Paleo needs a GPU to predict for; the profile for {key} is a CPU profile")
        analytic[key] = paleo_profile(profile, gpu)
    return AdditivePredictor("paleo", analytic, PaleoBandwidthModel(), linearize=False)
