"""`tauproxy report RUN [RUN ...]`: pass^k with intervals, rewards, terminations, cost and the grid.

Several runs (tauproxy run directories, results.json files or τ²-bench simulations files) are
merged trial by trial before reporting.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer


class ReportFormat(StrEnum):
    TABLE = "table"
    TAU2 = "tau2"


def report_command(
    runs: Annotated[list[Path], typer.Argument(
        help="Run directory, results.json or τ²-bench simulations file (several are merged)."
    )],
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    output_format: Annotated[ReportFormat, typer.Option(
        "--format", help="table: the report; tau2: the results in τ²-bench's simulations-file shape."
    )] = ReportFormat.TABLE,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Also write a self-contained HTML report to this file."
    )] = None,
) -> None:
    """Report pass^1..pass^k with 95% intervals, rewards, terminations, calls and cost."""
    from tauproxy_cli.output import err_console, print_json, warn
    from tauproxy_cli.report_view import print_summary

    from tauproxy.errors import ConfigError
    from tauproxy.reports.load import load_runs
    from tauproxy.reports.summary import summarize

    if json_output and output_format is ReportFormat.TAU2:
        raise ConfigError("--json and --format tau2 both choose what is printed; give one of them")
    results = load_runs(runs)
    summary = summarize(results)
    if html is not None:
        from tauproxy.reports.html import render_html

        try:
            html.write_text(render_html(summary, results), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{html}: cannot write the HTML report: {exc}") from None
        err_console.print(f"html report: {html}")
    if output_format is ReportFormat.TAU2:
        from tauproxy.reports.tau2 import to_tau2

        print_json(to_tau2(results))
    elif json_output:
        print_json(summary)
    else:
        for note in summary["notes"]:
            warn(note)
        print_summary(summary, saved_to=None)
