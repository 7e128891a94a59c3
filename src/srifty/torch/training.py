"""What a training script run by ``srifty run`` uses: its batch, progress reports, and checkpoints.

``srifty run`` starts the script under ``torchrun`` with these variables:

* ``SRIFTY_RANK_BATCHES``: local batch of every rank, comma-separated, in rank order (or
  ``SRIFTY_LOCAL_BATCH`` when all ranks share one);
* ``SRIFTY_GLOBAL_BATCH``, ``SRIFTY_ITERATIONS``: the job;
* ``SRIFTY_RUN_DIR``: where progress and heartbeats go; ``SRIFTY_CKPT_DIR`` and ``SRIFTY_CKPT_EVERY``:
  where (a path or an fsspec URL, :mod:`srifty.checkpoints`) and how often (iterations) to checkpoint;
* ``SRIFTY_CONTROLLER_URL`` (``srifty run --hosts``): heartbeats, progress and checkpoint notices go to the
  controller over HTTP instead of files (:mod:`srifty.torch.courier`; no shared filesystem assumed).

When ``srifty run`` is interrupted (Ctrl-C, SIGTERM) it asks the workers to stop:
:meth:`RunReporter.stop_requested` turns true on every rank at the same iteration, and a script that then
saves a checkpoint and returns can be continued with ``srifty run --resume`` (``examples/train_tiny.py``).

Checkpoints use ``torch.distributed.checkpoint`` (DCP), so a job resumes on a different world size.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from srifty.artifacts import atomic_write_text
from srifty.checkpoints import STOP_REQUEST_FILE, join, read_latest, write_latest
from srifty.errors import SriftyError
from srifty.torch.courier import courier


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def rank_local_batch(rank: int | None = None, environ: Mapping[str, str] | None = None) -> int:
    """This rank's local batch, from ``SRIFTY_RANK_BATCHES`` or ``SRIFTY_LOCAL_BATCH``."""
    env = _env(environ)
    r = int(env.get("RANK", "0")) if rank is None else rank
    if "SRIFTY_RANK_BATCHES" in env:
        batches = [int(b) for b in env["SRIFTY_RANK_BATCHES"].split(",")]
        if r >= len(batches):
            raise SriftyError(f"rank {r} has no batch in SRIFTY_RANK_BATCHES ({len(batches)} ranks)")
        return batches[r]
    if "SRIFTY_LOCAL_BATCH" in env:
        return int(env["SRIFTY_LOCAL_BATCH"])
    raise SriftyError("set SRIFTY_RANK_BATCHES or SRIFTY_LOCAL_BATCH (srifty run and srifty plan --skypilot do)")


def batch_offset(rank: int | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Where this rank's slice starts in the global batch (ranks take consecutive slices)."""
    env = _env(environ)
    r = int(env.get("RANK", "0")) if rank is None else rank
    if "SRIFTY_RANK_BATCHES" in env:
        return sum(int(b) for b in env["SRIFTY_RANK_BATCHES"].split(",")[:r])
    return r * rank_local_batch(r, env)


def _scalar(value: float | torch.Tensor | None) -> float | None:
    """A float from a loss given as a number or a one-element tensor (detached: no autograd warning)."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return float(value.detach().item())
    return float(value)


class RunReporter:
    """Writes this rank's heartbeat (``rank<R>-<launch id>.json``, or ``rank<R>.json`` outside ``srifty run``)
    and, on rank 0, one progress line per iteration; under ``srifty run --hosts`` both go to the controller
    over the network instead (``SRIFTY_CONTROLLER_URL``)."""

    def __init__(self, run_dir: str | Path | None = None, rank: int | None = None) -> None:
        self.courier = courier()
        folder = run_dir or os.environ.get("SRIFTY_RUN_DIR")
        self.run_dir = Path(folder) if folder and self.courier is None else None
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else rank
        # `srifty run` tells launches apart by this id, so a leftover worker of another run is never read
        self.launch = os.environ.get("SRIFTY_LAUNCH_ID")
        self.total = int(os.environ.get("SRIFTY_ITERATIONS", "0"))
        #: The last ``(iteration, compute_s)`` reported.
        self.last_compute: tuple[int, float] | None = None
        if self.run_dir is not None:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.run_dir is not None or self.courier is not None:
            self.beat(iteration=-1, phase="started")

    def beat(
        self,
        iteration: int,
        phase: str = "done",
        loss: float | torch.Tensor | None = None,
        compute_s: float | None = None,
    ) -> None:
        """Record that this rank reached ``iteration`` (``phase``: started/done); ``loss`` may be a tensor;
        ``compute_s``: seconds this rank spent on its own compute in the iteration (see
        :meth:`iteration_done`)."""
        if self.run_dir is None and self.courier is None:
            return
        loss = _scalar(loss)
        record: dict[str, Any] = {
            "rank": self.rank,
            "launch": self.launch,
            "pid": os.getpid(),
            "iteration": iteration,
            "phase": phase,
            "time": time.time(),
            "loss": loss,
        }
        if compute_s is not None:
            self.last_compute = (iteration, float(compute_s))
        if self.last_compute is not None:  # on every beat: only a host's latest beat reaches the controller
            record["compute_iteration"], record["compute_s"] = self.last_compute
        if self.courier is not None:
            self.courier.beat({**record, "node": int(os.environ.get("GROUP_RANK", "-1"))})
            return
        assert self.run_dir is not None
        # one file per launch: a leftover worker of another launch writing its own heartbeat never hides ours
        name = f"rank{self.rank}.json" if self.launch is None else f"rank{self.rank}-{self.launch}.json"
        atomic_write_text(self.run_dir / name, json.dumps(record))

    def iteration_done(
        self, iteration: int, loss: float | torch.Tensor | None = None, compute_s: float | None = None
    ) -> None:
        """``iteration`` (1-based count) finished; rank 0 appends it to ``progress.jsonl``.

        ``compute_s`` (optional): wall-clock seconds this rank spent on its own compute in the iteration,
        without waiting on collectives (the forward pass under DDP with ``broadcast_buffers=False`` is a good
        measure). ``srifty run --hosts`` compares it across hosts to find the one that slows the job down."""
        loss = _scalar(loss)
        self.beat(iteration, "done", loss, compute_s)
        if self.courier is not None and self.rank == 0:
            self.courier.event({"kind": "iteration", "iteration": iteration, "time": time.time(), "loss": loss}, True)
            if iteration >= self.total > 0:
                self.courier.flush()  # the script may end with os._exit right after its last iteration
        if self.run_dir is not None and self.rank == 0:
            record = {"iteration": iteration, "launch": self.launch, "time": time.time(), "loss": loss}
            line = json.dumps(record) + "\n"
            with open(self.run_dir / "progress.jsonl", "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()

    def stop_requested(self) -> bool:
        """Whether ``srifty run`` asked the run to stop (its Ctrl-C or SIGTERM): a script that checks it after
        each iteration can save a checkpoint and return, and ``srifty run --resume`` then continues from there.
        Every rank gets the same answer (one ``all_reduce`` of a flag when several ranks run), so all ranks
        checkpoint and stop at the same iteration."""
        asked = self._asked_to_stop()
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            flag = torch.tensor([1 if asked else 0], dtype=torch.int32)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            return bool(flag.item())
        return asked

    def _asked_to_stop(self) -> bool:
        if self.courier is not None:
            return self.courier.stop
        if self.run_dir is None:
            return False
        try:
            record = json.loads((self.run_dir / STOP_REQUEST_FILE).read_text())
        except (OSError, ValueError):
            return False
        return isinstance(record, dict) and record.get("launch") == self.launch


def save_checkpoint(
    ckpt_dir: str | Path, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer
) -> Path | str:
    """Save model and optimizer after ``step`` iterations with DCP; then mark it the latest (rank 0).

    ``ckpt_dir`` is a path or an fsspec URL (``s3://bucket/run``; see :mod:`srifty.checkpoints`): DCP writes a
    URL through its fsspec storage. Returns the checkpoint's folder (a ``Path``, or a URL string).
    """
    name = f"step-{step:08d}"
    target = join(ckpt_dir, name)
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(target))
    if dist.is_initialized():
        dist.barrier()
    if not dist.is_initialized() or dist.get_rank() == 0:
        write_latest(ckpt_dir, step, name)
        notify = courier()
        if notify is not None:
            notify.event({"kind": "checkpoint", "step": step, "path": name}, urgent=True)
    return target


def load_checkpoint(ckpt_dir: str | Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Load the latest checkpoint in ``ckpt_dir`` (a path or an fsspec URL) into ``model`` and ``optimizer``;
    returns its step (0 when there is none)."""
    latest = read_latest(ckpt_dir)
    if latest is None:
        return 0
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state: dict[str, Any] = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=str(join(ckpt_dir, latest["path"])))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    return int(latest["step"])


def checkpoint_every(environ: Mapping[str, str] | None = None, default: int = 50) -> int:
    """Iterations between checkpoints (``SRIFTY_CKPT_EVERY``)."""
    return max(1, int(_env(environ).get("SRIFTY_CKPT_EVERY", default)))
