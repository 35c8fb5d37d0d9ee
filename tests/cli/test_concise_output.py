"""What `tauproxy run` prints: a short summary by default, every table with --full, and a budget stop
that keeps this invocation's spend apart from the whole run's and counts the plan right."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from conftest import REPO_ROOT, invoke_cli
from rich.console import Console

from tauproxy.data_model.result import Results, SimulationRun, TerminationReason
from tauproxy.reports.costs import cost_summary
from tauproxy.reports.summary import ReportSummary, summarize
from tauproxy_cli import report_view
from tauproxy_cli.report_view import RunFacts, first_errors, print_summary

DEMO_PRICES = REPO_ROOT / "cassettes" / "demo-prices.json"
SLIPS = "scripted/oracle?error_rate=0.3"
GRID_TITLE = "trials per task"


def run_mock(dest: Path, *extra: str) -> str:
    return invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        SLIPS,
        "--num-trials",
        "3",
        "--seed",
        "5",
        "--save-to",
        str(dest),
        *extra,
        env={"COLUMNS": "200"},
    ).stdout


def load(run_dir: Path) -> Results:
    return Results.model_validate_json((run_dir / "results.json").read_text())


@pytest.mark.slow
def test_the_default_summary_is_short_and_says_where_the_rest_is(tmp_path: Path) -> None:
    out = run_mock(tmp_path / "run")
    results = load(tmp_path / "run")
    summary = summarize(results)
    assert GRID_TITLE not in out and "by task" not in out and "reward by basis" not in out
    assert len(out.strip().splitlines()) <= 15, out
    for k, value in summary.pass_hat_k.items():
        assert f"pass^{k}" in out and f"{value:.3f}" in out
    assert "terminations: " in out and "scripted/oracle?error_rate=0.3" in out, "names the models"
    assert f"calls {summary.calls.live} live / {summary.calls.replayed} replayed" in out
    assert f"prices: {summary.price_source}" in out
    assert f"results: {tmp_path / 'run'}/results.json" in out and "--full" in out


def capture(summary: ReportSummary, full: bool, facts: RunFacts, monkeypatch: pytest.MonkeyPatch) -> str:
    text = io.StringIO()
    monkeypatch.setattr(report_view, "out_console", Console(width=200, file=text))
    print_summary(summary, saved_to="x", full=full, run=facts)
    return text.getvalue()


@pytest.mark.slow
def test_full_has_the_grid_and_the_per_task_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_mock(tmp_path / "run")
    results = load(tmp_path / "run")
    summary = summarize(results)
    facts = RunFacts(planned_tasks=10, planned_trials=30, new_trials=30, new_live=cost_summary([]).live)
    full = capture(summary, True, facts, monkeypatch)
    short = capture(summary, False, facts, monkeypatch)
    assert GRID_TITLE in full and "by task" in full and "reward by basis" in full
    for row in summary.grid:
        assert row.task_id in full
    assert GRID_TITLE not in short and len(short.splitlines()) < len(full.splitlines()) / 2


def test_first_errors_are_one_per_cause_in_trial_order() -> None:
    def failed(n: int, message: str | None) -> SimulationRun:
        return SimulationRun(
            id=f"t:{n}",
            task_id="t",
            trial=n,
            seed=n,
            messages=[],
            error=message,
            termination_reason=TerminationReason.INFRASTRUCTURE_ERROR,
        )

    runs = [
        failed(0, None),
        failed(1, "timeout after 30 s\ntrace"),
        failed(2, "timeout after 30 s\nother"),
        failed(3, "HTTP 500"),
        failed(4, "HTTP 429"),
        failed(5, "HTTP 400"),
    ]
    found = first_errors(runs, limit=3)
    assert [(e.run_id, e.message) for e in found] == [
        ("t:1", "timeout after 30 s"),
        ("t:3", "HTTP 500"),
        ("t:4", "HTTP 429"),
    ]
    assert found[0].termination == "infrastructure_error"


def spend(line: str, label: str) -> float:
    match = re.search(rf"{label}: \$(\d+\.\d+) live over (\d+)", line)
    assert match, line
    return float(match.group(1))


@pytest.mark.slow
def test_a_budget_stop_keeps_this_invocations_spend_apart_and_counts_the_plan(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = (
        "run",
        "--domain",
        "airline",
        "--agent-llm",
        "scripted/oracle",
        "--user-llm",
        "scripted/user",
        "--prices",
        str(DEMO_PRICES),
        "--max-cost",
        "0.4",
        "--num-tasks",
        "10",
        "--num-trials",
        "2",
        "--save-to",
        str(run_dir),
    )
    first = invoke_cli(*args, env={"COLUMNS": "300"})
    done_first = load(run_dir).simulations
    assert 0 < len(done_first) < 20, "the budget must stop this run part way for the test to mean anything"
    tasks_first = len({s.task_id for s in done_first})
    assert f"{len(done_first)} of 20 planned trials finished ({tasks_first} of 10 tasks)" in first.stdout
    line = next(x for x in first.stderr.splitlines() if x.startswith("this invocation:"))
    assert spend(line, "this invocation") == spend(line, "whole run"), "nothing resumed yet"
    assert f"over {len(done_first)} of 20 trials" in line

    second = invoke_cli(*args, env={"COLUMNS": "300"})
    done = load(run_dir).simulations
    assert len(done) > len(done_first)
    line = next(x for x in second.stderr.splitlines() if x.startswith("this invocation:"))
    mine = cost_summary([s for s in done if s.id not in {d.id for d in done_first}]).live.usd
    whole = cost_summary(done).live.usd
    assert mine is not None and whole is not None
    assert abs(spend(line, "this invocation") - mine) < 1e-4 and abs(spend(line, "whole run") - whole) < 1e-4
    assert spend(line, "whole run") > spend(line, "this invocation")
    assert f"this invocation: ${mine:.4f} live over {len(done) - len(done_first)} trials" in line
    if len(done) < 20:
        tasks = len({s.task_id for s in done})
        assert f"{len(done)} of 20 planned trials finished ({tasks} of 10 tasks)" in second.stdout


@pytest.mark.slow
def test_json_output_is_only_json(tmp_path: Path) -> None:
    out = run_mock(tmp_path / "run", "--json")
    assert json.loads(out)["num_tasks"] == 10
