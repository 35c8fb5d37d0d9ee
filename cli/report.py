"""`tauproxy report RUN_DIR`: pass^k, rewards, terminations and cost of a finished run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def report_command(
    runs: Annotated[list[Path], typer.Argument(help="Run directory or results.json (several are merged).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Report pass^1..pass^k, average reward, termination reasons, calls and cost."""
    from tauproxy.reports.summary import summarize
    from tauproxy.runner.results_dir import load_results
    from tauproxy_cli.output import print_json
    from tauproxy_cli.report_view import print_summary

    results = load_results(runs[0])
    summary = summarize(results)
    if json_output:
        print_json(summary)
    else:
        print_summary(summary, saved_to=None)
