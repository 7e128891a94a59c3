"""Core modules name a bad option by its parameter; the CLI words the same error with the flag that set it."""

from __future__ import annotations

from srifty.cli.main import flag_for, message
from srifty.errors import OptionError
from tests.conftest import EXAMPLES


def test_an_option_error_names_parameters_and_the_cli_names_flags() -> None:
    error = OptionError(
        "lease_s", "(5 s) must be longer than {heartbeat_timeout_s} (10 s).", mentions=("heartbeat_timeout_s",)
    )
    assert str(error) == "lease_s (5 s) must be longer than heartbeat_timeout_s (10 s)."
    assert message(error) == "--lease (5 s) must be longer than --heartbeat-timeout (10 s)."
    assert message(OptionError("config", ": 3xfoo is not a configuration")) == "--config: 3xfoo is not a configuration"
    assert [flag_for(o) for o in ("ckpt_every", "hang_timeout_s", "n_trials", "half_life_days")] == [
        "--ckpt-every", "--hang-timeout", "--trials", "--half-life-days",
    ]  # fmt: skip


def test_a_fault_that_cannot_fire_is_worded_with_its_flag(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli(
        "run", str(EXAMPLES / "tiny-local.yaml"), "--config", "2xg4dn.xlarge@32", "--preempt-at", "5",
        "--preempt-rank", "2", "--", "python", str(EXAMPLES / "train_tiny.py"),
    )  # fmt: skip
    assert code == 2 and "--preempt-rank 2 does not exist" in err and "preempt_rank" not in err, err
