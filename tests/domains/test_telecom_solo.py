"""The solo ablation on telecom: an agent that never guides the user fails dual control but passes solo,
and the coordination report puts the blame on coordination; an agent that does nothing is a reasoning
failure in both settings."""

from __future__ import annotations

import math

import pytest

from tauproxy.data_model.result import Results
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.reports.coordination import coordination_report, render_coordination
from tauproxy.reports.metrics import is_success
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute

SKIP_USER = "scripted/oracle?skip_user=1"


def _run(agent: str, *, solo: bool, num_trials: int = 1) -> Results:
    config = RunConfig(
        domain="telecom",
        agent=LLMConfig(model=agent),
        user=LLMConfig(model="scripted/user"),
        solo=solo,
        num_trials=num_trials,
    )
    return execute(config).results


@pytest.fixture(scope="module")
def skip_user_dual() -> Results:
    return _run(SKIP_USER, solo=False)


@pytest.fixture(scope="module")
def skip_user_solo() -> Results:
    return _run(SKIP_USER, solo=True)


def test_skipping_the_user_fails_dual_control(skip_user_dual: Results) -> None:
    runs = skip_user_dual.simulations
    assert len(runs) >= 40 and not any(is_success(r) for r in runs)
    # The agent did its own part: no user-side tool was ever called.
    assert not [c for r in runs for m in r.messages for c in m.tool_calls or [] if c.requestor == "user"]


def test_the_same_agent_passes_solo(skip_user_solo: Results) -> None:
    runs = skip_user_solo.simulations
    assert skip_user_solo.info.solo
    assert all(is_success(r) for r in runs), [r.task_id for r in runs if not is_success(r)]
    # Solo: the agent itself worked the phone, and those calls ran on the user's side.
    user_calls = [c for r in runs for m in r.messages for c in m.tool_calls or [] if c.requestor == "user"]
    assert user_calls and all(m.role == "assistant" for r in runs for m in r.messages if m.tool_calls)


def test_coordination_report_blames_coordination(skip_user_dual: Results, skip_user_solo: Results) -> None:
    report = coordination_report(skip_user_dual, skip_user_solo)
    totals = report["totals"]
    assert report["num_tasks"] == len(skip_user_dual.tasks)
    assert totals["dual_pass_rate"] == 0.0 and totals["solo_pass_rate"] == 1.0
    assert totals["coordination_error"] == 1.0 and totals["reasoning_error"] == 0.0
    assert totals["attribution_counts"] == {"coordination": report["num_tasks"]}
    assert {row["attribution"] for row in report["tasks"]} == {"coordination"}
    text = render_coordination(report)
    assert "coordination" in text and report["tasks"][0]["task_id"] in text
    assert text.splitlines()[0].startswith("Coordination report: telecom")


def test_doing_nothing_is_a_reasoning_failure() -> None:
    dual, solo = _run("scripted/silent", solo=False), _run("scripted/silent", solo=True)
    totals = coordination_report(dual, solo)["totals"]
    assert totals["reasoning_error"] == 1.0 and totals["coordination_error"] == 0.0
    assert totals["attribution_counts"] == {"reasoning": len(dual.tasks)}


def test_partial_rates_over_trials(skip_user_solo: Results) -> None:
    # Half the dual trials of every task pass: the gap to a perfect solo run is 0.5, all coordination.
    dual = _run("scripted/oracle", solo=False, num_trials=2)
    for run in dual.simulations:
        if run.trial == 1 and run.reward_info is not None:
            run.reward_info.reward = 0.0
    report = coordination_report(dual, skip_user_solo)
    row = report["tasks"][0]
    assert (row["dual_trials"], row["solo_trials"]) == (2, 1)
    assert math.isclose(row["coordination_error"], 0.5) and row["attribution"] == "coordination"
    assert math.isclose(report["totals"]["dual_pass_rate"], 0.5)


def test_mismatched_runs_are_refused(skip_user_dual: Results, skip_user_solo: Results) -> None:
    with pytest.raises(ValueError, match="solo"):
        coordination_report(skip_user_solo, skip_user_dual)
    only_some = skip_user_solo.model_copy(
        update={"simulations": skip_user_solo.simulations[:5], "tasks": skip_user_solo.tasks[:5]}
    )
    report = coordination_report(skip_user_dual, only_some)
    assert report["num_tasks"] == 5 and len(report["only_in_dual"]) == len(skip_user_dual.tasks) - 5
    assert "only in the dual run" in render_coordination(report)
