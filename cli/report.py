"""`tauproxy report RUN [RUN ...]`: pass^k with intervals, rewards, terminations, cost and the grid.

Several runs (tauproxy run directories, results.json files or τ²-bench simulations files) are
merged trial by trial before reporting. A run made by another harness through `tauproxy serve`
shows live against replayed calls, cost and roles when its serve run log joins on (`--run-log`, or
NAME.runlog.jsonl beside NAME.json).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tauproxy_cli.flag import flag
from tauproxy_cli.run_input import RUN_ARGUMENT, RUN_LOG_HELP

if TYPE_CHECKING:
    from tauproxy.data_model.result import Results


class ReportFormat(StrEnum):
    TABLE = "table"
    TAU2 = "tau2"


def report_command(
    runs: Annotated[list[Path], typer.Argument(help=f"A {RUN_ARGUMENT} (several are merged).")],
    json_output: Annotated[bool, flag("--json", help="Print the report as JSON.")] = False,
    output_format: Annotated[ReportFormat, typer.Option(
        "--format", help="table: the report; tau2: the results in τ²-bench's simulations-file shape."
    )] = ReportFormat.TABLE,
    html: Annotated[Path | None, typer.Option(
        "--html", help="Also write a self-contained HTML report to this file."
    )] = None,
    run_log: Annotated[Path | None, typer.Option("--run-log", help=RUN_LOG_HELP)] = None,
) -> None:
    """Report pass^1..pass^k with 95% intervals, rewards, terminations, calls and cost."""
    from tauproxy.errors import ConfigError
    from tauproxy.reports.load import load_runs
    from tauproxy.reports.summary import summarize
    from tauproxy_cli.output import err_console, print_json, warn
    from tauproxy_cli.report_view import print_summary

    if json_output and output_format is ReportFormat.TAU2:
        raise ConfigError("--json and --format tau2 both choose what is printed; give one of them")
    from tauproxy.reports.load import split_solo

    # A run log joins onto one run (load_runs says so for several), so it never pairs solo and dual.
    dual, solo = split_solo(runs) if run_log is None else (None, None)
    if dual is not None and solo is not None:
        _print_coordination(dual, solo, json_output)
        return
    results = load_runs(runs, run_log)
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
        for note in summary.notes:
            warn(note)
        print_summary(summary, saved_to=None)


def _print_coordination(dual: Results, solo: Results, json_output: bool) -> None:
    """Dual-control and solo runs of the same tasks, side by side: the gap is coordination error."""
    from tauproxy.reports.coordination import coordination_report, render_coordination
    from tauproxy.reports.summary import summarize
    from tauproxy_cli.output import out_console, print_json
    from tauproxy_cli.report_view import print_summary

    report = coordination_report(dual, solo)
    if json_output:
        print_json({"dual": summarize(dual).model_dump(mode="json"), "solo": summarize(solo).model_dump(mode="json"),
                    "coordination": report})
        return
    out_console.rule("[bold]dual control")
    print_summary(summarize(dual), saved_to=None)
    out_console.rule("[bold]solo (no user simulator)")
    print_summary(summarize(solo), saved_to=None)
    out_console.rule("[bold]reasoning vs coordination")
    out_console.print(render_coordination(report), markup=False)
