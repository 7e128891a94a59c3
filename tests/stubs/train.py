"""A stand-in training script: records the environment srifty's exported commands hand it, then exits."""

import json
import os
import sys

with open(os.environ["TRAIN_STUB_LOG"], "a") as log:
    env = {k: v for k, v in os.environ.items() if k.startswith("SRIFTY_") or k in ("RANK", "MASTER_ADDR")}
    log.write(json.dumps({"argv": sys.argv, "env": env}) + "\n")
