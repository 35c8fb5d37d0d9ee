"""`tauproxy run`: k trials of a domain's tasks, with a progress bar and a short summary at the end
(the task grid and per-task table with --full)."""

from __future__ import annotations

from typing import Annotated

from tauproxy_cli.flag import flag
from tauproxy_cli.run_flags import RunFlags
from tauproxy_cli.run_options import with_run_options


@with_run_options
def run_command(
    flags: RunFlags,
    json_output: Annotated[bool, flag("--json", help="Print the report as JSON.")] = False,
    fail_on_budget: Annotated[
        bool, flag("--fail-on-budget", help="Exit 5 (not 0) when --max-cost stopped the run.")
    ] = False,
) -> None:
    """Run every selected task num-trials times and report pass^k. Exit codes: 0 ok, 2 misconfigured, 3
    nothing scored, 4 infrastructure stop, 5 budget stop with --fail-on-budget, 130 interrupted
    (docs/cli.md#exit-codes)."""
    import typer

    from tauproxy.runner.collector import paused_collector

    # What loads here (the runner's and a domain's modules) lives as long as the run, as what
    # `prepare` loads next (runner/collector.py).
    with paused_collector():
        from tauproxy_cli.run_setup import build_run_config, run_until_decided
        from tauproxy_cli.run_view import run_with_progress

        config = build_run_config(flags)
    if flags.until_decided:
        code = run_until_decided(config, flags, json_output=json_output)
    else:
        code = run_with_progress(config, json_output=json_output, fail_on_budget=fail_on_budget, full=flags.full)
    if code:
        raise typer.Exit(code)
