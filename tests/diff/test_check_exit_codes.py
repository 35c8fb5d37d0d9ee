"""`tauproxy check`: exit 0 (good), 1 (bad) or 125 (cannot test), as `git bisect run` reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli
from run_diff_support import edit_results, run

TASKS = ("--task-ids", "create_task,complete_task,move_due_date", "--num-trials", "2")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("check_runs")
    return {
        "base": run(root / "base", "--agent-llm", "scripted/oracle", *TASKS),
        "worse": run(root / "worse", "--agent-llm", "scripted/oracle?error_rate=0.9", *TASKS),
        "other": run(root / "other", "--agent-llm", "scripted/oracle", "--task-ids", "count_open_tasks"),
    }


def check(run_dir: Path, baseline: Path | str, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = invoke_cli("check", str(run_dir), "--baseline", str(baseline), *extra, "--json", check=False)
    return proc.returncode, json.loads(proc.stdout)


def test_no_drop_is_good(runs: dict[str, Path]) -> None:
    code, numbers = check(runs["base"], runs["base"])
    assert code == 0 and numbers["verdict"] == "good"
    assert numbers["score"] == numbers["baseline_score"] == 1.0 and numbers["common_tasks"] == 3


def test_drop_beyond_max_drop_is_bad(runs: dict[str, Path]) -> None:
    code, numbers = check(runs["worse"], runs["base"], "--max-drop", "0.1")
    assert code == 1 and numbers["verdict"] == "bad"
    assert numbers["drop"] > 0.1 and numbers["exit_code"] == 1
    # A large enough allowance makes the same run good: the threshold is what decides.
    assert check(runs["worse"], runs["base"], "--max-drop", "1")[0] == 0


def test_metrics(runs: dict[str, Path]) -> None:
    _, numbers = check(runs["worse"], runs["base"], "--metric", "pass^k")
    assert numbers["k"] == 2 and numbers["metric"] == "pass^k"
    code, numbers = check(runs["worse"], runs["base"], "--metric", "avg_reward")
    assert code == 1 and numbers["k"] is None
    code, numbers = check(runs["base"], runs["base"], "--metric", "pass^3")
    assert code == 125 and "unknown metric" in numbers["reason"]


def test_missing_or_unreadable_inputs_cannot_be_tested(runs: dict[str, Path], tmp_path: Path) -> None:
    assert check(runs["base"], tmp_path / "nowhere")[0] == 125
    assert check(tmp_path / "nowhere", runs["base"])[0] == 125
    garbage = tmp_path / "results.json"
    garbage.write_text("{not json")
    assert check(garbage, runs["base"])[0] == 125
    proc = invoke_cli("check", str(runs["base"]), check=False)  # no --baseline at all
    # a usage error, not a commit that cannot be judged: one line, exit 2
    assert proc.returncode == 2 and "--baseline" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_no_common_task_cannot_be_tested(runs: dict[str, Path]) -> None:
    code, numbers = check(runs["other"], runs["base"])
    assert code == 125 and "no task in common" in numbers["reason"]


def test_mostly_infrastructure_errors_cannot_be_tested(runs: dict[str, Path], tmp_path: Path) -> None:
    def break_trials(count: int) -> Any:
        def edit(data: dict[str, Any]) -> None:
            for simulation in data["simulations"][:count]:
                simulation["termination_reason"] = "infrastructure_error"
                simulation["reward_info"] = None

        return edit

    mostly = tmp_path / "mostly"
    mostly.mkdir()
    (mostly / "results.json").write_text((runs["worse"] / "results.json").read_text())
    edit_results(mostly, break_trials(4))  # 4 of 6
    code, numbers = check(mostly, runs["base"])
    assert code == 125 and numbers["infrastructure_errors"] == 4
    # Exactly half is still testable, and a regression among the rest is bad, never 125.
    half = tmp_path / "half"
    half.mkdir()
    (half / "results.json").write_text((runs["worse"] / "results.json").read_text())
    edit_results(half, break_trials(3))
    code, numbers = check(half, runs["base"])
    assert code == 1 and numbers["infrastructure_errors"] == 3


def test_plain_text_names_the_verdict(runs: dict[str, Path]) -> None:
    proc = invoke_cli("check", str(runs["worse"]), "--baseline", str(runs["base"]), check=False)
    assert proc.returncode == 1 and proc.stdout.startswith("bad: pass^1")
