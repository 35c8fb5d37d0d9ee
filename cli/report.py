"""`tauproxy report RUN [RUN ...]`: pass^k with intervals, rewards, terminations, cost and the grid.

Several runs (tauproxy run directories, results.json files or τ²-bench simulations files) of the
same agent are merged trial by trial before reporting. Runs of different agents (agent model, args
or prompt hash) are never merged into one score: they are reported side by side with paired
comparisons, as `report A --against B` does (tauproxy/reports/compare.py). A run made by another
harness through `tauproxy serve` shows live against replayed calls, cost and roles when its serve
run log joins on (`--run-log`, or NAME.runlog.jsonl beside NAME.json).

`--format csv` prints one row per trial (tauproxy/reports/trial_rows.py): task, trial, seed, reward
and each reward component, termination, live and replayed calls, cost and tokens by role; what the
input does not say (a τ² file's call counts, an unknown price) is an empty cell, never 0. Several
runs are merged into one table, as for `--format tau2`.
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
    from tauproxy.store.cassette import Cassette


class ReportFormat(StrEnum):
    TABLE = "table"
    TAU2 = "tau2"
    CSV = "csv"


def report_command(
    runs: Annotated[list[Path], typer.Argument(help=f"A {RUN_ARGUMENT} (several are merged).")],
    json_output: Annotated[bool, flag("--json", help="Print the report as JSON.")] = False,
    output_format: Annotated[
        ReportFormat,
        typer.Option(
            "--format",
            help="table: the report; tau2: the results in τ²-bench's simulations-file shape; "
            "csv: one row per trial (reward and its components, termination, calls, cost and tokens by role).",
        ),
    ] = ReportFormat.TABLE,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML report to this file.")
    ] = None,
    run_log: Annotated[Path | None, typer.Option("--run-log", help=RUN_LOG_HELP)] = None,
    against: Annotated[
        list[Path] | None,
        typer.Option(
            "--against", help=f"A baseline {RUN_ARGUMENT} to compare with, side by side (repeatable: merged)."
        ),
    ] = None,
    full: Annotated[bool, flag("--full", help="Also print the per-task cost table and the task x trial grid.")] = False,
    cassette: Annotated[
        Path | None,
        typer.Option(
            "--cassette",
            help="Cassette holding the run's calls, for the raw requests and responses in --html "
            "(default: the one the results name; a run made through serve names none).",
        ),
    ] = None,
) -> None:
    """Report pass^1..pass^k with 95% intervals, rewards, terminations, calls and cost."""
    from tauproxy.errors import ConfigError
    from tauproxy.reports.load import load_runs
    from tauproxy.reports.summary import summarize
    from tauproxy_cli.output import err_console, print_json, warn
    from tauproxy_cli.report_view import print_summary

    exports = output_format is not ReportFormat.TABLE
    if cassette is not None and html is None:
        raise ConfigError("--cassette gives the HTML report its raw calls; give --html FILE too")
    if json_output and exports:
        raise ConfigError(f"--json and --format {output_format.value} both choose what is printed; give one of them")
    if against:
        if exports:
            raise ConfigError(f"--against compares runs; --format {output_format.value} exports one")
        candidate = load_runs(runs, run_log)
        baseline = load_runs(against)
        _print_side_by_side([(_label(against), baseline), (_label(runs), candidate)], json_output, html, cassette)
        return
    from tauproxy.reports.load import split_solo

    # A run log joins onto one run (load_runs says so for several), so it never pairs solo and dual.
    # A CSV is rows, not a report: its runs are merged like any others.
    pairs_solo = run_log is None and output_format is not ReportFormat.CSV
    dual, solo = split_solo(runs) if pairs_solo else (None, None)
    if dual is not None and solo is not None:
        _print_coordination(dual, solo, json_output)
        return
    if run_log is None and len(runs) > 1 and output_format is ReportFormat.TABLE:
        from tauproxy.reports.compare import group_by_agent
        from tauproxy.results.load import load_any_results

        agents = group_by_agent([(str(path), load_any_results(path)) for path in runs])
        if len(agents) > 1:
            _print_side_by_side(agents, json_output, html, cassette)
            return
    results = load_runs(runs, run_log)
    summary = summarize(results)
    if html is not None:
        from tauproxy.reports.html import render_html
        from tauproxy.reports.recorded_calls import read_recorded_calls

        recorded = read_recorded_calls(results, cassette)
        try:
            html.write_text(render_html(summary, results, recorded=recorded), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{html}: cannot write the HTML report: {exc}") from None
        err_console.print(f"html report: {html}")
    if output_format is ReportFormat.TAU2:
        from tauproxy.reports.tau2 import to_tau2

        print_json(to_tau2(results))
    elif output_format is ReportFormat.CSV:
        _print_csv(results, summary.notes)
    elif json_output:
        print_json(summary)
    else:
        for note in summary.notes:
            warn(note)
        print_summary(summary, saved_to=None, full=full)


def _print_csv(results: Results, notes: list[str]) -> None:
    """One row per trial on stdout; what the reader noted goes to stderr, so stdout stays a table."""
    import sys

    from tauproxy.reports.trial_rows import trial_rows, write_csv
    from tauproxy_cli.output import warn

    for note in notes:
        warn(note)
    write_csv(trial_rows(results), sys.stdout)


def _label(paths: list[Path]) -> str:
    return " + ".join(str(path) for path in paths)


def _print_side_by_side(
    runs: list[tuple[str, Results]], json_output: bool, html: Path | None, cassette: Path | None = None
) -> None:
    """Each run's report in short and the paired comparison of each later run with the first."""
    from tauproxy.errors import ConfigError
    from tauproxy.reports.compare import render_side_by_side, side_by_side
    from tauproxy_cli.output import err_console, out_console, print_json, warn

    report = side_by_side(runs, cassettes=_named_cassettes(runs))
    if html is not None:
        from tauproxy.reports.html import render_html
        from tauproxy.reports.recorded_calls import read_recorded_calls

        # The page is the last run's report (the candidate) with the comparison section on top.
        last = report.runs[-1]
        recorded = read_recorded_calls(runs[-1][1], cassette)
        try:
            html.write_text(render_html(last.summary, runs[-1][1], report, recorded), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{html}: cannot write the HTML report: {exc}") from None
        err_console.print(f"html report: {html}")
    if json_output:
        print_json(report)
        return
    for run in report.runs:
        for note in run.summary.notes:
            warn(f"{run.label}: {note}")
    out_console.print(render_side_by_side(report), markup=False, soft_wrap=True)


def _named_cassettes(runs: list[tuple[str, Results]]) -> list[Cassette]:
    """The cassettes the runs recorded into (RunInfo.cassette), for the flipped trials' exact request
    diffs; one that is no longer there is said and skipped, since the comparison stands without it."""
    from tauproxy.errors import CassetteError
    from tauproxy.reports.recorded_calls import find_cassette
    from tauproxy.results.provenance import sources_of
    from tauproxy.store.cassette import Cassette
    from tauproxy_cli.output import warn

    cassettes: list[Cassette] = []
    named = {results.info.cassette: results for _, results in runs if results.info.cassette}
    for name, results in named.items():
        # Found the way the page's raw calls are: from here, then beside the run's own files.
        directory = find_cassette(name, sources_of(results))
        try:
            cassettes.append(Cassette.open(directory or Path(name), create=False))
        except CassetteError as exc:
            warn(f"{exc}: the flipped trials show no request diffs from it")
    return cassettes


def _print_coordination(dual: Results, solo: Results, json_output: bool) -> None:
    """Dual-control and solo runs of the same tasks, side by side: the gap is coordination error."""
    from tauproxy.reports.coordination import coordination_report, render_coordination
    from tauproxy.reports.summary import summarize
    from tauproxy_cli.output import out_console, print_json
    from tauproxy_cli.report_view import print_summary

    report = coordination_report(dual, solo)
    if json_output:
        print_json(
            {
                "dual": summarize(dual).model_dump(mode="json"),
                "solo": summarize(solo).model_dump(mode="json"),
                "coordination": report,
            }
        )
        return
    out_console.rule("[bold]dual control")
    print_summary(summarize(dual), saved_to=None)
    out_console.rule("[bold]solo (no user simulator)")
    print_summary(summarize(solo), saved_to=None)
    out_console.rule("[bold]reasoning vs coordination")
    out_console.print(render_coordination(report), markup=False)
