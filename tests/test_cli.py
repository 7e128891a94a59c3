"""The CLI skeleton: catalog listing, error handling, unbuilt commands."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO


def test_catalog_list_t4_aws_shows_g4dn_with_prices(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("catalog", "list", "--gpu", "T4", "--cloud", "aws")
    assert code == 0
    assert "g4dn.8xlarge" in out and "g4dn.12xlarge" in out
    assert "$2.176" in out  # on-demand price of g4dn.8xlarge
    assert "$0.671" in out  # its cheapest us-east-1 zone's spot price
    assert "p3.8xlarge" not in out


def test_catalog_list_json(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("catalog", "list", "--gpu", "V100", "--region", "us-east-1", "--spot", "--json")
    assert code == 0
    doc = json.loads(out)
    names = {row["name"] for row in doc["instance_types"]}
    assert {"p3.2xlarge", "p3.8xlarge", "p3.16xlarge"} <= names
    assert all(row["spot_usd_per_hour"] is not None for row in doc["instance_types"])


def test_catalog_gcp_rows_carry_the_host_vm_note(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("catalog", "list", "--cloud", "gcp", "--gpu", "T4")
    assert code == 0 and "host VM is not included" in out


def test_user_error_exit_code_2_and_debug_traceback(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("catalog", "list", "--gpu", "T5")
    assert code == 2 and "Did you mean 'T4'" in err and "Traceback" not in err
    code, _, err = cli("--debug", "catalog", "list", "--gpu", "T5")
    assert code == 2 and "Traceback" in err


def test_usage_error_is_not_a_traceback(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("catalog", "list", "--no-such-flag")
    assert code == 2 and "No such option" in err and "Traceback" not in err


def test_console_script_is_installed() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "srifty.cli.main", "--version"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.startswith("srifty ")
