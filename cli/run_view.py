"""Runs a RunConfig behind a rich progress bar, then prints the summary."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tauproxy.data_model.result import SimulationRun
from tauproxy.reports.summary import summarize
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute_prepared, prepare
from tauproxy_cli.output import err_console, print_json, warn
from tauproxy_cli.report_view import print_summary


def run_with_progress(config: RunConfig, json_output: bool) -> None:
    prepared = prepare(config)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
        console=err_console,
        transient=json_output,
    )
    with progress:
        total = len(prepared.specs)
        bar = progress.add_task(config.domain, total=total, completed=total - len(prepared.pending), last="")

        def advance(run: SimulationRun, done: int, total: int) -> None:
            reward = run.reward_info.reward if run.reward_info else 0.0
            progress.update(bar, completed=done, total=total, last=f"{run.id} reward={reward:g}")

        outcome = execute_prepared(prepared, progress=advance)
    for message in outcome.warnings:
        warn(message)
    if outcome.stopped_reason:
        warn(outcome.stopped_reason)
    summary = summarize(outcome.results)
    if json_output:
        print_json(summary)
    else:
        print_summary(summary, saved_to=str(config.save_to) if config.save_to else None)
