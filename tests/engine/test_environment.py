from __future__ import annotations

import hashlib
import json

from tauproxy.data_model.message import ToolCall
from tauproxy.domain.pack import load_pack
from tauproxy.engine.environment import Environment


def test_tool_that_raises_becomes_error_message_and_state_is_untouched() -> None:
    pack = load_pack("mock")
    env = Environment(pack)
    before = env.state_hash()
    message = env.execute(ToolCall(id="c1", name="complete_task", arguments={"task_id": "task_999"}), "assistant")
    assert message.role == "tool" and message.error and "task_999 not found" in (message.content or "")
    bad_args = env.execute(ToolCall(id="c2", name="complete_task", arguments={"task_id": 5}), "assistant")
    assert bad_args.error and "invalid arguments" in (bad_args.content or "")
    unknown = env.execute(ToolCall(id="c3", name="rm_rf", arguments={}), "assistant")
    assert unknown.error and "not found" in (unknown.content or "")
    assert env.state_hash() == before


def test_user_tools_are_not_agent_tools() -> None:
    env = Environment(load_pack("mock"))
    message = env.execute(ToolCall(id="c1", name="set_sync", arguments={"enabled": True}), "assistant")
    assert message.error
    ok = env.execute(ToolCall(id="c2", name="set_sync", arguments={"enabled": True}, requestor="user"), "user")
    assert not ok.error and json.loads(ok.content or "{}")["sync_enabled"] is True


def test_state_hash_is_sha256_of_sorted_json_and_fresh_state_is_isolated() -> None:
    pack = load_pack("mock")
    env = Environment(pack)
    env.execute(ToolCall(id="c", name="complete_task", arguments={"task_id": "task_2"}), "assistant")
    expected = hashlib.sha256(json.dumps(env.state.to_dict(), sort_keys=True).encode()).hexdigest()
    assert env.state_hash() == expected
    fresh = Environment(pack)
    assert fresh.state.todos["task_2"]["status"] == "open"
    assert fresh.state_hash() != env.state_hash()
