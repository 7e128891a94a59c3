"""The peer rank of the interference measurement: ``python -m srifty.compute.measure.interference_peer``.

Started by :mod:`srifty.compute.measure.interference` on this machine. It leaves the profiled process's CPU
quota where it can (it stands for another VM), says where it ended up under the store key ``peer/where``,
joins a two-rank gloo group over loopback, and then, for each command ``round/K`` the profiler sets in the
store (a comma-separated list of float32 element counts, or ``stop``), allreduces zero tensors of those
sizes in that order, so each pairs with the profiler's own allreduce of the same size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys

import torch
import torch.distributed as dist

from srifty.compute.measure.cpu_quota import leave_cpu_quota


def gloo_group(store: dist.Store, rank: int, timeout_s: float) -> dist.ProcessGroupGloo:
    """A two-rank gloo group over loopback, without touching torch.distributed's default group."""
    options = dist.ProcessGroupGloo._Options()  # type: ignore[attr-defined]
    options._devices = [dist.ProcessGroupGloo.create_device(hostname="127.0.0.1")]
    options._timeout = dt.timedelta(seconds=timeout_s)
    return dist.ProcessGroupGloo(dist.PrefixStore("gloo", store), rank, 2, options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--timeout-s", type=float, default=300.0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    timeout = dt.timedelta(seconds=args.timeout_s)
    store = dist.TCPStore("127.0.0.1", args.port, 2, False, timeout=timeout)
    store.set("peer/where", leave_cpu_quota())
    group = gloo_group(store, 1, args.timeout_s)
    buffers: dict[int, torch.Tensor] = {}
    round_index = 0
    while True:
        command = store.get(f"round/{round_index}").decode()
        round_index += 1
        if command == "stop":
            break
        works = []
        for numel in (int(n) for n in command.split(",")):
            if numel not in buffers:
                buffers[numel] = torch.zeros(numel)
            works.append(group.allreduce([buffers[numel]]))  # type: ignore[attr-defined]
        for work in works:
            work.wait()
    sys.stdout.flush()
    os._exit(0)  # torch's gloo can abort in C++ destructors at exit after all work is done


if __name__ == "__main__":
    sys.exit(main())
