"""Synthetic probe rows for unit tests of the network models (not measurements: a seeded alpha-beta
ring model with per-allocation placement factors, so that tests know the truth)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from srifty.units import gbps_to_bytes_per_s
from srifty.vocab.busbw import busbw_bytes_per_s

SIZES_BYTES = [4 * 4**i for i in range(12)]  # 4 B … 16 MiB


def synth_probes(
    rng: np.random.Generator,
    n_allocations: int = 6,
    ratings_gbps: tuple[float, ...] = (10.0, 50.0),
    world_sizes: tuple[int, ...] = (2, 4, 8),
    repeats: int = 2,
    hop_latency_s: float = 20e-6,
) -> pd.DataFrame:
    """Rows of a ring allreduce ``t = 2(n−1)·latency + 2(n−1)/n·s / (rated·factor)`` with noise."""
    rows = []
    for rated in ratings_gbps:
        for a in range(n_allocations):
            factor = rng.uniform(0.6, 1.0)
            allocation = f"r{rated:g}-a{a}"
            for n in world_sizes:
                for k in (1, 2):
                    for s in SIZES_BYTES:
                        for r in range(repeats):
                            link_bytes_per_s = gbps_to_bytes_per_s(rated) * factor / k
                            t = 2 * (n - 1) * hop_latency_s + 2 * (n - 1) / n * s / link_bytes_per_s
                            t *= rng.lognormal(0.0, 0.03)
                            rows.append(
                                {
                                    "size_bytes": s,
                                    "world_size": n,
                                    "n_nodes": n,
                                    "gpus_per_node": 1,
                                    "n_concurrent": k,
                                    "rated_network_gbps": rated,
                                    "allocation_id": allocation,
                                    "timestamp_s": 1.7e9 + a * 3600.0 + r,
                                    "repeat": r,
                                    "cloud": "aws",
                                    "region": "us-east-1",
                                    "zone": "use1-az1",
                                    "busbw_bytes_per_s": float(busbw_bytes_per_s(s, n, t)),
                                    "time_s": t,
                                }
                            )
    return pd.DataFrame(rows)
