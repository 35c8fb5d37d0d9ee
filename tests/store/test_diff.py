"""Replay-miss explanations: the nearest recorded call and what differs from it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from recordings import recording

from tauproxy.data_model.call import CallRole
from tauproxy.store.cassette import Cassette
from tauproxy.store.diff import describe_request_difference
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.miss import miss_message, nearest_entry

TOOL = {"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}


def conversation(turns: int, model: str = "gpt-4.1", temperature: float = 0.0) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a support agent."}]
    for turn in range(turns):
        messages.append({"role": "user", "content": f"question {turn}\nsecond line"})
        if turn < turns - 1:
            messages.append({"role": "assistant", "content": f"answer {turn}"})
    return {"model": model, "messages": messages, "temperature": temperature, "tools": [TOOL]}


def record(
    cassette: Cassette,
    request: dict[str, Any],
    *,
    task_id: str = "t1",
    trial: int = 0,
    call_index: int = 0,
    role: CallRole = "agent",
) -> CassetteEntry:
    reply = {"role": "assistant", "content": "ok"}
    response = {"id": "r", "model": request["model"], "choices": [{"message": reply}]}
    return cassette.record(recording(request, response, task_id=task_id, trial=trial, role=role, call_index=call_index))


def recorded_trial(directory: Path) -> Cassette:
    cassette = Cassette.open(directory)
    for index in range(3):
        record(cassette, conversation(index + 1), call_index=index)
    return cassette


def test_miss_names_the_call_and_the_differing_user_message(tmp_path: Path) -> None:
    cassette = recorded_trial(tmp_path / "c")
    wanted = conversation(2)
    wanted["messages"][3]["content"] = "question 1\nsecond line, reworded"

    text = miss_message(cassette, wanted, task_id="t1", trial=0, role="agent", call_index=1)

    assert text.startswith(f"replay miss: task t1, trial 0, call #1 (agent) was never recorded in {tmp_path / 'c'}")
    assert "nearest recorded call: key" in text and "task t1, trial 0, call #1 (agent)" in text
    assert "message #3 (user) differs" in text
    assert "-second line" in text and "+second line, reworded" in text
    assert "holds no call" not in text


def test_miss_names_the_changed_temperature(tmp_path: Path) -> None:
    cassette = recorded_trial(tmp_path / "c")
    text = miss_message(cassette, conversation(3, temperature=0.7), task_id="t1", trial=0, role="agent", call_index=2)
    assert "param temperature changed: 0.0 -> 0.7" in text
    assert "message #" not in text


def test_prefix_conversation_is_described_as_such() -> None:
    recorded, wanted = conversation(2), conversation(3)
    assert describe_request_difference(wanted, recorded) == (
        "recorded request has 4 messages, this one has 6; first 4 equal"
    )


def test_model_tools_and_params_changes_are_listed() -> None:
    recorded = conversation(1) | {"seed": 1, "top_p": 0.9}
    wanted = conversation(1, model="gpt-4.1-mini") | {"seed": 2, "max_tokens": 50}
    other = {"type": "function", "function": {"name": "cancel_order", "parameters": {}}}
    changed = copy.deepcopy(TOOL)
    changed["function"]["description"] = "Look up an order."
    wanted["tools"] = [changed, other]
    lines = describe_request_difference(wanted, recorded).splitlines()
    assert lines == [
        "model changed: gpt-4.1 -> gpt-4.1-mini",
        "param max_tokens added: 50",
        "param seed changed: 1 -> 2",
        "param top_p removed (was 0.9)",
        "tool cancel_order added",
        "tool get_order changed",
    ]


def test_tool_call_difference_shows_name_and_arguments() -> None:
    def with_call(arguments: str) -> dict[str, Any]:
        request = conversation(1)
        call = {"id": "call_1", "type": "function", "function": {"name": "get_order", "arguments": arguments}}
        request["messages"].append({"role": "assistant", "content": None, "tool_calls": [call]})
        return request

    text = describe_request_difference(with_call('{"id": "2"}'), with_call('{"id": "1"}'))
    assert "message #2 (assistant) differs" in text
    assert '-tool call call_1: get_order({"id":"1"})' in text
    assert '+tool call call_1: get_order({"id":"2"})' in text


def test_long_content_is_truncated_and_keeps_the_difference_in_view() -> None:
    recorded, wanted = conversation(1), conversation(1)
    recorded["messages"][1]["content"] = "x" * 5000 + "OLD" + "y" * 5000
    wanted["messages"][1]["content"] = "x" * 5000 + "NEW" + "y" * 5000
    wanted["messages"][0]["content"] = "\n".join(f"line {i}" for i in range(200))
    text = describe_request_difference(wanted, recorded)
    assert len(text.splitlines()) <= 40
    assert max(len(line) for line in text.splitlines()) < 200
    assert "message #0 (system) differs" in text


def test_long_single_line_keeps_the_difference_in_view() -> None:
    recorded, wanted = conversation(1), conversation(1)
    recorded["messages"][1]["content"] = "x" * 5000 + "OLD" + "y" * 5000
    wanted["messages"][1]["content"] = "x" * 5000 + "NEW" + "y" * 5000
    text = describe_request_difference(wanted, recorded)
    assert "OLD" in text and "NEW" in text
    assert max(len(line) for line in text.splitlines()) < 200


def test_nearest_prefers_same_scope_and_call_index(tmp_path: Path) -> None:
    cassette = recorded_trial(tmp_path / "c")
    record(cassette, conversation(2), task_id="t2", call_index=1)
    nearest = nearest_entry(cassette, conversation(2) | {"temperature": 1.0}, "t1", 0, "agent", 1)
    assert nearest is not None and (nearest.task_id, nearest.call_index) == ("t1", 1)


def test_the_same_request_recorded_as_another_sample_says_so(tmp_path: Path) -> None:
    """Not "never recorded": the request is there, under another scope, seed or occurrence."""
    cassette = recorded_trial(tmp_path / "c")
    text = miss_message(cassette, conversation(2), task_id="t9", trial=3, role="agent", call_index=7, occurrence=1)
    assert "never recorded" not in text
    assert "this request is recorded" in text and "not as this sample" in text and "occurrence 1" in text
    assert "recorded as: task t1 trial 0 occurrence 0" in text


def test_nearest_is_found_by_content_not_by_call_index(tmp_path: Path) -> None:
    """Under serve the call index counts the server's calls: the longest shared prefix wins."""
    cassette = recorded_trial(tmp_path / "c")
    wanted = conversation(2) | {"temperature": 1.0}
    nearest = nearest_entry(cassette, wanted, "serve", 0, "agent", 40)
    assert nearest is not None and cassette.message_count(nearest) == len(conversation(2)["messages"])


def test_no_call_for_the_trial_falls_back_to_another_scope(tmp_path: Path) -> None:
    cassette = recorded_trial(tmp_path / "c")
    wanted = conversation(2) | {"temperature": 0.9}
    text = miss_message(cassette, wanted, task_id="t9", trial=3, role="agent", call_index=1)
    assert "replay miss: task t9, trial 3, call #1 (agent)" in text
    assert "the cassette holds no call for this task/trial" in text
    assert "nearest recorded call: key" in text and "task t1, trial 0" in text


def test_empty_cassette_has_no_nearest(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    assert nearest_entry(cassette, conversation(1), "t1", 0, "agent", 0) is None
    text = miss_message(cassette, conversation(1), task_id="t1", trial=0, role="user", call_index=0)
    assert text.splitlines()[1] == "the cassette holds no call for this task/trial"
    assert "nearest" not in text


def test_identical_requests_say_the_sample_differs() -> None:
    assert "identical" in describe_request_difference(conversation(1), conversation(1))
