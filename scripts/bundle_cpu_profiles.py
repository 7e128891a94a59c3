"""Profile the bundled models on this machine's CPU and write them as srifty's embedded default profiles.

Run: ``python scripts/bundle_cpu_profiles.py [--only NAME ...]`` (about 25 minutes on 2 cores).
Writes ``src/srifty/compute/data/profiles/<model>__cpu.json``; the README there records the machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from srifty.compute import profile_filename
from srifty.compute.measure import profile_model
from srifty.compute.measure.profiler import ProfileOptions

OUT = Path(__file__).resolve().parents[1] / "src" / "srifty" / "compute" / "data" / "profiles"

# (model, CPU batch cap, timed iterations, seq_len): caps keep each model within a few minutes.
MODELS: list[tuple[str, int, int, int]] = [
    ("resnet18", 64, 5, 128),
    ("resnet50", 32, 5, 128),
    ("mobilenet_v2", 64, 5, 128),
    ("vgg16", 16, 4, 128),
    ("alexnet", 64, 5, 128),
    ("inception_v3", 32, 4, 128),
    ("shufflenet_v2_x1_0", 64, 5, 128),
    ("srifty.compute.zoo:dlrm", 256, 5, 128),
    ("hf:bert-small", 64, 5, 128),
    ("hf:gpt2-small", 32, 5, 128),
    ("hf:bert-base", 16, 4, 128),
    ("hf:xlm", 4, 3, 128),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", help="profile only these models")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    for name, cap, iters, seq_len in MODELS:
        if args.only and name not in args.only:
            continue
        started = time.time()
        options = ProfileOptions(
            device="cpu",
            max_batch_cap=cap,
            warmup_iters=1,
            timed_iters=iters,
            threads=args.threads,
            seq_len=seq_len,
        )
        profile = profile_model(name, options)
        path = OUT / profile_filename(profile.model, "cpu")
        profile.save(path)
        print(f"{name}: max batch {profile.max_batch}, {time.time() - started:.0f} s -> {path}", flush=True)


if __name__ == "__main__":
    main()
