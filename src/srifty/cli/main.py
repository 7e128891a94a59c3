"""The `srifty` command line: a thin shell over the Python API, one subcommand per pipeline stage.

User mistakes (:class:`~srifty.errors.SriftyError`) print one paragraph and exit with code 2; ``--debug``
shows the traceback as well. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from typing import Annotated

import typer

from srifty import __version__
from srifty.cli import catalog_cmd, eval_cmd, launch_cmd, network_cmd, plan_cmd, profile_cmd, run_cmd, spot_cmd
from srifty.cli.console import err, styled
from srifty.errors import OptionError, SriftyError

EXIT_USER_ERROR = 2
#: API option names whose flag is not ``--`` + the name without its unit, dashed (``lease_s`` → ``--lease``).
FLAGS = {"n_trials": "--trials", "n_folds": "--folds", "n_jobs": "--jobs"}
#: Exit code after Ctrl-C, as shells report a process ended by SIGINT.
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="srifty",
    help="Choose cloud VMs for distributed PyTorch training within a deadline and budget.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(catalog_cmd.app, name="catalog")
app.add_typer(profile_cmd.app, name="profile")
app.command("plan")(plan_cmd.plan_command)
app.command("simulate")(plan_cmd.simulate_command)
app.add_typer(network_cmd.testbed_app, name="testbed")
app.command()(network_cmd.probe)
app.command("fit-net")(network_cmd.fit_net)
app.command("fit-spot")(spot_cmd.fit_spot)
eval_cmd.app.command("spot")(spot_cmd.eval_spot_command)
app.add_typer(eval_cmd.app, name="eval")
app.command("report")(eval_cmd.report_command)
app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(run_cmd.run_command)
app.command("launch", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    launch_cmd.launch_command
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"srifty {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """srifty: which VMs to rent, how many, spot or on-demand, and what batch per VM."""


def flag_for(option: str) -> str:
    """The command-line flag that sets the API option ``option``: ``heartbeat_timeout_s`` →
    ``--heartbeat-timeout``, ``ckpt_every`` → ``--ckpt-every``."""
    return FLAGS.get(option) or "--" + option.removesuffix("_s").replace("_", "-")


def message(error: SriftyError) -> str:
    """What the CLI says about ``error``: an option's problem is worded with its flag."""
    return error.worded(flag_for) if isinstance(error, OptionError) else str(error)


def run(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run the CLI and turn user errors into exit code 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        # Standalone mode: usage errors and --help exit inside Typer, with its own messages and codes.
        app(args=args, prog_name="srifty")
    except SriftyError as error:
        if debug:
            traceback.print_exc()
        err.print(styled("bold red", "error:", f" {message(error)}"), soft_wrap=True)
        sys.exit(EXIT_USER_ERROR)
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        err.print(styled("bold red", "interrupted", " (Ctrl-C)"))
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    run()
