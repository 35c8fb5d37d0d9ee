"""The `tauproxy` command: wiring only. Each command lives in its own module."""

from __future__ import annotations

import errno
import sys
from typing import Annotated

import typer

from tauproxy_cli import (
    bisection,
    cache,
    cassette,
    cassette_import,
    check,
    demo,
    diff,
    domains,
    estimate,
    report,
    run,
    serve,
    shipped,
    submit,
    tasks,
    view,
)
from tauproxy_cli.flag import flag
from tauproxy_cli.help_style import apply as apply_help_style

apply_help_style()
app = typer.Typer(
    name="tauproxy",
    help="Evaluate tool-using agents the tau2-bench way; record and replay every model call.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from tauproxy.version import __version__

        typer.echo(f"tauproxy {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, flag("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Evaluate tool-using agents the tau2-bench way; record and replay every model call."""


app.command("run")(run.run_command)
app.command("report")(report.report_command)
app.command("view")(view.view_command)
app.command("estimate")(estimate.estimate_command)
app.command("demo")(demo.demo_command)
app.command("diff")(diff.diff_command)
app.command("check")(check.check_command)
app.command("bisect")(bisection.bisect_command)
app.command("serve")(serve.serve_command)
app.add_typer(domains.app, name="domains")
cassette.app.command("replay-check")(shipped.replay_check_command)
cassette.app.command("rerecord")(shipped.rerecord_command)
cassette.app.command("import")(cassette_import.import_command)
app.add_typer(cassette.app, name="cassette")
app.add_typer(tasks.app, name="tasks")
app.add_typer(submit.app, name="submit")
app.add_typer(cache.app, name="cache")


def main(args: list[str] | None = None, prog_name: str | None = None) -> None:
    """The console script; `args` and `prog_name` (default: from sys.argv) let the tests run it in-process."""
    from tauproxy.errors import CassetteWriteError, ResultsWriteError, TauproxyError
    from tauproxy_cli import exit_codes

    try:
        app(args=args, prog_name=prog_name)
    except TauproxyError as exc:
        from tauproxy_cli.output import error

        error(str(exc))
        stopped = isinstance(exc, CassetteWriteError | ResultsWriteError)
        sys.exit(exit_codes.INFRASTRUCTURE_STOP if stopped else exit_codes.MISCONFIGURED)
    except OSError as exc:
        # A name over the system's limit can only be one given on the command line (every name tauproxy
        # makes is short), wherever it is first used as a path: a bad input, not a bug.
        if exc.errno != errno.ENAMETOOLONG:
            raise
        from tauproxy_cli.output import error

        name = str(exc.filename or "a path")
        shown = name if len(name) <= 60 else f"{name[:40]}... ({len(name):,} characters)"
        error(f"{shown}: file name too long for this system; give a shorter path or name")
        sys.exit(exit_codes.MISCONFIGURED)
