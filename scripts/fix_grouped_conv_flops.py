"""Correct the grouped-convolution backward FLOPs of profiles made before srifty counted them right.

torch's ``flop_counter`` counts the weight gradient of a grouped convolution as if it were dense (``groups``
times too many FLOPs; a depthwise backward came out 33x its forward). :mod:`srifty.compute.measure.opcount` now
counts each requested gradient at the forward's FLOPs. This script re-records one iteration of each
profile's model at the profile's op-count batch sizes with the corrected counter and replaces the FLOP
columns only: the op sequence, counts, bytes and measured times must match the file's, and stay as they
were measured. Profiles without grouped convolutions come out unchanged.

Usage: ``python scripts/fix_grouped_conv_flops.py PROFILE.json...`` (rewrites the files atomically).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import torch

from srifty.compute import GROUPED_CONV_FIX, load_profile
from srifty.compute.measure.opcount import FLOP_FORMULAS, merge_records, record_iteration
from srifty.compute.measure.profiler import ProfileOptions, _Trainer
from srifty.compute.measure.workloads import build_workload


def fix(path: Path) -> str:
    profile = load_profile(path)
    work = profile.work
    if work is None:
        return f"{path}: no op counts, skipped"
    extra = dict(profile.extra)
    workload = build_workload(
        profile.model, seq_len=int(extra.get("seq_len") or 128), image_size=extra.get("image_size"), seed=0
    )
    trainer = _Trainer(workload, ProfileOptions(device="cpu", precision=profile.precision, optimizer=profile.optimizer))
    lo, hi = work.batches
    trainer.iteration(lo)  # the first step creates the optimizer's state; the profiler counted warm steps
    fresh = merge_records(record_iteration(trainer, lo), record_iteration(trainer, hi))
    same = [(r.phase, r.op, r.dtype, r.count, r.bytes) for r in work.records]
    if same != [(r.phase, r.op, r.dtype, r.count, r.bytes) for r in fresh]:
        raise SystemExit(f"{path}: the re-recorded op sequence differs from the file's; not changed")
    changed = sum(old.flops != new.flops for old, new in zip(work.records, fresh, strict=True))
    if changed and GROUPED_CONV_FIX in work.flop_formulas:
        raise SystemExit(f"{path}: counted with the fix already, yet the FLOPs differ; not changed")
    records = tuple(
        replace(old, flops=new.flops, variant=new.variant) for old, new in zip(work.records, fresh, strict=True)
    )
    note = f" FLOPs of {changed} grouped-convolution backward record(s) corrected by scripts/fix_grouped_conv_flops.py."
    fixed = profile.with_changes(
        work=replace(work, records=records, flop_formulas=FLOP_FORMULAS),
        notes=(profile.notes + note).strip() if changed else profile.notes,
    )
    fixed.save(path)
    return f"{path}: {changed} record(s) corrected"


if __name__ == "__main__":
    torch.manual_seed(0)
    for arg in sys.argv[1:]:
        print(fix(Path(arg)), flush=True)
