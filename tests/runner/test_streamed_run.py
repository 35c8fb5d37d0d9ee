"""A run hands its trials on in plan order instead of holding them: results.json, the printed summary
and the library's results are what they were when every trial was held, however the trials finish."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import invoke_cli

from tauproxy.data_model.result import SimulationRun
from tauproxy.reports.summary import summarize, summary_of
from tauproxy.reports.tally import RunTally
from tauproxy.results.run_dir import RESULTS_FILE, ResultsDir, load_results, results_json_parts
from tauproxy.runner.plan_order import PlanOrder


def run_args(run_dir: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle?error_rate=0.4",
        "--num-trials",
        "3",
        "--max-concurrency",
        "3",
        "--save-to",
        str(run_dir),
        *extra,
    ]


def test_the_printed_summary_is_the_report_of_the_results_file(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    printed = json.loads(invoke_cli(*run_args(run_dir), "--json").stdout)
    reported = json.loads(invoke_cli("report", str(run_dir), "--json").stdout)
    assert reported.pop("sources") == [str(run_dir)] and printed.pop("sources") == [], "report names what it read"
    assert printed == reported
    assert printed["num_trials"] == 3 and 0 < printed["pass_hat_k"]["1"] < 1, "passes and failures both counted"


def test_results_json_is_written_as_the_whole_results_would_be(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    invoke_cli(*run_args(run_dir))
    results = load_results(run_dir)
    assert (run_dir / RESULTS_FILE).read_text(encoding="utf-8") == "".join(results_json_parts(results))
    order = [(run.task_id, run.trial) for run in results.simulations]
    rank = {task.id: index for index, task in enumerate(results.tasks)}
    assert order == sorted(order, key=lambda pair: (rank[pair[0]], pair[1])), "task order, then trial"
    assert not list(run_dir.glob("*.tmp")), "no temp file is left behind"


def test_a_tally_in_any_order_of_tasks_gives_the_summary(tmp_path: Path) -> None:
    """The grid's order for tasks the results do not list (a merged or τ² file) follows their trials."""
    run_dir = tmp_path / "run"
    invoke_cli(*run_args(run_dir))
    results = load_results(run_dir)
    runs = results.simulations[:]
    random.Random(7).shuffle(runs)
    unlisted = results.model_copy(update={"tasks": results.tasks[2:], "simulations": runs})
    tally = RunTally([task.id for task in unlisted.tasks])
    for run in runs:
        tally.add(run)
    assert summary_of(unlisted, tally) == summarize(unlisted)
    expected = legacy_grid(runs, [task.id for task in unlisted.tasks])
    assert [row.task_id for row in summarize(unlisted).grid] == expected


def legacy_grid(runs: list[SimulationRun], order: list[str]) -> list[str]:
    rows = dict.fromkeys(order)
    for run in sorted(runs, key=lambda r: r.trial):
        rows.setdefault(run.task_id)
    present = {run.task_id for run in runs}
    return [task_id for task_id in rows if task_id in present]


def test_trials_are_handed_on_in_plan_order_and_only_early_ones_wait(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    invoke_cli(*run_args(run_dir))
    a, b, c, d, e = load_results(run_dir).simulations[:5]
    emitted: list[tuple[str, str | None]] = []
    order = PlanOrder([a.id, b.id, c.id, d.id, e.id], {b.id: b}, lambda run, line: emitted.append((run.id, line)))
    order.add(c, "c-line")
    assert emitted == [], "c waits for a (b is resumed, so it is known)"
    order.add(a, "a-line")
    assert emitted == [(a.id, "a-line"), (b.id, None), (c.id, "c-line")]
    order.add(e, "e-line")
    assert len(emitted) == 3, "e waits for d"
    order.close()
    assert emitted[3:] == [(e.id, "e-line")], "d never ran (a stop): skipped at the end"


def test_a_results_file_that_cannot_be_written_is_never_finished_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    invoke_cli(*run_args(run_dir))
    results = load_results(run_dir)
    (tmp_path / "other").mkdir()
    writer = ResultsDir(tmp_path / "other").results_writer()
    writer.add(results.simulations[0])

    def disk_full(text: str) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer._body, "write", disk_full)
    with pytest.raises(OSError, match="No space left"):
        writer.add(results.simulations[1])
    with pytest.raises(OSError, match="No space left"):
        writer.finish(results.info, results.tasks)
    assert list((tmp_path / "other").iterdir()) == [], "no results.json, no temp file"
