"""Host files, mapping configurations onto hosts, the controller's endpoint, and bad input to `srifty run --hosts`
(exit code 2, a message naming the problem, nothing launched)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from srifty.errors import SpecError
from srifty.runtime.endpoint import ControllerEndpoint
from srifty.runtime.hosts import assign_hosts, inventory, parse_hostfile
from srifty.runtime.launchers import LocalLauncher, SshLauncher
from srifty.vocab import parse_config
from tests.conftest import EXAMPLES, REPO

GOOD = """\
# three VMs and a spare
10.0.0.1   g4dn.xlarge   spot
10.0.0.2   g4dn.xlarge   Spot          # trailing comment
gpu-7.lab  g4dn.12xlarge on-demand     user=ubuntu port=2222

10.0.0.4   g4dn.xlarge
"""


def test_a_host_file_is_read_with_its_comments_markets_and_login_options() -> None:
    hosts = parse_hostfile(GOOD, "us-east-1")
    assert [h.address for h in hosts] == ["10.0.0.1", "10.0.0.2", "gpu-7.lab", "10.0.0.4"]
    assert [h.market for h in hosts] == ["spot", "spot", "on_demand", "on_demand"]
    assert hosts[2].user == "ubuntu" and hosts[2].port == 2222 and hosts[2].gpus == 4
    assert hosts[2].line == 4
    assert inventory(hosts) == {
        ("g4dn.xlarge", "spot"): 2,
        ("g4dn.12xlarge", "on_demand"): 1,
        ("g4dn.xlarge", "on_demand"): 1,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10.0.0.1 g4dn.xlarg spot\n", r"line 1: unknown instance type 'g4dn.xlarg'.*g4dn\.xlarge"),
        ("10.0.0.1 g4dn.xlarge spot\n10.0.0.1 g4dn.xlarge spot\n", r"line 2: address 10\.0\.0\.1 is already on line 1"),
        ("10.0.0.1 g4dn.xlarge cheap\n", r"market 'cheap' is neither spot nor on_demand"),
        ("10.0.0.1 slots=4\n", r"line 1: '10\.0\.0\.1 slots=4' is not a host line"),
        ("10.0.0.1 g4dn.xlarge spot slots=1\n", r"'slots=' is not used.*g4dn\.xlarge has 1"),
        ("10.0.0.1;reboot g4dn.xlarge\n", r"is not an IP address or a host name"),
        ("-oProxyCommand g4dn.xlarge\n", r"is not an IP address or a host name"),
        ("10.0.0.1 g4dn.xlarge spot port=0\n", r"option 'port=0'"),
        ("10.0.0.1 g4dn.xlarge spot user=$(id)\n", r"option 'user=\$\(id\)'"),
        ("# nothing here\n\n", r"lists no host"),
    ],
)
def test_a_bad_host_file_is_refused_with_its_line_and_the_fix(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_hostfile(text, "us-east-1")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("abg4dn.x1l02 =#;$-\t"), max_size=30), max_size=4))
def test_any_host_file_text_is_read_or_refused_by_name(lines: list[str]) -> None:
    try:
        hosts = parse_hostfile("\n".join(lines), "us-east-1")
    except SpecError as err:
        assert str(err)
        return
    assert len({h.address for h in hosts}) == len(hosts)


def test_a_configuration_maps_onto_hosts_group_by_group_in_file_order() -> None:
    hosts = parse_hostfile(GOOD, "us-east-1")
    config = parse_config(
        "1xg4dn.12xlarge@8,2xg4dn.xlarge@16[spot]", "us-east-1", markets={"g4dn.12xlarge": "on_demand"}
    )
    assert [h.address for h in assign_hosts(config, hosts)] == ["gpu-7.lab", "10.0.0.1", "10.0.0.2"]
    too_many = parse_config("3xg4dn.xlarge@16[spot]", "us-east-1")
    with pytest.raises(SpecError, match=r"too few hosts for 3xg4dn.xlarge@16: it needs 3 g4dn.xlarge \(spot\).* has 2"):
        assign_hosts(too_many, hosts)


def test_the_ssh_launcher_quotes_every_value_for_the_remote_shell() -> None:
    launcher = SshLauncher(identity=Path("/k"), user="me", port=2200, workdir=Path("/w d"), options=("A=b",))
    host = parse_hostfile("10.0.0.1 g4dn.xlarge spot port=22\n", "us-east-1")[0]
    argv, env = launcher.argv(host, ["python", "-c", "print('$(id)')"], {"X": "a b;c"})
    assert argv[:4] == ["ssh", "-o", "BatchMode=yes", "-o"] and "ConnectTimeout=10" in argv and env == {}
    assert argv[argv.index("-p") + 1] == "22" and argv[argv.index("-l") + 1] == "me" and "-tt" in argv
    assert argv[-3:-1] == ["10.0.0.1", "--"]
    assert argv[-1] == "cd '/w d' && exec env 'X=a b;c' python -c 'print('\"'\"'$(id)'\"'\"')'"


def test_the_endpoint_takes_reports_of_the_current_launch_only() -> None:
    with ControllerEndpoint("127.0.0.1", "secret") as endpoint:
        endpoint.start_launch("L2")

        def post(body: dict) -> tuple[int, dict]:
            request = urllib.request.Request(endpoint.url + "/report", data=json.dumps(body).encode(), method="POST")
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as err:
                return err.code, {}

        beat = {"rank": 0, "iteration": 3, "pid": 1}
        events = [{"kind": "iteration", "iteration": 3}, {"kind": "checkpoint", "step": 2}]
        assert post({"token": "wrong", "launch": "L2", "beat": beat}) == (403, {})
        assert post({"token": "secret", "launch": "L1", "beat": beat}) == (200, {"current": False})
        assert endpoint.beats() == {}
        assert post({"token": "secret", "launch": "L2", "beat": beat, "events": events}) == (200, {"current": True})
        assert endpoint.beats()[0].record["iteration"] == 3
        assert [p["iteration"] for p in endpoint.take_progress()] == [3] and endpoint.take_progress() == []
        assert endpoint.checkpoint_step == 2
        endpoint.start_launch("L3")  # a new launch forgets the beats but keeps the checkpoint
        assert endpoint.beats() == {} and endpoint.checkpoint_step == 2


FENCE_SCRIPT = """
import os, sys, time
os.environ.update(SRIFTY_CONTROLLER_URL=sys.argv[1], SRIFTY_CONTROLLER_TOKEN="t", SRIFTY_LAUNCH_ID=sys.argv[2],
                  SRIFTY_LEASE_S="1.5")
from srifty.torch.courier import courier
courier().beat({"rank": 0, "iteration": 1})
time.sleep(20)
"""


@pytest.mark.parametrize("launch", ["old", "current"])
def test_a_worker_ends_itself_when_its_launch_is_over_or_its_lease_runs_out(launch: str) -> None:
    endpoint = ControllerEndpoint("127.0.0.1", "t")
    endpoint.start_launch("current")
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", FENCE_SCRIPT, endpoint.url, launch], stderr=subprocess.PIPE)
    try:
        if launch == "current":  # heard from, then the controller goes away: the lease runs out
            deadline = time.monotonic() + 30
            while not endpoint.beats() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert endpoint.beats()[0].record["iteration"] == 1
            endpoint.close()
        _, err = proc.communicate(timeout=30)
    finally:
        if launch == "old":
            endpoint.close()
        proc.kill()
    assert proc.returncode == 75 and time.monotonic() - start < 20
    why = "launch is over" if launch == "old" else "no report reached the controller for 1.5 s"
    assert why in err.decode()


@pytest.mark.parametrize(
    ("hostfile", "extra", "message"),
    [
        ("127.0.0.1 g4dn.xlarge spot\n127.0.0.1 g4dn.xlarge spot\n", [], "already on line 1"),
        ("127.0.0.1 g5.xlarge-typo spot\n", [], "unknown instance type 'g5.xlarge-typo'"),
        ("127.0.0.1 g4dn.xlarge spot\n127.0.0.2 g4dn.xlarge spot\n", ["--config", "4xg4dn.xlarge@16"], "too few hosts"),
        ("10.9.9.9 g4dn.xlarge spot\n127.0.0.2 g4dn.xlarge spot\n", ["--config", "2xg4dn.xlarge@32"], "cannot reach 1"),
        ("127.0.0.1 g4dn.xlarge spot\n127.0.0.2 g4dn.xlarge spot\n", ["--fault", "vanish@5:7"], "hosts 0 to 1"),
        ("127.0.0.1 g4dn.xlarge spot\n", ["--fault", "explode@5:0"], "is not KIND@ITERATION:HOST"),
        ("127.0.0.1 g4dn.xlarge spot\n", ["--lease", "5"], "must be longer than --heartbeat-timeout"),
        ("127.0.0.1 g4dn.xlarge spot cpu=0\n", [], "a CPU quota is a number of cores from 0.01"),
        ("127.0.0.1 g4dn.xlarge spot cpu=fast\n", [], "or cpu=CORES"),
        ("127.0.0.1 g4dn.xlarge spot\n", ["--fault", "vanish@5:0:cpu=0.1"], "is not KIND@ITERATION:HOST"),
        ("127.0.0.1 g4dn.xlarge spot\n", ["--fault", "slow@5:0:cpu=1.2.3"], "cpu= takes a number of cores"),
        ("127.0.0.1 g4dn.xlarge spot cpu=0.5\n", ["--launcher", "ssh"], "needs the local or netns launcher"),
        ("127.0.0.1 g4dn.xlarge spot\n", ["--window", "0"], "--window must be a positive number"),
    ],
)
def test_bad_host_runs_exit_2_before_anything_is_launched(
    hostfile: str, extra: list[str], message: str, tmp_path: Path, cli
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "hosts.txt"
    path.write_text(hostfile)
    run_dir = tmp_path / "run"
    args = ["run", str(EXAMPLES / "tiny-local.yaml"), "--hosts", str(path), "--launcher", "local"]
    code, _, err = cli(
        *args, "--run-dir", str(run_dir), *extra, "--", "python", str(REPO / "examples" / "train_tiny.py")
    )
    assert code == 2, err
    assert message in " ".join(err.split()) and "Traceback" not in err
    assert not (run_dir / "run.json").exists()


def test_an_unreachable_ssh_host_is_named_before_launch(tmp_path: Path) -> None:
    if subprocess.run(["which", "ssh"], capture_output=True).returncode != 0:
        pytest.skip("the ssh client is not installed (apt-get install -y openssh-client)")
    host = parse_hostfile("127.0.0.1 g4dn.xlarge spot port=1\n", "us-east-1")[0]
    why = SshLauncher(connect_timeout_s=3, options=("StrictHostKeyChecking=no",)).check(host, 10)
    assert why is not None and ("refused" in why or "port 1" in why)
    assert LocalLauncher().check(host, 1) is None


def test_a_cpu_quota_and_a_slow_fault_are_read() -> None:
    from srifty.runtime.faults import parse_host_faults as parse_faults

    host = parse_hostfile("10.0.0.1 g4dn.xlarge spot cpu=0.45 # an emulated slower VM\n", "us-east-1")[0]
    assert host.cpu == 0.45
    assert parse_hostfile("10.0.0.1 g4dn.xlarge\n", "us-east-1")[0].cpu is None
    fault, default = parse_faults(["slow@70:2:cpu=0.2", "slow@5:0"])
    assert (fault.kind, fault.iteration, fault.host, fault.cpu) == ("slow", 70, 2, 0.2)
    assert default.cpu is None and default.describe() == "slow@5:0"
