"""The network testbed for real (root, iproute2): up, shaped links, status, launch, down after a crash.

These tests skip where the machine cannot run them (not root, or no ``ip``/``tc``); CI runs as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from srifty.network import read_probes
from srifty.network.errors import TestbedError
from srifty.network.testbed.launch import launch
from srifty.network.testbed.namespaces import Family, down, family_from_catalog, list_links, list_namespaces, status, up
from srifty.network.testbed.state import draw_factors, state_path
from srifty.network.testbed.sweep import allocation_seed, hosts_for
from srifty.units import gbps_to_bytes_per_s
from tests.conftest import REPO
from tests.leakcheck import register_testbed

CAN_RUN = os.geteuid() == 0 and shutil.which("ip") is not None and shutil.which("tc") is not None
_skip_unless_root = pytest.mark.skipif(
    not CAN_RUN, reason="needs root and iproute2 (ip, tc) to create network namespaces and shape links"
)


def needs_root(test):  # type: ignore[no-untyped-def]
    """Mark a test as needing root and iproute2, and skip it (saying why) where they are missing."""
    return pytest.mark.root(_skip_unless_root(test))


FAMILY = Family("g4dn.8xlarge", "T4", 1, 50.0)
PROBE_SMALL = ("--repeats", "2", "--concurrency", "1")


@pytest.fixture
def name() -> Iterator[str]:
    """A testbed name of this test process only, removed afterwards whatever happens."""
    tb = register_testbed(f"t{os.getpid() % 100000}")
    yield tb
    if CAN_RUN:
        down(tb, state_dir=Path("/nonexistent-srifty-state"))


def test_allocation_factors_are_bounded_and_seeded() -> None:
    for seed in range(200):
        a, hosts = draw_factors(8, np.random.default_rng(seed))
        assert 1 / 1.8 <= a <= 1.0 and all(0.9 <= h <= 1.0 for h in hosts)
    assert draw_factors(4, np.random.default_rng(3)) == draw_factors(4, np.random.default_rng(3))
    spread = [draw_factors(1, np.random.default_rng(s))[0] for s in range(500)]
    assert max(spread) / min(spread) > 1.5  # allocations really differ, up to the paper's ~1.8×


def test_sweep_maps_world_sizes_to_hosts() -> None:
    assert hosts_for([2, 4, 6, 8], 1) == [2, 4, 6, 8]
    assert hosts_for([2, 4, 6, 8], 4) == [1, 2]
    assert allocation_seed(0, "g4dn.8xlarge", 1) != allocation_seed(0, "g4dn.8xlarge", 2)


def test_families_come_from_the_catalog_with_their_intra_node_link() -> None:
    g4 = family_from_catalog("g4dn.12xlarge")
    assert (g4.gpu, g4.gpus_per_host, g4.rated_network_gbps) == ("T4", 4, 50.0)
    assert g4.intra_node_gbps_per_gpu == pytest.approx(128.0)  # PCIe 3 x16: 16 GB/s per direction
    p3 = family_from_catalog("p3.8xlarge")
    assert p3.intra_node_gbps_per_gpu == pytest.approx(1200.0)  # NVLink 2: 300 GB/s both ways
    assert family_from_catalog("g4dn.8xlarge", rated_network_gbps=7.0).rated_network_gbps == 7.0


@needs_root
def test_multi_gpu_hosts_shape_their_loopback(name: str, tmp_path: Path) -> None:
    state = up(name, 1, family_from_catalog("g4dn.12xlarge"), scale=50.0, state_dir=tmp_path)
    assert state.gpus_per_host == 4
    assert state.intra_node_shaped_gbps == pytest.approx(4 * 128.0 / 50.0)
    (_, hosts) = status(name, state_dir=tmp_path)[name]
    assert hosts[0].loopback_gbps == pytest.approx(state.intra_node_shaped_gbps, rel=0.01)
    down(name, state_dir=tmp_path)
    single = up(name, 1, FAMILY, state_dir=tmp_path)
    assert single.intra_node_shaped_gbps is None
    assert status(name, state_dir=tmp_path)[name][1][0].loopback_gbps is None


@needs_root
def test_up_shapes_links_and_down_removes_everything(name: str, tmp_path: Path) -> None:
    state = up(name, 2, FAMILY, scale=500.0, seed=4, state_dir=tmp_path)  # 100 Mbit/s before placement
    assert list_namespaces(name) == [f"srifty-{name}-h0", f"srifty-{name}-h1"]
    assert f"sft-{name}-br" in list_links(name)
    assert state_path(name, tmp_path).is_file()
    with pytest.raises(TestbedError, match="already up"):
        up(name, 2, FAMILY, state_dir=tmp_path)
    found_state, hosts = status(name, state_dir=tmp_path)[name]
    assert found_state == state
    for host, found in zip(state.hosts, hosts, strict=True):
        assert found.ip == host.ip
        assert found.up_gbps == pytest.approx(host.shaped_gbps, rel=0.01)
        assert found.down_gbps == pytest.approx(host.shaped_gbps, rel=0.01)
    # Real traffic from host 1 to host 0 runs at the shaped rate: 2.5 MB at ~0.1 Gbit/s takes ~0.2 s.
    rate_bytes_per_s = gbps_to_bytes_per_s(min(h.shaped_gbps for h in state.hosts))
    elapsed_s = _transfer_s(state.hosts[0].namespace, state.hosts[1].namespace, state.hosts[0].ip, 2_500_000)
    assert 0.8 * 2_500_000 / rate_bytes_per_s < elapsed_s < 3 * 2_500_000 / rate_bytes_per_s
    removed = down(name, state_dir=tmp_path)
    assert f"srifty-{name}-h0" in removed and not list_namespaces(name) and not list_links(name)
    assert not state_path(name, tmp_path).exists()


def _transfer_s(server_ns: str, client_ns: str, server_ip: str, n_bytes: int) -> float:
    server = (
        "import socket,sys\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
        f"s.bind(('{server_ip}',29123));s.listen(1);print('ready',flush=True)\nc,_=s.accept();n=0\n"
        f"while n<{n_bytes}:\n  d=c.recv(1<<20)\n  n+=len(d)\n  if not d: break\nc.sendall(b'k')\n"
    )
    client = (
        f"import socket,time\ns=socket.create_connection(('{server_ip}',29123))\nt=time.perf_counter()\n"
        f"s.sendall(bytes({n_bytes}));s.recv(1)\nprint(time.perf_counter()-t)\n"
    )
    server_cmd = ["ip", "netns", "exec", server_ns, sys.executable, "-c", server]
    client_cmd = ["ip", "netns", "exec", client_ns, sys.executable, "-c", client]
    srv = subprocess.Popen(server_cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None and srv.stdout.readline().strip() == "ready"
        out = subprocess.run(client_cmd, capture_output=True, text=True, timeout=60, check=True)
        return float(out.stdout.strip())
    finally:
        srv.wait(timeout=30)


@needs_root
def test_down_cleans_up_after_a_crash(name: str, tmp_path: Path) -> None:
    up(name, 2, FAMILY, state_dir=tmp_path)
    state_path(name, tmp_path).unlink()  # as if `up` or its caller had died
    found_state, hosts = status(name, state_dir=tmp_path)[name]
    assert found_state is None and len(hosts) == 2
    sleeper = subprocess.Popen(["ip", "netns", "exec", f"srifty-{name}-h1", "sleep", "300"])
    time.sleep(0.3)
    down(name, state_dir=tmp_path)
    assert sleeper.wait(timeout=10) != 0  # the process left inside was stopped
    assert not list_namespaces(name) and not list_links(name)


@needs_root
def test_launch_needs_a_testbed_that_is_up(name: str, tmp_path: Path) -> None:
    with pytest.raises(TestbedError, match="is not up"):
        launch(name, ["probe"], state_dir=tmp_path)


@needs_root
@pytest.mark.slow
def test_probe_runs_across_two_emulated_hosts(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = up(name, 2, FAMILY, scale=50.0, seed=1, state_dir=tmp_path)
    out = tmp_path / "p.parquet"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    launch(
        name,
        ["probe", "--out", str(out), "--max-size", "4MiB", "--size-step", "1024", *PROBE_SMALL],
        timeout_s=180,
        log_dir=tmp_path / "logs",
        state_dir=tmp_path,
    )
    frame = read_probes(out)
    assert len(frame) == 3 * 2  # 4 B, 4 KiB, 4 MiB
    assert frame["emulated"].all() and (frame["emulation_scale"] == 50.0).all()
    assert (frame["allocation_id"] == state.allocation_id).all() and (frame["n_nodes"] == 2).all()
    assert (frame["rated_network_gbps"] == 50.0).all() and (frame["testbed_name"] == name).all()
    assert np.allclose(frame["time_s"], frame["measured_time_s"] / 50.0)
    slowest_gbps = min(h.shaped_gbps for h in state.hosts)
    assert frame["slowest_link_gbps"].iloc[0] == pytest.approx(slowest_gbps)
    big = frame[frame["size_bytes"] == 4 * 2**20]["busbw_bytes_per_s"]
    # A 4 MiB allreduce over 2 hosts runs near the slowest shaped link; in cloud units, near the rating
    assert (big < 1.02 * gbps_to_bytes_per_s(slowest_gbps * 50)).all()
    assert (big > 0.5 * gbps_to_bytes_per_s(slowest_gbps * 50)).all()


@needs_root
@pytest.mark.slow
def test_a_failing_host_fails_the_launch_and_stops_the_rest(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    up(name, 2, FAMILY, state_dir=tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    with pytest.raises(TestbedError, match="exited with code"):
        launch(name, ["probe", "--out", "bad.csv"], timeout_s=120, log_dir=tmp_path / "logs", state_dir=tmp_path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
        subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for ns in list_namespaces(name)
    ):
        time.sleep(0.2)
    assert not any(
        subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for ns in list_namespaces(name)
    )
