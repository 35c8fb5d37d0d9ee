"""diff_runs on edited copies of one real run: the branches end-to-end runs cannot reach cheaply.

Identical transcripts with different rewards (judge or grading changes), trial pairing, and what
does not count as a flip. The base run is a real scripted run, made in-process because it is fast.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import Results, SimulationRun, TerminationReason
from tauproxy.reports.metrics import is_success
from tauproxy.reports.run_diff import diff_runs, pair_trials, render_diff
from tauproxy.runner.run import execute
from tauproxy_cli.run_setup import RunFlags, build_run_config


@pytest.fixture(scope="module")
def base() -> Results:
    flags = RunFlags(agent_llm="scripted/oracle", num_trials=2, task_ids=["create_task,explain_order"])
    results = execute(build_run_config(flags)).results
    assert all(is_success(run) for run in results.simulations)
    return results


def edited(results: Results, edit: Callable[[Results], None]) -> Results:
    copy = results.model_copy(deep=True)
    edit(copy)
    return copy


def judged(results: Results) -> SimulationRun:
    return next(run for run in results.simulations if any(c.role == "judge" for c in run.calls))


def other_answer(run: SimulationRun) -> Message:
    """The agent's first answer (message #2, after greeting and opening) replaced by other text."""
    return run.messages[2].model_copy(update={"content": "Something else.", "tool_calls": None})


def fail(run: SimulationRun) -> None:
    assert run.reward_info is not None
    run.reward_info.reward = 0.0


def test_identical_runs_have_no_flips(base: Results) -> None:
    diff = diff_runs(base, base)
    assert diff.flips == [] and diff.setting_changes == {} and diff.paired == 4
    assert all(row.a_successes == row.b_successes == 2 for row in diff.tasks)


def test_same_transcript_other_reward_is_no_divergence(base: Results) -> None:
    other = edited(base, lambda r: fail(r.simulations[0]))
    [flip] = diff_runs(base, other).flips
    found = flip.divergence
    assert found.cause == "no_divergence" and flip.direction == "regressed"
    assert found.message_index is None and found.call_index is None
    assert "-reward: 1.0" in found.message_diff and "+reward: 0.0" in found.message_diff


def test_other_judge_is_judge_changed(base: Results) -> None:
    def edit(results: Results) -> None:
        results.info.judge_info.llm = "scripted/judge-v2"
        run = judged(results)
        run.calls = [c.model_copy(update={"key": "other" + c.key}) if c.role == "judge" else c for c in run.calls]
        fail(run)

    [flip] = diff_runs(base, edited(base, edit)).flips
    found = flip.divergence
    judge_call = next(c for c in judged(base).calls if c.role == "judge")
    assert found.cause == "judge_changed"
    assert (found.call_index, found.call_role) == (judge_call.index, "judge")
    assert "judge.llm" in found.detail


def test_judge_change_does_not_explain_a_trial_without_judge_calls(base: Results) -> None:
    def edit(results: Results) -> None:
        results.info.judge_info.llm = "scripted/judge-v2"
        fail(next(run for run in results.simulations if not any(c.role == "judge" for c in run.calls)))

    [flip] = diff_runs(base, edited(base, edit)).flips
    assert flip.task_id == "create_task" and flip.divergence.cause == "no_divergence"


def test_same_judge_request_other_verdict_is_resampling_noise(base: Results) -> None:
    def edit(results: Results) -> None:
        run = judged(results)
        assert run.reward_info is not None and run.reward_info.nl_assertions
        run.reward_info.nl_assertions[0].met = False
        fail(run)

    [flip] = diff_runs(base, edited(base, edit)).flips
    assert flip.divergence.cause == "resampling_noise" and flip.divergence.call_role == "judge"
    assert "+not met:" in flip.divergence.message_diff


def test_agent_answer_with_same_key_is_resampling_noise(base: Results) -> None:
    def edit(results: Results) -> None:
        run = results.simulations[0]
        run.messages[2] = other_answer(run)
        fail(run)

    [flip] = diff_runs(base, edited(base, edit)).flips
    found = flip.divergence
    assert found.cause == "resampling_noise"
    assert (found.message_index, found.call_index, found.call_role) == (2, 1, "agent")
    assert "+Something else." in found.message_diff


def test_agent_request_changed_without_a_setting_is_unexplained(base: Results) -> None:
    def edit(results: Results) -> None:
        run = results.simulations[0]
        run.messages[2] = other_answer(run)
        run.calls[1] = run.calls[1].model_copy(update={"key": "f" * 64})
        fail(run)

    [flip] = diff_runs(base, edited(base, edit)).flips
    assert flip.divergence.cause == "unexplained"
    assert "no recorded setting" in flip.divergence.detail


def test_infrastructure_errors_are_not_flips(base: Results) -> None:
    def edit(results: Results) -> None:
        results.simulations[0].termination_reason = TerminationReason.INFRASTRUCTURE_ERROR
        fail(results.simulations[0])

    diff = diff_runs(base, edited(base, edit))
    assert diff.flips == []
    assert diff.tasks[0].b_trials == 1  # the excluded trial leaves the counts, as in pass^k


def test_trials_pair_by_number_then_by_seed(base: Results) -> None:
    def renumber(results: Results) -> None:
        for run in results.simulations:
            run.trial += 10

    pairs, only_a, only_b = pair_trials(base.simulations, edited(base, renumber).simulations)
    assert [how for _, _, how in pairs] == ["seed"] * 4 and only_a == only_b == []
    assert all(a.seed == b.seed and a.task_id == b.task_id for a, b, _ in pairs)

    def reseed(results: Results) -> None:
        renumber(results)
        results.simulations[0].seed += 1

    pairs, only_a, only_b = pair_trials(base.simulations, edited(base, reseed).simulations)
    assert len(pairs) == 3 and only_a == [base.simulations[0].id] and len(only_b) == 1


def test_render_diff_lists_counts_causes_and_diffs(base: Results) -> None:
    other = edited(base, lambda r: fail(r.simulations[0]))
    text = render_diff(diff_runs(base, other))
    assert "settings: identical" in text
    assert "create_task    2/2 -> 1/2  *" in text
    assert "flipped trials: 1 of 4 paired (1 regressed, 0 improved)" in text
    assert "causes: no_divergence 1" in text and "first difference:" in text
