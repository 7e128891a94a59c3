"""FSDP jobs for real: `srifty.torch.fsdp` under torchrun on 127.0.0.1, and `srifty run` on the network testbed
with a host lost mid-run, relaunched at a smaller world size from a resharded DCP checkpoint."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from srifty.runtime import HostFault
from srifty.runtime.cluster_api import run_cluster_job
from srifty.runtime.decisions import DecisionLog
from srifty.runtime.launchers import NetnsLauncher
from tests.conftest import EXAMPLES, REPO
from tests.sshd import namespace_pids
from tests.testbeds import own_testbed

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

TRAIN = ["python", str(EXAMPLES / "train_fsdp.py")]
CAN_NETNS = os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("tc") is not None
ITERATIONS = 40


def _torchrun(tmp_path: Path, ranks: int, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", str(ranks)]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd += ["--master-addr", "127.0.0.1", "--master-port", str(port)]
    base = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "SRIFTY_CKPT_EVERY": "10"}
    base["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), base.get("PYTHONPATH", "")])
    base["SRIFTY_CKPT_DIR"] = str(tmp_path / "ckpt")
    return subprocess.run(
        [*cmd, TRAIN[1]], capture_output=True, text=True, env={**base, **env}, cwd=tmp_path, timeout=300, check=False
    )


def _losses(text: str) -> dict[int, float]:
    return {int(i): float(v) for i, v in re.findall(r"iteration=(\d+) rank=0 \S+ loss=([0-9.]+)", text)}


def test_hsdp_with_checkpointing_resumes_as_fsdp_on_fewer_ranks_with_unequal_batches(tmp_path: Path) -> None:
    """4 ranks (2 replicas × 2 shards, every block checkpointed) save at iteration 10; 3 ranks of unequal
    local batches shard the same DCP checkpoint another way and carry on."""
    first = _torchrun(
        tmp_path,
        4,
        {
            "SRIFTY_PARALLELISM": "hsdp",
            "SRIFTY_SHARD_GROUP_SIZE": "2",
            "SRIFTY_ACTIVATION_CHECKPOINTING": "1",
            "SRIFTY_RANK_BATCHES": "4,4,4,4",
            "SRIFTY_GLOBAL_BATCH": "16",
            "SRIFTY_ITERATIONS": "10",
        },
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert "parallelism=hsdp world=4 resumed_at=0" in first.stdout
    second = _torchrun(
        tmp_path,
        3,
        {
            "SRIFTY_PARALLELISM": "fsdp",
            "SRIFTY_SHARD_GROUP_SIZE": "3",
            "SRIFTY_RANK_BATCHES": "8,5,3",
            "SRIFTY_GLOBAL_BATCH": "16",
            "SRIFTY_ITERATIONS": "20",
        },
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "parallelism=fsdp world=3 resumed_at=10" in second.stdout
    before, after = _losses(first.stdout), _losses(second.stdout)
    assert sorted(before) == list(range(1, 11)) and sorted(after) == list(range(11, 21))
    # the model resumed where it stopped: its loss continues from the trained level, not from scratch
    assert after[11] < 0.9 * before[1]
    assert sum(after[i] for i in range(16, 21)) / 5 < sum(before[i] for i in range(1, 6)) / 5


@pytest.fixture
def two_hosts(tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """A 2-host testbed of this test process (g4dn.xlarge: one process per host) holding the controller address."""
    if not CAN_NETNS:
        pytest.skip("needs root and iproute2 (ip, tc) for network namespaces")
    with own_testbed(2, tmp_path / "state", "f") as found:
        yield found


@pytest.mark.root
def test_an_fsdp_job_on_two_testbed_hosts_loses_one_and_resumes_sharded_on_the_other(
    two_hosts: tuple[str, Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from srifty.network.testbed import hosts as tb

    monkeypatch.setenv("TRAIN_FSDP_STEP_S", "0.05")
    name, state_dir, namespaces = two_hosts
    doc = yaml.safe_load((EXAMPLES / "tiny-fsdp.yaml").read_text())
    doc["model"]["profiles"] = [str(EXAMPLES / p) for p in doc["model"]["profiles"]]
    doc["iterations"] = ITERATIONS
    spec_path = tmp_path / "job.yaml"
    spec_path.write_text(yaml.safe_dump(doc))
    addresses = sorted(namespaces)
    hostfile = tmp_path / "hosts.txt"
    hostfile.write_text("".join(f"{a} g4dn.xlarge spot\n" for a in addresses))
    launcher = NetnsLauncher(namespaces)
    launcher.env = {"GLOO_SOCKET_IFNAME": tb.HOST_IFACE}

    def inject(fault: str, address: str, pids: list[int]) -> None:
        tb.vanish(name, address, state_dir)

    run_dir = tmp_path / "run"
    outcome = run_cluster_job(
        spec_path, TRAIN, run_dir, hostfile, launcher, config_text="2xg4dn.xlarge@32",
        faults=[HostFault("vanish", 15, 1)], inject=inject, endpoint_address=tb.CONTROLLER_HOST,
        heartbeat_timeout_s=5.0, lease_s=10.0, ckpt_every=10, forward_env=["TRAIN_FSDP_STEP_S"],
    )  # fmt: skip
    assert outcome.iterations == ITERATIONS and outcome.launches == 2
    timeline = json.loads((run_dir / "timeline.json").read_text())
    launches = [e for e in timeline if e["event"] == "launch"]
    assert [len(e["hosts"]) for e in launches] == [2, 1] and addresses[1] not in launches[-1]["hosts"]
    log = (run_dir / "hosts" / f"{addresses[0]}.log").read_text()
    assert "parallelism=fsdp world=2 resumed_at=0" in log
    assert "parallelism=fsdp world=1 resumed_at=10" in log  # the checkpoint of 2 shards, loaded into 1
    iterations = [e for e in timeline if e["event"] == "iteration"]
    assert {e["iteration"] for e in iterations} == set(range(1, ITERATIONS + 1))
    losses = [e["loss"] for e in iterations]
    resumed = next(e["loss"] for e in iterations if e["iteration"] == 11 and e is not iterations[10])
    assert resumed < 0.9 * losses[0]  # the loss carries on from the checkpoint, it does not start over
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5
    actions = [d.action for d in DecisionLog(run_dir / "decisions.jsonl").read()]
    assert actions[0] == "start" and "host_lost" in actions and actions[-1] == "finish"
    tb.heal(name, addresses[1], state_dir)
    assert {ns: namespace_pids(ns) for ns in namespaces.values()} == {ns: [] for ns in namespaces.values()}
