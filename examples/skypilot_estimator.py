"""srifty as SkyPilot's time estimator: SkyPilot's optimizer picks among GPU types with srifty's prediction of
the job instead of its one-hour default.

Run it with the Python of SkyPilot's environment, with srifty installed there (``pip install`` a wheel or
``git+https://github.com/OWNER/srifty@COMMIT``: SkyPilot 0.14.1's pins and srifty's resolve together) and a
cloud enabled (``sky check``). ``tests/test_skypilot_estimator.py`` runs it on an emulated cloud:

    ~/.sky-venv/bin/python examples/skypilot_estimator.py examples/auto-resnet50.yaml 2

It calls SkyPilot's optimizer in this process (``sky.optimizer.Optimizer.optimize``): SkyPilot 0.14's client
API sends a task to its API server as YAML, which carries no estimator. Launch the chosen resources with
``sky launch``, or let ``srifty launch`` bring up srifty's own plan.
"""

import sys

import sky
from sky import optimizer

from srifty.integrations.skypilot import time_estimator

spec, nodes = sys.argv[1], int(sys.argv[2])
with sky.Dag() as dag:
    task = sky.Task(run="python train.py", num_nodes=nodes)
    task.set_resources({sky.Resources(accelerators=gpu) for gpu in ("H200:8", "H100:8", "A100:8", "L4:8")})
    task.set_time_estimator(time_estimator(spec, task.num_nodes))  # SkyPilot does not pass num_nodes itself
optimizer.Optimizer.optimize(dag)
print(f"SkyPilot's choice with srifty's estimate: {task.best_resources}")
