"""`tauproxy view`: one trajectory with its tool calls, reward checks and live/replayed model calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from conftest import invoke_cli
from report_runs import mock_run, results_json

WIDE = {"COLUMNS": "200"}
# The command as main.py runs it: one typer command, a TauproxyError becomes one line on stderr.
FALLBACK = """
import sys, typer
from tauproxy.errors import TauproxyError
from tauproxy_cli.view import view_command
app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command()(view_command)
try:
    app()
except TauproxyError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


@cache
def view_is_wired() -> bool:
    # A row of the commands table, not the word anywhere in some help text.
    return any(line.strip("│ ").startswith("view ") for line in invoke_cli("--help", env=WIDE).stdout.splitlines())


def run_view(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The real `tauproxy view`; until main.py wires it, the same command function run by typer directly."""
    if view_is_wired():
        return invoke_cli("view", *args, env=WIDE, check=check)
    code = FALLBACK
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **WIDE}
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"view {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("view")
    extra = ("--cassette", str(root / "cassette"))
    live = mock_run(root / "live", trials=2, seed=4, extra=(*extra, "--record-mode", "record"))
    replayed = mock_run(root / "replayed", trials=2, seed=4, extra=(*extra, "--record-mode", "replay"))
    return live, replayed


def first_with_tool_call(run_dir: Path) -> dict:
    return next(s for s in results_json(run_dir)["simulations"] if any(m.get("tool_calls") for m in s["messages"]))


def test_view_shows_tool_calls_results_reward_and_live_calls(runs: tuple[Path, Path]) -> None:
    live, _ = runs
    sim = first_with_tool_call(live)
    out = run_view(str(live), "--task", sim["task_id"], "--trial", str(sim["trial"])).stdout
    call = next(c for m in sim["messages"] for c in m.get("tool_calls") or [])
    assert f"→ {call['name']}(" in out and json.dumps(call["arguments"], sort_keys=True) in out
    assert f"← {call['name']}" in out, "the tool result names the call it answers"
    assert f"task {sim['task_id']} · trial {sim['trial']}" in out
    assert "reward" in out and "model calls" in out
    for column in ("#", "role", "source", "model", "tokens in/out", "cost", "latency"):
        assert column in out
    assert " live " in out and "replayed" not in out.split("model calls")[1]


def test_view_of_a_replayed_run_says_replayed(runs: tuple[Path, Path]) -> None:
    _, replayed = runs
    sim = first_with_tool_call(replayed)
    out = run_view(str(replayed), "--task", sim["task_id"], "--trial", str(sim["trial"])).stdout
    calls_table = out.split("model calls")[1]
    assert "replayed" in calls_table and " live " not in calls_table


def test_without_task_it_lists_trials_and_shows_the_first_failing_one(runs: tuple[Path, Path]) -> None:
    live, _ = runs
    sims = results_json(live)["simulations"]
    failing = next(s for s in sims if abs(s["reward_info"]["reward"] - 1.0) > 1e-6)
    out = run_view(str(live)).stdout
    assert "trials" in out and all(s["task_id"] in out for s in sims)
    assert f"task {failing['task_id']} · trial {failing['trial']}" in out

    shown = json.loads(run_view(str(live), "--json").stdout)
    assert (shown["task_id"], shown["trial"]) == (failing["task_id"], failing["trial"])
    assert shown["source"] == "live" and shown["calls"]


def test_tool_errors_are_flagged(runs: tuple[Path, Path], tmp_path: Path) -> None:
    live, _ = runs
    data = results_json(live)
    sim = next(s for s in data["simulations"] if any(m["role"] == "tool" for m in s["messages"]))
    tool_message = next(m for m in sim["messages"] if m["role"] == "tool")
    tool_message.update(error=True, content="Error: no such record")
    (tmp_path / "results.json").write_text(json.dumps(data))
    out = run_view(str(tmp_path), "--task", sim["task_id"], "--trial", str(sim["trial"])).stdout
    assert "ERROR" in out and "Error: no such record" in out


def test_unknown_task_is_a_one_line_error(runs: tuple[Path, Path]) -> None:
    live, _ = runs
    proc = run_view(str(live), "--task", "nope", check=False)
    assert proc.returncode != 0 and "nope" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
