"""One τ² simulation read as a trial's record (results/tau2_format.py `tau2_simulation`): validated in
one go, it is the record the file reader makes of it; what the file reader would drop or reject, it
drops or rejects alike."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from tauproxy.data_model.call import CallRecord, Usage
from tauproxy.results.tau2_format import tau2_simulation, tau2_to_results

INFO = {"environment_info": {"domain_name": "airline"}, "num_trials": 1}


def raw_simulation() -> dict[str, Any]:
    """A simulation in the shape `tau2 run` writes (fields we do not read included)."""
    return {
        "id": "0b7c",
        "task_id": "7",
        "trial": 0,
        "seed": 300,
        "start_time": "2026-01-01T00:00:00",
        "termination_reason": "user_stop",
        "duration": 1.5,
        "agent_cost": 0.25,
        "user_cost": 0.5,
        "skipped": False,
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help?", "tool_calls": None, "turn_idx": 0, "cost": 0.0},
            {"role": "user", "content": "Cancel my trip.", "turn_idx": 1, "usage": {"prompt_tokens": 9}},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "name": "get_reservation", "arguments": {"id": "R1"}, "requestor": "assistant"},
                    {"id": "c2", "name": "get_user", "arguments": '{"user_id": "u"}', "requestor": "assistant"},
                ],
                "turn_idx": 2,
            },
            {
                "role": "tool",
                "tool_messages": [
                    {"role": "tool", "id": "c1", "content": {"ok": True}, "requestor": "assistant", "turn_idx": 3},
                    {"role": "tool", "id": "c2", "content": "no such user", "error": True, "turn_idx": 4},
                ],
            },
        ],
        "reward_info": {
            "reward": 1.0,
            "db_check": {"db_match": True, "db_reward": 1.0},
            "reward_basis": ["DB"],
            "reward_breakdown": {"DB": 1.0},
            "info": {"note": "x"},
        },
    }


def file_reader_record(raw: dict[str, Any]) -> dict[str, Any]:
    """The record the file reader makes of `raw` (in a file with no model names), as JSON."""
    results = tau2_to_results({"info": INFO, "simulations": [copy.deepcopy(raw)]}, source="test")
    return results.simulations[0].model_dump(mode="json")


def test_a_simulation_is_the_record_the_file_reader_makes_of_it() -> None:
    raw = raw_simulation()
    record = tau2_simulation(copy.deepcopy(raw))
    assert record.model_dump(mode="json") == file_reader_record(raw)
    assert [m.role for m in record.messages] == ["assistant", "user", "assistant", "tool", "tool"]
    assert record.messages[2].tool_calls is not None
    assert record.messages[2].tool_calls[1].arguments == {"user_id": "u"}
    assert record.messages[3].content == '{"ok": true}' and record.messages[4].error


def test_the_callers_fields_replace_what_was_read() -> None:
    call = CallRecord(index=0, role="agent", model="m", key="k", sample_key="s", source="replay", usage=Usage())
    ours = {"id": "7:0", "seed": 5, "calls": [call], "agent_cost": None, "user_cost": 0.0, "duration": 0.25}
    record = tau2_simulation(raw_simulation(), ours)
    assert (record.id, record.seed, record.calls, record.agent_cost, record.user_cost, record.duration) == (
        "7:0",
        5,
        [call],
        None,
        0.0,
        0.25,
    )
    assert record.reward_info is not None and record.reward_info.reward == 1.0


def test_a_reward_with_fields_we_do_not_model_is_read_as_the_file_reader_reads_it() -> None:
    raw = raw_simulation()
    # Our actions forbid fields they do not have (a domain pack's typo fails loudly): this one has one.
    action = {"action_id": "a1", "name": "get_user", "arguments": {}, "newer_detail": "dropped by us"}
    raw["reward_info"]["action_checks"] = [{"action": action, "action_match": True, "action_reward": 1.0}]
    record = tau2_simulation(copy.deepcopy(raw), {"seed": 9})
    assert record.model_dump(mode="json") == {**file_reader_record(raw), "seed": 9}
    assert record.reward_info is not None and record.reward_info.action_checks is not None
    assert record.reward_info.action_checks[0].action.name == "get_user"


def test_a_message_that_does_not_validate_is_refused_as_the_file_reader_refuses_it() -> None:
    raw = raw_simulation()
    raw["messages"][1]["turn_idx"] = "first"
    with pytest.raises(ValidationError):
        file_reader_record(raw)
    with pytest.raises(ValidationError):
        tau2_simulation(raw)
