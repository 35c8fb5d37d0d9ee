"""A run that never ended (killed, Ctrl-C) has no results.json; `report` and `view` read what it saved
(run.json, tasks.json when written, simulations.jsonl) instead of refusing or reading a stale file."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import strip_volatile
from typer.testing import CliRunner

from tauproxy.data_model.result import Results, SimulationRun, TerminationReason
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.reports.load import load_any_results
from tauproxy.results.run_dir import RESULTS_FILE, RUN_INFO_FILE, SIMULATIONS_FILE, ResultsDir, load_results
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute
from tauproxy_cli.main import app


class Killed(BaseException):
    """Stands for SIGKILL or Ctrl-C: nothing after it runs, so results.json is never written."""


def config(save_to: Path, **changes: Any) -> RunConfig:
    base = RunConfig(
        domain="mock",
        agent=LLMConfig(model="scripted/oracle?error_rate=0.3"),
        user=LLMConfig(model="scripted/user"),
        num_trials=2,
        num_tasks=4,
        save_to=save_to,
    )
    return base.model_copy(update=changes)


def killed_after(trials: int, run_config: RunConfig) -> None:
    def progress(run: SimulationRun, done: int, total: int) -> None:
        if done >= trials:
            raise Killed

    with pytest.raises(Killed):
        execute(run_config, progress)


def comparable(results: Results) -> Any:
    return strip_volatile(json.loads(results.model_dump_json()))


def cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, f"{args}: {result.output}\n{result.exception!r}"
    return result


def test_a_killed_run_reports_and_views(tmp_path: Path) -> None:
    run_dir = tmp_path / "killed"
    killed_after(3, config(run_dir))
    assert not (run_dir / RESULTS_FILE).exists()

    report = json.loads(cli("report", str(run_dir), "--json").stdout)
    saved_tasks = {line["task_id"] for line in map(json.loads, (run_dir / SIMULATIONS_FILE).read_text().splitlines())}
    assert sum(task["trials"] for task in report["tasks"]) == 3
    assert {task["task_id"] for task in report["tasks"]} == saved_tasks
    assert any("did not finish" in note for note in report["notes"])
    assert "did not finish" in cli("report", str(run_dir)).output
    viewed = json.loads(cli("view", str(run_dir), "--json").stdout)
    assert viewed["id"] in {sim.id for sim in ResultsDir(run_dir).finished().values()}
    assert "task " in cli("view", str(run_dir)).stdout


def test_a_dir_with_only_run_json_and_simulations_reports(tmp_path: Path) -> None:
    """As a run started before tasks.json was written leaves it: tasks come from the saved trials."""
    whole = execute(config(tmp_path / "whole"))
    cut = tmp_path / "cut"
    cut.mkdir()
    shutil.copy(tmp_path / "whole" / RUN_INFO_FILE, cut / RUN_INFO_FILE)
    lines = (tmp_path / "whole" / SIMULATIONS_FILE).read_text().splitlines(keepends=True)
    (cut / SIMULATIONS_FILE).write_text("".join(lines[:5]))

    loaded = load_any_results(cut)
    assert loaded.tasks == [] and len(loaded.simulations) == 5
    assert loaded.info == whole.results.info
    report = json.loads(cli("report", str(cut), "--json").stdout)
    assert sum(task["trials"] for task in report["tasks"]) == 5
    assert json.loads(cli("view", str(cut), "--json").stdout)["id"]


def test_partial_results_are_what_results_json_would_hold(tmp_path: Path) -> None:
    whole = execute(config(tmp_path / "whole"))
    saved = list(whole.results.simulations)
    random.Random(7).shuffle(saved)  # finishing order is any order
    cut = ResultsDir(tmp_path / "cut")
    cut.prepare(whole.results.info, whole.results.tasks)
    for run in saved:
        cut.append(run)

    assert comparable(cut.partial_results()) == comparable(whole.results)
    assert comparable(load_results(tmp_path / "cut")) == comparable(whole.results)
    on_disk = Results.model_validate_json((tmp_path / "whole" / RESULTS_FILE).read_text())
    assert comparable(on_disk) == comparable(whole.results)


def test_partial_results_keep_a_rerun_over_its_infrastructure_error(tmp_path: Path) -> None:
    whole = execute(config(tmp_path / "whole"))
    first, *rest = whole.results.simulations
    failed = first.model_copy(
        update={"termination_reason": TerminationReason.INFRASTRUCTURE_ERROR, "reward_info": None}
    )
    cut = ResultsDir(tmp_path / "cut")
    cut.prepare(whole.results.info, whole.results.tasks)
    for run in [failed, *rest[:2], first, failed]:
        cut.append(run)
    kept = {run.id: run for run in cut.partial_results().simulations}
    assert kept[first.id].termination_reason == first.termination_reason
    assert len(kept) == 3


def test_a_resume_that_is_killed_does_not_report_the_earlier_results(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    execute(config(run_dir, num_trials=1))
    assert (run_dir / RESULTS_FILE).exists()
    killed_after(1, config(run_dir, num_trials=2))  # adds the second trials, killed after one

    report = json.loads(cli("report", str(run_dir), "--json").stdout)
    assert sum(task["trials"] for task in report["tasks"]) == 4 + 1, "the trial saved since is reported"


def test_a_killed_run_reports_every_planned_task(tmp_path: Path) -> None:
    run_dir = tmp_path / "killed"
    killed_after(1, config(run_dir))
    assert [task.id for task in load_results(run_dir).tasks] == [
        task.id for task in execute(config(tmp_path / "whole")).results.tasks
    ]
