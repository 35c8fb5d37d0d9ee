"""`tauproxy view RUN [--task ID --trial N]`: read one trajectory, its reward checks and its model calls.

`view RUN --html OUT` writes the run's HTML report; `view DIR --html OUT`, on a directory that is not
a run (no results.json) but holds runs, writes the runs index (tauproxy/reports/runs_index.py): one
page listing every run under DIR, each run's report written beside it in `OUT_files/`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from tauproxy_cli.flag import flag
from tauproxy_cli.output import WholeTable, out_console, print_json
from tauproxy_cli.run_input import RUN_ARGUMENT, RUN_LOG_HELP

if TYPE_CHECKING:
    from tauproxy.data_model.message import Message
    from tauproxy.data_model.result import SimulationRun

ROLE_STYLES = {"assistant": "cyan", "user": "green", "tool": "yellow", "system": "magenta"}
SOURCE_LABELS = {"live": "live", "replay": "replayed", "shared": "shared"}


def view_command(
    run: Annotated[Path, typer.Argument(help=f"The run to read ({RUN_ARGUMENT}).")],
    task: Annotated[str | None, typer.Option("--task", help="Task id (default: first failing one).")] = None,
    trial: Annotated[int | None, typer.Option("--trial", help="Trial number of --task.")] = None,
    json_output: Annotated[bool, flag("--json", help="Print the trajectory as JSON.")] = False,
    run_log: Annotated[Path | None, typer.Option("--run-log", help=RUN_LOG_HELP)] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write a self-contained HTML page to this file: the run's report, or for a directory "
            "holding runs, an index of every run under it (their reports go in NAME_files/ beside NAME.html).",
        ),
    ] = None,
) -> None:
    """Show one trajectory: messages, tool calls and results, reward checks, and every model call."""
    from tauproxy.errors import ConfigError
    from tauproxy.reports.runs_index import is_run_dir

    holds_runs = run.is_dir() and not is_run_dir(run)
    if html is not None:
        if task is not None or trial is not None or json_output:
            raise ConfigError("--html writes a whole page; --task, --trial and --json choose what is printed: give one")
        if holds_runs:
            if run_log is not None:
                raise ConfigError(f"--run-log joins onto one run; {run} is a directory of runs")
            _write_runs_index(run, html)
        else:
            _write_report(run, run_log, html)
        return
    if holds_runs:
        raise ConfigError(f"{run}: not a run (no results.json); to list the runs under it, add --html OUT")
    from tauproxy.reports.grid import call_source, trial_grid
    from tauproxy.reports.trajectory import select_trial
    from tauproxy.results.load import load_any_results
    from tauproxy.results.provenance import task_order

    results = load_any_results(run, run_log)
    chosen = select_trial(results, task, trial)
    if json_output:
        print_json({"source": call_source(chosen), **chosen.model_dump(mode="json")})
        return
    console = out_console
    if task is None:
        from tauproxy_cli.report_view import GRID_LEGEND, grid_cell

        rows = trial_grid(results.simulations, task_order(results))
        listing = WholeTable(title="trials", show_edge=False)
        listing.add_column("task")
        listing.add_column("trials 0..n")
        for row in rows:
            listing.add_row(row.task_id, Text(" ").join(grid_cell(c) for c in row.trials))
        console.print(listing)
        console.print(Text(GRID_LEGEND, style="dim"))
        console.print("showing the first failing trial (or the first); choose with --task ID --trial N")
    _print_trajectory(console, chosen, call_source(chosen))


def _write_runs_index(root: Path, out: Path) -> None:
    from tauproxy.reports.html_runs_index import render_runs_index
    from tauproxy.reports.runs_index import index_runs, reports_dir
    from tauproxy_cli.output import note

    index = index_runs(root, out)
    _write(out, render_runs_index(index))
    for skipped in index.skipped:
        note(f"{root / skipped.path}: skipped, {skipped.reason}")
    note(f"runs index: {out} ({len(index.runs)} runs; their reports in {reports_dir(out)})")


def _write_report(run: Path, run_log: Path | None, out: Path) -> None:
    from tauproxy.reports.html import render_html
    from tauproxy.reports.summary import summarize
    from tauproxy.results.load import load_any_results
    from tauproxy_cli.output import err_console

    results = load_any_results(run, run_log)
    _write(out, render_html(summarize(results), results))
    err_console.print(f"html report: {out}", soft_wrap=True)


def _write(out: Path, page: str) -> None:
    from tauproxy.errors import ConfigError

    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{out}: cannot write the page: {exc}") from None


def _print_trajectory(console: Console, run: SimulationRun, source: str) -> None:
    reward = run.reward_info.reward if run.reward_info else None
    console.rule(f"task {run.task_id} · trial {run.trial} · seed {run.seed}")
    console.print(
        f"termination {run.termination_reason.value}  reward {reward if reward is not None else 'none'}  "
        f"calls {source}" + (f"  error: {run.error}" if run.error else ""),
        soft_wrap=True,
    )
    _print_messages(console, run.messages)
    _print_reward(console, run)
    _print_calls(console, run)


def _print_messages(console: Console, messages: list[Message]) -> None:
    from tauproxy.reports.trajectory import tool_names_by_call

    names = tool_names_by_call(messages)
    for message in messages:
        style = ROLE_STYLES.get(message.role, "white")
        if message.role == "tool":
            tool = names.get(message.tool_call_id or "", "?")
            flag = Text(" ERROR", style="bold red") if message.error else Text("")
            console.print(
                Text.assemble(
                    ("  ← ", style),
                    (f"{tool}", f"bold {style}"),
                    flag,
                    ": ",
                    (message.content or "", "red" if message.error else ""),
                )
            )
            continue
        if message.has_text():
            console.print(Text.assemble((f"{message.role}: ", f"bold {style}"), message.content or ""))
        for call in message.tool_calls or []:
            arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
            console.print(Text.assemble((f"{message.role} → ", f"bold {style}"), (call.name, "bold"), f"({arguments})"))


def _print_reward(console: Console, run: SimulationRun) -> None:
    from tauproxy.reports.trajectory import reward_checks

    info = run.reward_info
    if info is None:
        console.print("reward: none (not evaluated)")
        return
    breakdown = ", ".join(f"{basis} {value:g}" for basis, value in (info.reward_breakdown or {}).items())
    basis = ", ".join(info.reward_basis or [])
    console.print(f"reward {info.reward:g}  basis [{basis}]  breakdown: {breakdown or 'none'}")
    checks = reward_checks(info)
    if checks:
        table = WholeTable(show_edge=False)
        for column in ("check", "", "what", "why"):
            table.add_column(column)
        for row in checks:
            mark = Text("✓", style="green") if row.met else Text("✗", style="red")
            table.add_row(row.kind, mark, row.label, row.detail)
        console.print(table)


def _print_calls(console: Console, run: SimulationRun) -> None:
    if not run.calls:
        console.print("model calls: none recorded (live or replayed unknown)")
        return
    table = WholeTable(title="model calls", show_edge=False)
    table.add_column("#", justify="right")
    for column in ("role", "source", "model"):
        table.add_column(column)
    for column in ("tokens in/out", "cost", "latency"):
        table.add_column(column, justify="right")
    for call in run.calls:
        table.add_row(
            str(call.index),
            call.role,
            Text(SOURCE_LABELS[call.source], style="yellow" if call.source == "live" else "blue"),
            call.model,
            f"{call.usage.prompt_tokens}/{call.usage.completion_tokens}",
            _cost(call.cost_usd),
            f"{call.latency_s:.3f}s",
        )
    console.print(table)


def _cost(value: Any) -> str:
    return "unknown" if value is None else f"${value:.6f}"
