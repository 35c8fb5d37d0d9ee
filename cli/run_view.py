"""Runs a RunConfig behind a rich progress bar, then prints the summary."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.reports.summary import summarize
from tauproxy.runner.config import RunConfig
from tauproxy.runner.executor import StopKind
from tauproxy.runner.run import RunOutcome, execute_prepared, goes_live, prepare
from tauproxy_cli import exit_codes
from tauproxy_cli.output import err_console, error, note, print_json, warn
from tauproxy_cli.report_view import print_summary


def run_with_progress(config: RunConfig, json_output: bool, fail_on_budget: bool = False) -> int:
    """Run with a progress bar, print the summary and what stopped the run; the exit code to use."""
    if goes_live(config) and any(not model.startswith(IN_PROCESS) for model in _models(config)):
        note("checking the models (litellm loads once, about 5 s) ...")
    prepared = prepare(config)
    done = len(prepared.specs) - len(prepared.pending)
    if done:
        note(f"resuming: {done} of {len(prepared.specs)} trials done")
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
    summary = summarize(outcome.results)
    if json_output:
        print_json(summary)
    else:
        print_summary(summary, saved_to=str(config.save_to) if config.save_to else None)
    return _verdict(outcome, len(prepared.specs), fail_on_budget)


IN_PROCESS = ("scripted/", "local/")  # models that need no provider, hence no litellm


def _models(config: RunConfig) -> list[str]:
    return [config.agent.model, *([] if config.solo else [config.user.model]), config.judge.model]


def _verdict(outcome: RunOutcome, planned: int, fail_on_budget: bool) -> int:
    """Say what stopped the run and which trials could not be scored; return the exit code."""
    simulations = outcome.results.simulations
    excluded = [s for s in simulations if s.termination_reason == TerminationReason.INFRASTRUCTURE_ERROR]
    if excluded:
        warn(f"{len(excluded)} trial(s) excluded as infrastructure errors (re-run on resume); "
             f"first: {excluded[0].error or 'no message'}")
    stop = outcome.stop
    if stop is not None and stop.kind is StopKind.INTERRUPTED:
        saved = len(simulations) - len(excluded)
        warn(f"interrupted: {saved} of {planned} trials saved; rerun the same command to resume")
        return exit_codes.INTERRUPTED
    if stop is not None and stop.kind is StopKind.INFRASTRUCTURE:
        error(stop.reason)
        return exit_codes.INFRASTRUCTURE_STOP
    if len(simulations) == len(excluded):
        error("no trial could be scored" + (f": {excluded[0].error}" if excluded else ""))
        return exit_codes.NOTHING_SCORED
    if stop is not None and stop.kind is StopKind.BUDGET:
        warn(stop.reason)
        return exit_codes.BUDGET_STOP if fail_on_budget else exit_codes.OK
    return exit_codes.OK
