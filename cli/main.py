"""The `tauproxy` command: wiring only. Each command lives in its own module, imported when it is used
(lazy_commands.py), so `tauproxy --help` and `tauproxy CMD --help` load only typer and that command."""

from __future__ import annotations

import errno
import sys
from typing import Annotated

import typer

from tauproxy_cli.flag import flag
from tauproxy_cli.help_import import import_help_renderer
from tauproxy_cli.help_style import apply as apply_help_style
from tauproxy_cli.lazy_coercion import apply as apply_lazy_coercion
from tauproxy_cli.lazy_commands import LazyCommand, lazy_group

# Every command, in the order `tauproxy --help` lists them: where it lives and the line it is listed by
# (its help's first paragraph; tests/cli/test_lazy_commands.py keeps the two equal).
COMMANDS: dict[str, LazyCommand] = {
    "run": LazyCommand(
        "tauproxy_cli.run:run_command",
        "Run every selected task num-trials times and report pass^k. Exit codes: 0 ok, 2 misconfigured, 3 "
        "nothing scored, 4 infrastructure stop, 5 budget stop with --fail-on-budget, 130 interrupted "
        "(docs/cli.md#exit-codes).",
    ),
    "report": LazyCommand(
        "tauproxy_cli.report:report_command",
        "Report pass^1..pass^k with 95% intervals, rewards, terminations, calls and cost.",
    ),
    "view": LazyCommand(
        "tauproxy_cli.view:view_command",
        "Show one trajectory: messages, tool calls and results, reward checks, and every model call.",
    ),
    "estimate": LazyCommand(
        "tauproxy_cli.estimate:estimate_command",
        "Predict what `run` with the same flags would cost; --cassette subtracts what it would replay.",
    ),
    "demo": LazyCommand(
        "tauproxy_cli.demo:demo_command",
        "Replay a baseline, change the agent, see only the changed calls go live, get an HTML report.",
    ),
    "diff": LazyCommand(
        "tauproxy_cli.diff:diff_command",
        "Per-task pass counts in A vs B, and for each flipped trial its first divergence and cause.",
    ),
    "check": LazyCommand(
        "tauproxy_cli.check:check_command",
        "Compare a run with a baseline on their common tasks; the exit code is the verdict.",
    ),
    "bisect": LazyCommand(
        "tauproxy_cli.bisection:bisect_command",
        "Binary-search agent configs for the first that scores more than --max-drop below the first.",
    ),
    "serve": LazyCommand(
        "tauproxy_cli.serve:serve_command",
        "Serve OpenAI chat completions, the Responses API and Anthropic's Messages API from a cassette; "
        "misses go live and are recorded (mode permitting).",
    ),
    "domains": LazyCommand("tauproxy_cli.domains:app", "List and inspect domain packs."),
    "cassette": LazyCommand(
        "tauproxy_cli.cassette:app",
        "Inspect and maintain cassettes: directories of recorded model calls (calls.jsonl).",
    ),
    "tasks": LazyCommand("tauproxy_cli.tasks:app", "Generate task sets."),
    "submit": LazyCommand("tauproxy_cli.submit:app", "Prepare a τ²-bench leaderboard submission."),
    "cache": LazyCommand(
        "tauproxy_cli.cache:app",
        "The cache of derived artefacts (generated and validated domain databases, τ²-bench's catalogs "
        "and prompts): where it is, how big, and clearing it. TAUPROXY_CACHE_DIR moves it; "
        "TAUPROXY_CACHE_DIR=off turns it off.",
    ),
}

import_help_renderer()
apply_help_style()
apply_lazy_coercion()
app = typer.Typer(
    name="tauproxy",
    cls=lazy_group(COMMANDS),
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
