"""`diff --limit N` and `--task ID`: fewer lines, saying what was left out; only the tasks asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import invoke_cli

from tauproxy.data_model.result import Results
from tauproxy.errors import ConfigError
from tauproxy.reports.metrics import is_success
from tauproxy.reports.run_diff import diff_runs, only_tasks, render_diff
from tauproxy.runner.run import execute
from tauproxy_cli.run_setup import RunFlags, build_run_config


def run(agent: str) -> Results:
    return execute(build_run_config(RunFlags(agent_llm=agent, num_trials=3, seed=5))).results


@pytest.fixture(scope="module")
def pair() -> tuple[Results, Results]:
    """The same seeds, more slips in B: several tasks change and several trials flip."""
    a, b = run("scripted/oracle?error_rate=0.1"), run("scripted/oracle?error_rate=0.6")
    flips = diff_runs(a, b).flips
    assert len(flips) >= 3 and len({f.task_id for f in flips}) >= 2, "the test needs several flips"
    return a, b


def flip_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ")]


def test_limit_caps_flips_and_changed_tasks_and_counts_the_rest(pair: tuple[Results, Results]) -> None:
    diff = diff_runs(*pair)
    changed = [row for row in diff.tasks if row.changed]
    whole = render_diff(diff)
    assert len(flip_lines(whole)) == len(diff.flips)
    text = render_diff(diff, limit=2)
    assert flip_lines(text) == flip_lines(whole)[:2], "the first flips, in the same order"
    assert f"... {len(diff.flips) - 2} more flipped trials left out (--limit 2; all in --json)" in text
    listed = [row.task_id for row in changed if f"  {row.task_id} " in text.split("flipped trials:")[0]]
    assert listed == [row.task_id for row in changed[:2]]
    unchanged = [row.task_id for row in diff.tasks if not row.changed]
    assert not any(f"  {task} " in text.split("flipped trials:")[0] for task in unchanged)
    if len(changed) > 2:
        assert f"... {len(changed) - 2} more changed tasks left out" in text
    assert f"per task that changed (passed/trials, A -> B), {len(changed)} of {len(diff.tasks)}:" in text
    assert len(text.splitlines()) < len(whole.splitlines())


def test_a_limit_above_the_counts_leaves_nothing_out(pair: tuple[Results, Results]) -> None:
    diff = diff_runs(*pair)
    text = render_diff(diff, limit=1000)
    assert "left out" not in text and len(flip_lines(text)) == len(diff.flips)


def test_only_tasks_diffs_just_those(pair: tuple[Results, Results]) -> None:
    full = diff_runs(*pair)
    task = full.flips[0].task_id
    a, b = only_tasks(*pair, [task])
    diff = diff_runs(a, b)
    assert [row.task_id for row in diff.tasks] == [task]
    assert diff.flips == [flip for flip in full.flips if flip.task_id == task]
    assert diff.paired == sum(1 for s in pair[0].simulations if s.task_id == task)
    assert diff.a.pass_hat_1 == sum(is_success(s) for s in a.simulations) / len(a.simulations)
    assert diff.comparison is not None and diff.comparison.tasks == 1


def test_an_unknown_task_is_an_error_naming_it(pair: tuple[Results, Results]) -> None:
    with pytest.raises(ConfigError, match="no task 'nope' in either run"):
        only_tasks(*pair, ["create_task", "nope"])


@pytest.mark.slow
def test_the_cli_flags(tmp_path: Path) -> None:
    for name, agent in (("a", "scripted/oracle?error_rate=0.1"), ("b", "scripted/oracle?error_rate=0.6")):
        invoke_cli(
            "run",
            "--domain",
            "mock",
            "--agent-llm",
            agent,
            "--num-trials",
            "3",
            "--seed",
            "5",
            "--save-to",
            str(tmp_path / name),
        )
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    text = invoke_cli("diff", a, b, "--limit", "1").stdout
    assert len(flip_lines(text)) == 1 and "more flipped trials left out (--limit 1" in text
    task = flip_lines(text)[0].split()[1]
    only = invoke_cli("diff", a, b, "--task", task, "--task", "explain_order").stdout
    assert {line.split()[1] for line in flip_lines(only)} <= {task, "explain_order"}
    assert task in only
    for bad, message in ((["--task", "nope"], "no task 'nope'"), (["--limit", "0"], "--limit 0")):
        proc = invoke_cli("diff", a, b, *bad, check=False)
        assert proc.returncode == 2 and message in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
