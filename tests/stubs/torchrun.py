"""A stand-in for ``torchrun`` on a machine without the cluster: records its arguments and starts the target
once, as torchrun starts each worker (``python SCRIPT ARGS`` or, under ``--no-python``, ``ARGS`` as is), with
the variables torchrun sets for rank 0 of this node. The recorded arguments are parsed by torch's own
``torch.distributed.run`` parser in the test (importing torch here would cost seconds per line)."""

import json
import os
import subprocess
import sys


def main(argv: list[str]) -> int:
    options, rest = [], list(argv)
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "--module"):
        options.append(rest.pop(0))
    with open(os.environ["TORCHRUN_STUB_LOG"], "a") as log:
        log.write(json.dumps({"argv": argv, "cwd": os.getcwd()}) + "\n")
    values = dict(o[2:].split("=", 1) for o in options if "=" in o)
    env = {
        **os.environ,
        "RANK": str(int(values.get("node-rank", "0")) * int(values.get("nproc-per-node", "1"))),
        "LOCAL_RANK": "0",
        "WORLD_SIZE": os.environ.get("SRIFTY_WORLD_SIZE", "1"),
        "MASTER_ADDR": values.get("master-addr", ""),
        "MASTER_PORT": values.get("master-port", ""),
    }
    if "--no-python" in options:
        return subprocess.run(rest, env=env, check=False).returncode
    return subprocess.run([sys.executable, *rest], env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
