"""SkyPilot's real optimizer ranking the SkyPilot #4714 candidates, with and without srifty's estimator.

Runs in SkyPilot's venv with srifty installed there (the estimator is called inside SkyPilot's process), the
clouds stubbed as SkyPilot's own dry-run tests stub them (tests/sky_stub.py) and SkyPilot's catalog seeded
from srifty's bundled one (``SKY_RUNTIME_DIR``). Prints one JSON document:

* ``per_nodes``: for each node count n, one ``any_of`` task of n nodes over H200:8, H100:8, A100:8 and L4:8
  (AWS us-east-1, on-demand), ranked by SkyPilot's optimizer (its choice, then its choice with that one
  blocked, and so on) with the default one-hour estimate and with srifty's estimator, beside srifty's own
  ranking of the same configurations;
* ``issue_4714``: the four candidates at their own node counts (1xH200:8, 2xH100:8, 4xA100:8, 8xL4:8): SkyPilot
  0.14.1 keeps ``num_nodes`` per task, not per candidate (#4714 is open), so each is a task of its own, and
  SkyPilot's estimated cost for each (its price for the node count times the estimate) ranks them;
* ``spot``: srifty's answer for one candidate on spot and on demand;
* ``example``: the last line examples/skypilot_estimator.py prints, run here as a user runs it.

Usage: ``python skypilot_estimator_check.py SPEC_FILE [MINIMIZE]`` (``cost`` or ``time``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

CANDIDATES = {"H200": 1, "H100": 2, "A100": 4, "L4": 8}  # SkyPilot #4714: GPU type -> node count
REGION = "us-east-1"


def main(spec_file: str, minimize: str = "cost") -> None:
    import sky
    from sky import exceptions, optimizer
    from sky.utils import common

    from sky_stub import stub_clouds
    from srifty.integrations.skypilot import time_estimator
    from srifty.spec import load_spec

    stub_clouds()
    target = common.OptimizeTarget.COST if minimize == "cost" else common.OptimizeTarget.TIME
    spec = load_spec(spec_file)

    def ranked(num_nodes: int, gpus: list[str], estimator: Any) -> list[dict[str, Any]]:
        """SkyPilot's order: its choice, then its choice with the earlier ones blocked."""
        order: list[dict[str, Any]] = []
        blocked: list[Any] = []
        while len(order) < len(gpus):
            with sky.Dag() as dag:
                task = sky.Task(name="job", run="true", num_nodes=num_nodes)
                task.set_resources(
                    {sky.Resources(infra=f"aws/{REGION}", accelerators={g: 8}, use_spot=False) for g in gpus}
                )
                if estimator is not None:
                    task.set_time_estimator(estimator)
            try:
                optimizer.Optimizer.optimize(dag, minimize=target, blocked_resources=blocked, quiet=True)
            except exceptions.ResourcesUnavailableError:
                break
            best = task.best_resources
            (gpu,) = best.accelerators
            runtime_s = 3600.0 if estimator is None else estimator(best)
            order.append({
                "gpu": gpu, "instance_type": best.instance_type, "nodes": num_nodes,
                "skypilot_runtime_s": runtime_s, "skypilot_cost_usd": best.get_cost(runtime_s) * num_nodes,
            })  # fmt: skip
            blocked.append(sky.Resources(infra="aws", accelerators={gpu: 8}))
        return order

    def srifty_rank(num_nodes: int, gpus: list[str]) -> list[dict[str, Any]]:
        estimator = time_estimator(spec, num_nodes)
        rows = []
        for gpu in gpus:
            instance = estimator.instance_for(sky.Resources(infra=f"aws/{REGION}", accelerators={gpu: 8}))
            answer = None if instance is None else estimator.estimate_type(instance, "on_demand")
            if answer is not None:
                rows.append({"gpu": gpu, "config": answer.config, "time_s": answer.job_time_s,
                             "cost_usd": answer.cost_usd, "iter_mean_s": answer.iter_mean_s})  # fmt: skip
        key = "cost_usd" if minimize == "cost" else "time_s"
        return sorted(rows, key=lambda r: r[key])

    gpus = list(CANDIDATES)
    per_nodes = {}
    for n in sorted(set(CANDIDATES.values())):
        per_nodes[n] = {
            "skypilot_default": ranked(n, gpus, None),
            "skypilot_srifty": ranked(n, gpus, time_estimator(spec, n)),
            "srifty": srifty_rank(n, gpus),
        }
    issue = {"skypilot_default": [], "skypilot_srifty": [], "srifty": []}
    for gpu, n in CANDIDATES.items():
        issue["skypilot_default"] += ranked(n, [gpu], None)
        issue["skypilot_srifty"] += ranked(n, [gpu], time_estimator(spec, n))
        issue["srifty"] += srifty_rank(n, [gpu])
    key = "skypilot_cost_usd" if minimize == "cost" else "skypilot_runtime_s"
    for name in ("skypilot_default", "skypilot_srifty"):
        issue[name].sort(key=lambda r: r[key])
    issue["srifty"].sort(key=lambda r: r["cost_usd" if minimize == "cost" else "time_s"])
    spot_probe = time_estimator(spec, 2)
    p5 = spot_probe.instance_for(sky.Resources(infra=f"aws/{REGION}", accelerators={"H100": 8}))
    spot = {m: spot_probe.estimate_type(p5, m).__dict__ for m in ("on_demand", "spot")} if p5 else {}
    example = _run_example(spec_file)
    print(json.dumps({"per_nodes": per_nodes, "issue_4714": issue, "spot": spot, "example": example}, default=str))


def _run_example(spec_file: str) -> str:
    """examples/skypilot_estimator.py as a user runs it (here on the stubbed clouds): its last line."""
    import contextlib
    import io
    import runpy

    example = Path(__file__).resolve().parents[1] / "examples" / "skypilot_estimator.py"
    saved, sys.argv = sys.argv, [str(example), spec_file, "2"]
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            runpy.run_path(str(example), run_name="__main__")
    finally:
        sys.argv = saved
    return printed.getvalue().strip().splitlines()[-1]


if __name__ == "__main__":
    main(*sys.argv[1:])
