"""Renders a report summary (tauproxy.reports.summary.ReportSummary) as rich tables.

Two lengths: the full report (every table, the per-task cost table and the task x trial grid) and
the short one `tauproxy run` prints by default: models, pass^k, terminations, the first errors, one
line of cost and where to read more.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from tauproxy.data_model.result import ModelInfo, SimulationRun
from tauproxy.reports.costs import CostSplit, Tally
from tauproxy.reports.grid import GridCell
from tauproxy.reports.summary import ReportSummary
from tauproxy_cli.output import WholeTable, out_console

# Grid cell marks: the outcome, then where the trial's model calls came from.
SOURCE_MARKS = {"live": "", "replayed": "r", "mixed": "m", "unknown": "?"}
GRID_LEGEND = "✓ pass  ✗ fail  r replayed  m mixed live/replayed  ? source unknown  ! excluded (infrastructure error)"


def money(value: float | None, unknown_calls: int = 0) -> str:
    if value is None:
        return "unknown"
    text = f"${value:.4f}"
    return f"{text} + {unknown_calls} unknown" if unknown_calls else text


@dataclass(frozen=True)
class TrialError:
    """A trial that ended with an error message, for the summary's "first errors"."""

    run_id: str
    termination: str
    message: str


def first_errors(simulations: Sequence[SimulationRun], limit: int = 3) -> list[TrialError]:
    """The first trials with an error, one per distinct first line: three copies of one cause say less
    than three causes."""
    found = FirstErrors(limit)
    for run in simulations:
        found.add(run)
    return found.errors


class FirstErrors:
    """`first_errors`, one trial at a time, for a run that does not hold its trials."""

    def __init__(self, limit: int = 3) -> None:
        self.limit = limit
        self.errors: list[TrialError] = []
        self._seen: set[str] = set()

    def add(self, run: SimulationRun) -> None:
        message = (run.error or "").strip()
        first = message.splitlines()[0] if message else ""
        if not first or first in self._seen or len(self.errors) == self.limit:
            return
        self._seen.add(first)
        self.errors.append(TrialError(run.id, run.termination_reason.value, first))


@dataclass(frozen=True)
class RunFacts:
    """What only the invocation that just ran knows: the plan, its own trials and spend, the errors."""

    planned_tasks: int
    planned_trials: int
    new_trials: int
    new_live: Tally  # this invocation's live calls
    errors: list[TrialError] = field(default_factory=list)


def print_summary(summary: ReportSummary, saved_to: str | None, full: bool = True, run: RunFacts | None = None) -> None:
    """The report; `full=False` is the short form (`tauproxy run` without --full)."""
    console = out_console
    if not full:
        _print_short(console, summary, saved_to, run)
        return
    _print_header(console, summary)
    _print_scores(console, summary, run)
    _print_terminations(console, summary)
    if run is not None:
        _print_errors(console, summary, run)
    _print_breakdown(console, summary)
    _print_costs(console, summary)
    _print_grid(console, summary)
    if saved_to:
        console.print(f"results: {saved_to}/results.json")


def _print_short(console: Console, summary: ReportSummary, saved_to: str | None, run: RunFacts | None) -> None:
    models = "  ".join(f"{role} {model_line(model)}" for role, model in summary.models.by_role())
    console.print(Text.assemble((summary.domain, "bold"), f"  {summary.made_by}  ", (models, "cyan")), soft_wrap=True)
    _print_scores(console, summary, run)
    _print_terminations(console, summary)
    if run is not None:
        _print_errors(console, summary, run)
    console.print(cost_line(summary), soft_wrap=True, markup=False)
    if saved_to:
        console.print(f"results: {saved_to}/results.json", soft_wrap=True, markup=False)
        console.print(
            Text(
                f"more: tauproxy report {saved_to} (--html FILE for a page); "
                "--full for the task grid and per-task table",
                style="dim",
            ),
            soft_wrap=True,
        )
    else:
        console.print(Text("more: --full for the task grid and per-task table", style="dim"))


def cost_line(summary: ReportSummary) -> str:
    """Live spend against what replay (and sharing) saved, the call counts and the price source, on one line."""
    cost, calls = summary.cost, summary.calls
    prices = f"prices: {summary.price_source or 'unknown'}"
    if not calls.any:
        return f"cost: no calls recorded, so live or replayed is unknown; {prices}"
    shared = f", {tally_money(cost.shared)} saved by sharing" if calls.shared else ""
    return (
        f"cost: {tally_money(cost.live)} spent live, {tally_money(cost.replayed)} saved by replay{shared}; "
        f"calls {calls.text()}; {prices}"
    )


def _print_errors(console: Console, summary: ReportSummary, run: RunFacts) -> None:
    for found in run.errors:
        console.print(
            Text.assemble(("error ", "red"), f"{found.run_id} ({found.termination}): {found.message}"), soft_wrap=True
        )


def model_line(model: ModelInfo) -> str:
    args = model.llm_args
    return f"{model.llm} {json.dumps(args, sort_keys=True)}" if args else model.llm


def _print_header(console: Console, summary: ReportSummary) -> None:
    seeds = ", ".join(str(s) for s in summary.trial_seeds)
    console.print(
        f"[bold]{escape(summary.domain)}[/]  {escape(summary.made_by)}  "
        f"domain sha256 {summary.domain_sha256[:12]}  seed {summary.seed} (trials: {seeds})",
        soft_wrap=True,
    )
    header = Table.grid(padding=(0, 2))
    for role, model in summary.models.by_role():
        header.add_row(role, Text(model_line(model), style="cyan"))
    header.add_row("prices", summary.price_source or "unknown")
    if len(summary.sources) > 1:
        header.add_row("merged", ", ".join(summary.sources))
    console.print(header)


def _print_scores(console: Console, summary: ReportSummary, run: RunFacts | None = None) -> None:
    # The interval row: percentile bootstrap over tasks (tauproxy.reports.metrics). Short title, since
    # a rich title wider than its table wraps.
    scores = WholeTable(title="pass^k", show_edge=False)
    scores.add_column("")
    for k in summary.pass_hat_k:
        scores.add_column(f"pass^{k}", justify="right")
    scores.add_column("avg reward", justify="right")
    intervals = summary.pass_hat_k_ci
    estimates = [f"{v:.3f}" for v in summary.pass_hat_k.values()]
    scores.add_row("estimate", *estimates, f"{summary.avg_reward:.3f}")
    scores.add_row(
        "95% CI",
        *[f"{intervals[k][0]:.3f}–{intervals[k][1]:.3f}" if k in intervals else "-" for k in summary.pass_hat_k],
        "",
    )
    console.print(scores)
    console.print(scope_line(summary, run), soft_wrap=True)


def scope_line(summary: ReportSummary, run: RunFacts | None) -> str:
    """What the scores are over. A run cut short (budget, interrupt) says how much of its plan finished:
    "3 tasks x 1 trials" alone would read as the plan."""
    counted = sum(task.trials for task in summary.tasks)
    if run is not None and counted + summary.excluded_simulations < run.planned_trials:
        return (
            f"{counted + summary.excluded_simulations} of {run.planned_trials} planned trials finished "
            f"({summary.num_tasks} of {run.planned_tasks} tasks); pass^k over the finished ones, "
            f"k up to {summary.num_trials}; 95% CI: percentile bootstrap over tasks"
        )
    return f"{summary.num_tasks} tasks x {summary.num_trials} trials; 95% CI: percentile bootstrap over tasks"


def _print_terminations(console: Console, summary: ReportSummary) -> None:
    excluded = summary.excluded_reasons
    counted = {k: v for k, v in summary.termination_reasons.items() if k not in excluded}
    line = "terminations: " + (", ".join(f"{k} {v}" for k, v in counted.items()) or "none")
    if excluded:
        line += "; excluded from pass^k: " + ", ".join(f"{k} {v}" for k, v in excluded.items())
    console.print(line)


def _print_breakdown(console: Console, summary: ReportSummary) -> None:
    breakdown = summary.reward_breakdown
    if not breakdown:
        return
    table = WholeTable(title="reward by basis", show_edge=False)
    table.add_column("basis")
    table.add_column("mean", justify="right")
    table.add_column("runs", justify="right")
    for basis, row in breakdown.items():
        table.add_row(basis.value, f"{row.mean:.3f}", str(row.runs))
    console.print(table)


def tally_money(tally: Tally) -> str:
    """A live or replayed tally: unknown as soon as one call has no price, with the priced part shown."""
    unknown = tally.unknown_price_calls
    if unknown:
        known = tally.known_usd
        return f"unknown (${known:.4f} + {unknown} unpriced)" if known else "unknown"
    return money(tally.usd)


MAX_TASK_ROWS = 10


def _split_table(
    title: str, split: dict[str, CostSplit], first: str, limit: int | None = None, total: CostSplit | None = None
) -> Table:
    table = WholeTable(title=title, show_edge=False)
    table.add_column(first)
    for name in (
        "live (spent)",
        "replayed (saved)",
        "shared (saved)",
        "calls live/replayed/shared",
        "tokens in/out live",
        "tokens replayed",
    ):
        table.add_column(name, justify="right")
    rows = sorted(split.items(), key=lambda item: -(item[1].live.known_usd + item[1].replayed.known_usd))
    if total is not None:
        rows.append(("total", total))
    for name, row in rows[:limit] if limit else rows:
        live, replayed, shared = row.live, row.replayed, row.shared
        table.add_row(
            name,
            tally_money(live),
            tally_money(replayed),
            tally_money(shared),
            f"{live.calls}/{replayed.calls}/{shared.calls}",
            f"{live.prompt_tokens:,}/{live.completion_tokens:,}",
            f"{replayed.prompt_tokens:,}/{replayed.completion_tokens:,}",
        )
    return table


def _print_costs(console: Console, summary: ReportSummary) -> None:
    cost, calls = summary.cost, summary.calls
    if calls.any:
        _print_recorded_costs(console, summary)
    else:
        # No call records at all (a τ²-bench file without its run log): live against replayed is
        # unknown, and a table of zero calls would read as $0 spent.
        console.print("calls: none recorded, so live or replayed is unknown")
    unattributed = cost.unattributed
    if unattributed.simulations:
        roles = ", ".join(f"{role} {money(usd)}" for role, usd in unattributed.by_role.items())
        console.print(f"{unattributed.simulations} trials without call records (live or replayed unknown): {roles}")
    console.print(f"prices: {summary.price_source or 'unknown'}")


def _print_recorded_costs(console: Console, summary: ReportSummary) -> None:
    cost, calls = summary.cost, summary.calls
    totals = CostSplit(
        live_usd=cost.live_usd,
        replayed_usd=cost.replayed_usd,
        live=cost.live,
        replayed=cost.replayed,
        shared=cost.shared,
    )
    console.print(
        _split_table("cost by role: live (spent) vs replayed and shared (saved)", cost.by_role, "role", total=totals)
    )
    console.print(
        f"calls {calls.text()}; latency {cost.latency_s.live:.2f} s live / {cost.latency_s.replayed:.2f} s "
        f"replayed / {cost.latency_s.shared:.2f} s shared (as recorded)"
    )
    if len(cost.by_model) > 1:
        console.print(_split_table("by model", cost.by_model, "model"))
    by_task = cost.by_task
    if by_task:
        more = f" (top {MAX_TASK_ROWS} of {len(by_task)}; all in --json)" if len(by_task) > MAX_TASK_ROWS else ""
        console.print(_split_table(f"by task{more}", by_task, "task", MAX_TASK_ROWS))


def grid_cell(cell: GridCell) -> Text:
    mark = "!" if cell.excluded else ("✓" if cell.success else "✗")
    style = "yellow" if cell.excluded else ("green" if cell.success else "red")
    return Text.assemble((mark, style), (SOURCE_MARKS.get(cell.source, "?"), "dim"))


def _print_grid(console: Console, summary: ReportSummary) -> None:
    rows = summary.grid
    if not rows:
        return
    table = WholeTable(title="trials per task", show_edge=False)
    table.add_column("task")
    table.add_column("pass", justify="right")
    table.add_column("trials")
    for row in rows:
        cells = Text(" ").join(grid_cell(cell) for cell in row.trials)
        passed = sum(1 for cell in row.trials if cell.success)
        table.add_row(row.task_id, f"{passed}/{len(row.trials)}", cells)
    console.print(table)
    console.print(Text(GRID_LEGEND, style="dim"))
