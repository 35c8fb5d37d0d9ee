"""Runs a RunConfig behind a progress bar, then prints the summary and what stopped the run.

The bar (stderr, and only on a terminal) shows done/total, an ETA, the live spend of this
invocation (against --max-cost when set), the running pass^1 and live against replayed and shared calls.
`ProgressState` holds those numbers and `progress_line` formats them, so the bar is tested as a
unit: rich only draws the line.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Column

from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.reports.costs import LiveTallyAdder
from tauproxy.reports.metrics import EXCLUDED_TERMINATIONS, is_success
from tauproxy.reports.summary import summary_of
from tauproxy.reports.tally import RunTally
from tauproxy.runner.config import RunConfig
from tauproxy.runner.executor import StopKind
from tauproxy.runner.prepared import PreparedRun
from tauproxy.runner.run import StreamedOutcome, execute_streamed, goes_live, prepare
from tauproxy_cli import exit_codes
from tauproxy_cli.output import err_console, error, note, print_json, warn
from tauproxy_cli.report_view import FirstErrors, RunFacts, money, print_summary, tally_money


@dataclass
class ProgressState:
    """What the progress bar knows: trials finished (resumed ones included) and what this invocation's
    trials cost and called. pass^1 counts every finished trial, as the report will."""

    total: int
    started: float  # time.monotonic() when this invocation's first trial was started
    budget: float | None = None
    done: int = 0
    resumed: int = 0
    live_usd: float = 0.0
    unpriced_live_calls: int = 0
    live_calls: int = 0
    replayed_calls: int = 0
    shared_calls: int = 0  # answered by this run's own live call to the identical sample
    excluded: int = 0
    # task id -> [passed, scored]: pass^1 is the mean over tasks of each task's pass rate.
    tasks: dict[str, list[int]] = field(default_factory=dict)

    def resume(self, run: SimulationRun) -> None:
        """A trial finished by an earlier invocation: it counts toward pass^1, not toward spend or calls."""
        self._score(run)
        self.done += 1
        self.resumed += 1

    def finish(self, run: SimulationRun) -> None:
        """A trial this invocation ran."""
        self._score(run)
        self.done += 1
        for call in run.calls:
            if call.source == "replay":
                self.replayed_calls += 1
                continue
            if call.source == "shared":
                self.shared_calls += 1
                continue
            self.live_calls += 1
            if call.cost_usd is None:
                self.unpriced_live_calls += 1
            else:
                self.live_usd += call.cost_usd

    def _score(self, run: SimulationRun) -> None:
        if run.termination_reason in EXCLUDED_TERMINATIONS:
            self.excluded += 1
            return
        counts = self.tasks.setdefault(run.task_id, [0, 0])
        counts[0] += int(is_success(run))
        counts[1] += 1

    @property
    def pass_hat_1(self) -> float | None:
        rates = [passed / scored for passed, scored in self.tasks.values() if scored]
        return sum(rates) / len(rates) if rates else None

    def eta_s(self, now: float) -> float | None:
        """Seconds left at this invocation's pace so far; None before its first trial finished."""
        ran = self.done - self.resumed
        if ran <= 0:
            return None
        return (now - self.started) / ran * (self.total - self.done)


def progress_line(state: ProgressState, now: float) -> str:
    """The text beside the bar, e.g.
    `9/20  ETA 0:12  spent $0.4537 of $0.5000  pass^1 0.889  calls 60 live / 4 replayed / 0 shared`."""
    parts = [f"{state.done}/{state.total}"]
    if state.done == state.resumed:
        # Nothing finished yet: the first trial may be loading a provider library (litellm, ~5 s).
        parts.append("starting: waiting for the first trial")
    else:
        eta = state.eta_s(now)
        parts.append(f"ETA {_clock(eta)}" if eta is not None else "ETA -")
    spent = _spent(state)
    parts.append(f"spent {spent} of {money(state.budget)}" if state.budget is not None else f"spent {spent}")
    pass_1 = state.pass_hat_1
    parts.append(f"pass^1 {pass_1:.3f}" if pass_1 is not None else "pass^1 -")
    parts.append(f"calls {state.live_calls} live / {state.replayed_calls} replayed / {state.shared_calls} shared")
    if state.excluded:
        parts.append(f"{state.excluded} excluded (infrastructure)")
    return "  ".join(parts)


def _spent(state: ProgressState) -> str:
    if state.unpriced_live_calls:  # unknown is unknown, never $0: the priced part is shown apart
        return f"unknown (${state.live_usd:.4f} + {state.unpriced_live_calls} unpriced)"
    return money(state.live_usd)


def _clock(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def run_with_progress(config: RunConfig, json_output: bool, fail_on_budget: bool = False, full: bool = False) -> int:
    """Run with a progress bar, print the summary (the task grid and per-task table only with `full`)
    and what stopped the run; the exit code to use."""
    announce: Callable[[], None] | None = None
    if goes_live(config) and any(not model.startswith(IN_PROCESS) for model in _models(config)):
        # The preflight and the first live call import litellm: without this line the bar sits at 0/N.
        announce = functools.partial(note, "checking the models (litellm loads once, about 5 s) ...")
    prepared = prepare(config, before_preflight=announce)
    # What is loaded by now (modules, the domain, a τ² domain's whole database) lives as long as this
    # process: frozen, the garbage collector stops re-scanning it during the trials (airline 50 x 4
    # strict replay: 15% less time). Only here, in the CLI's short process, never in the library.
    gc.freeze()
    done = len(prepared.specs) - len(prepared.pending)
    if done:
        note(f"resuming: {done} of {len(prepared.specs)} trials done")
    trials = RunTrials(task_order=[task.id for task in prepared.tasks])
    with fewer_collections():
        outcome = _execute(prepared, json_output, trials)
    for message in outcome.warnings:
        warn(message)
    summary = summary_of(outcome.header, trials.tally)
    facts = RunFacts(
        planned_tasks=len(prepared.tasks),
        planned_trials=len(prepared.specs),
        new_trials=outcome.new_trials,
        new_live=trials.new_live.tally(),
        errors=trials.errors.errors,
    )
    if json_output:
        print_json(summary)
    else:
        print_summary(summary, saved_to=str(config.save_to) if config.save_to else None, full=full, run=facts)
    return _verdict(outcome, trials, facts, fail_on_budget)


class RunTrials:
    """What the summary and the verdict need of a run's trials, added as the run hands them on (in
    results.json's order), so that the run holds counts, not trials: its memory stays flat however
    many trials it runs. `summary_of` on the tally is `summarize` of the results file."""

    def __init__(self, task_order: list[str]) -> None:
        self.tally = RunTally(task_order)
        self.errors = FirstErrors()
        self.new_live = LiveTallyAdder()  # this invocation's trials, in the order they finished
        self.excluded = 0
        self.first_excluded_error: str | None = None

    def add(self, run: SimulationRun) -> None:
        self.tally.add(run)
        self.errors.add(run)
        if run.termination_reason == TerminationReason.INFRASTRUCTURE_ERROR:
            if not self.excluded:
                self.first_excluded_error = run.error
            self.excluded += 1


# Allocations between two young-generation collections while trials run (Python's default: 700).
# A trial allocates tens of thousands of short-lived containers (messages, tool results, τ²'s
# evaluator's closures), so the default collects every few calls and promotes what is still in use
# to the middle generation, whose scans follow. With a wider window most of it is freed by reference
# counting before any scan (airline 50 x 4 strict replay: 84 collections, 14 ms -> 1, 2 ms). A cycle goes at
# the next collection, and at most this many objects wait for it: memory stays flat in the trials.
TRIAL_GC_THRESHOLD = 10_000


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """The young generation collected every `TRIAL_GC_THRESHOLD` allocations inside; the thresholds
    before it afterwards. Only the CLI's run does this; the library keeps Python's settings."""
    before = gc.get_threshold()
    gc.set_threshold(TRIAL_GC_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _execute(prepared: PreparedRun, json_output: bool, trials: RunTrials) -> StreamedOutcome:
    state = ProgressState(total=len(prepared.specs), started=time.monotonic(), budget=prepared.config.max_cost)
    for spec in prepared.specs:
        if spec.run_id in prepared.finished:
            state.resume(prepared.finished[spec.run_id])
    label = prepared.config.domain
    progress, bar_column = progress_bar(err_console, label, transient=json_output)
    with progress:
        line = progress_line(state, time.monotonic())
        fit_bar(bar_column, err_console.width, label, line)
        bar = progress.add_task(label, total=state.total, completed=state.done, line=line)

        shown_at = time.monotonic()

        def show(now: float) -> None:
            nonlocal shown_at
            shown_at = now
            line = progress_line(state, now)
            fit_bar(bar_column, err_console.width, label, line)
            progress.update(bar, completed=state.done, total=state.total, line=line)

        def advance(run: SimulationRun, done: int, total: int) -> None:
            trials.new_live.add(run)
            state.finish(run)
            state.done, state.total = done, total  # the runner's count is the truth
            now = time.monotonic()
            # The bar is redrawn LINE_EVERY_S at most: a line rebuilt (and the terminal's width asked)
            # for every trial of a replay finishing hundreds a second is work nobody sees.
            if done >= total or now - shown_at >= LINE_EVERY_S:
                show(now)

        try:
            return execute_streamed(prepared, trials.add, progress=advance)
        finally:
            show(time.monotonic())  # a run that stops early leaves its last count shown, not an older one


BAR_WIDTH = 40
# rich redraws a live bar 10 times a second: a line updated more often than that is never seen.
LINE_EVERY_S = 0.1


def progress_bar(console: Console, label: str, transient: bool) -> tuple[Progress, BarColumn]:
    """The bar: the domain, the bar itself, and the line of numbers. The domain is never cut, and a line
    too long for the terminal folds instead of ending in "…": the numbers are what a user reads."""
    bar_column = BarColumn(bar_width=BAR_WIDTH)
    progress = Progress(
        TextColumn("[bold]{task.description}", table_column=Column(no_wrap=True, min_width=len(label))),
        bar_column,
        TextColumn("{task.fields[line]}", table_column=Column(no_wrap=False)),
        console=console,
        transient=transient,
        # Off the terminal (CI logs, pipes, tests) a bar is noise: stdout and stderr stay the report.
        disable=not console.is_terminal,
    )
    return progress, bar_column


def fit_bar(bar_column: BarColumn, width: int, label: str, line: str) -> None:
    """Give the bar what the domain and the line leave of the terminal (it shrinks first, they never do)."""
    bar_column.bar_width = max(0, min(BAR_WIDTH, width - len(label) - len(line) - 3))


IN_PROCESS = ("scripted/", "local/")  # models that need no provider, hence no litellm


def _models(config: RunConfig) -> list[str]:
    return [config.agent.model, *([] if config.solo else [config.user.model]), config.judge.model]


def _verdict(outcome: StreamedOutcome, trials: RunTrials, facts: RunFacts, fail_on_budget: bool) -> int:
    """Say what stopped the run and which trials could not be scored; return the exit code."""
    planned = facts.planned_trials
    excluded = trials.excluded
    if excluded:
        warn(
            f"{excluded} trial(s) excluded as infrastructure errors (re-run on resume); "
            f"first: {trials.first_excluded_error or 'no message'}"
        )
    stop = outcome.stop
    if stop is not None and stop.kind is StopKind.INTERRUPTED:
        saved = trials.tally.trials - excluded
        warn(f"interrupted: {saved} of {planned} trials saved; rerun the same command to resume")
        return exit_codes.INTERRUPTED
    if stop is not None and stop.kind is StopKind.INFRASTRUCTURE:
        error(stop.reason)
        return exit_codes.INFRASTRUCTURE_STOP
    if trials.tally.trials == excluded:
        error("no trial could be scored" + (f": {trials.first_excluded_error}" if excluded else ""))
        return exit_codes.NOTHING_SCORED
    if stop is not None and stop.kind is StopKind.BUDGET:
        warn(stop.reason)
        note(budget_spend_line(trials, facts))
        return exit_codes.BUDGET_STOP if fail_on_budget else exit_codes.OK
    return exit_codes.OK


def budget_spend_line(trials: RunTrials, facts: RunFacts) -> str:
    """After a budget stop: what this invocation spent (what --max-cost limits) and, apart, the whole
    run's live spend, resumed trials included."""
    whole = trials.tally.costs().live
    return (
        f"this invocation: {tally_money(facts.new_live)} live over {facts.new_trials} trials; "
        f"whole run: {tally_money(whole)} live over {trials.tally.trials} of "
        f"{facts.planned_trials} trials"
    )
