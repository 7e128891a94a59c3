"""What the simulator returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SimResult:
    """Predicted iteration-time distribution of one configuration (seconds).

    Attributes:
        iter_mean_s, iter_std_s, iter_p5_s, iter_p50_s, iter_p95_s: over the sampled iterations.
        fw_mean_s, bwd_mean_s, step_mean_s: compute phases of the slowest VM, averaged.
        pe_mean_s: mean end of parameter exchange (``t_pe``) from the start of backward.
        comm_exposed_mean_s: mean ``max(0, t_pe − t_bwd)``: communication not hidden by backward.
        throughput_samples_per_s: global batch / mean iteration time.
        b_cap_bytes_per_s: the per-VM bus-bandwidth cap used.
        n_transfers: buckets (or layers) exchanged per iteration.
        slowest_group: the group whose compute is slowest on average.
        estimated_profiles: whether any profile used was estimated rather than measured.
        iteration_model: how backward and communication were combined: measured interference, or perfect
            overlap and why.
        iter_mean_error_s: standard deviation of the *mean* iteration time due to model error (the profiles'
            expected errors on the compute share, the bandwidth model's held-out error on communication): a
            systematic error, the same in every iteration.
        parallelism: ``ddp``, ``fsdp`` or ``hsdp`` (for a sharded one, ``pe_mean_s`` is the last collective's
            end from the start of backward and ``n_transfers`` counts its collectives).
    """

    config: str
    world_size: int
    global_batch: int
    iters: int
    iter_mean_s: float
    iter_std_s: float
    iter_p5_s: float
    iter_p50_s: float
    iter_p95_s: float
    fw_mean_s: float
    bwd_mean_s: float
    step_mean_s: float
    pe_mean_s: float
    comm_exposed_mean_s: float
    throughput_samples_per_s: float
    b_cap_bytes_per_s: float
    n_transfers: int
    slowest_group: str
    estimated_profiles: bool
    iter_mean_error_s: float = 0.0
    iteration_model: str = ""
    parallelism: str = "ddp"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)
