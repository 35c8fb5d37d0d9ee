"""The retail domain pack: it loads, its DB and tasks are deterministic, and every task is solvable as
written (golden actions run cleanly and within policy), while refusals are flagged and silence fails."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.message import Message, ToolCall
from tauproxy.data_model.result import TerminationReason
from tauproxy.data_model.task import RewardType, Task
from tauproxy.domain.pack import DomainPack, load_pack
from tauproxy.engine.environment import Environment
from tauproxy.engine.evaluator import evaluate
from tauproxy_domains.retail import taskgen, tools
from tauproxy_domains.retail.db import build_db

PACK_DIR = Path(taskgen.__file__).parent
SHIPPED = json.loads((PACK_DIR / "tasks.json").read_text(encoding="utf-8"))
SEED7 = taskgen.generate_tasks(7, 60)
_MONEY = re.compile(r"^\$(\d+\.\d{2})$")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@pytest.fixture(scope="module")
def pack() -> DomainPack:
    return load_pack("retail")


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _call(index: int, name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=f"call_{index}", name=name, arguments=arguments)


def _is_refusal(task: dict[str, Any]) -> bool:
    return bool(task["description"].get("forbidden_actions"))


def test_pack_loads_with_expected_tools(pack: DomainPack) -> None:
    kinds = {f.name: f.mark.kind for f in pack.agent_tools()}
    writes = {
        "cancel_pending_order",
        "modify_pending_order_items",
        "modify_pending_order_address",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
    }
    assert {name for name, kind in kinds.items() if kind == "write"} == writes
    assert len(kinds) == 15
    assert "2025-05-20" in pack.policy and "30 days" in pack.policy
    assert len(pack.tasks) == len(SHIPPED)


def test_build_db_is_deterministic_per_seed() -> None:
    first = _dumps(build_db(0))
    assert first == _dumps(build_db(0))
    assert first != _dumps(build_db(1))


def test_generate_tasks_is_deterministic_per_seed() -> None:
    assert _dumps(taskgen.generate_tasks(3, 20)) == _dumps(taskgen.generate_tasks(3, 20))
    assert _dumps(taskgen.generate_tasks(3, 20)) != _dumps(taskgen.generate_tasks(4, 20))


def test_shipped_tasks_are_the_seed_0_set() -> None:
    text = json.dumps(taskgen.generate_tasks(0, 60), indent=1, sort_keys=True) + "\n"
    assert (PACK_DIR / "tasks.json").read_text(encoding="utf-8") == text
    assert len(SHIPPED) >= 50
    assert sum(_is_refusal(task) for task in SHIPPED) >= 8
    assert sum(len(task["description"]["intents"]) > 1 for task in SHIPPED) >= 8
    for task in SHIPPED:
        assert task["id"].startswith("retail_0_")
        Task.model_validate(task)


def _communicated(info: str, outputs: str, policy: str) -> bool:
    """A figure the agent can only know from a tool output, or a fixed figure of the policy."""
    if info.lower() in outputs.lower() or info.lower() in policy.lower():
        return True
    money = _MONEY.match(info)
    if money is None:
        return False
    wanted = round(float(money.group(1)) * 100)
    return any(abs(round(float(n) * 100)) == wanted for n in _NUMBER.findall(outputs))


def _check_task(pack: DomainPack, raw: dict[str, Any]) -> None:
    task = Task.model_validate(raw)
    criteria = task.evaluation_criteria
    assert criteria is not None
    env = Environment(pack, task)
    start_hash = env.state_hash()
    outputs = []
    for index, action in enumerate(task.golden_actions()):
        problem = tools.policy_check(env.state, action.name, action.arguments)
        assert problem is None, f"{task.id}: golden {action.name} breaks policy: {problem}"
        message = env.execute(_call(index, action.name, action.arguments), "assistant")
        assert not message.error, f"{task.id}: golden {action.name} failed: {message.content}"
        outputs.append(message.content or "")
    golden_hash = env.state_hash()

    joined = "\n".join(outputs)
    for info in criteria.communicate_info or []:
        assert _communicated(info, joined, pack.policy), f"{task.id}: {info!r} appears in no output"

    forbidden = raw["description"].get("forbidden_actions", [])
    for index, call in enumerate(forbidden):
        assert tools.policy_check(env.state, call["name"], call["arguments"]), f"{task.id}: not flagged"
        message = env.execute(_call(100 + index, call["name"], call["arguments"]), "assistant")
        assert not message.error, f"{task.id}: forbidden {call['name']} fails at the tool: {message.content}"
    if forbidden:
        assert env.state_hash() != golden_hash
        assert criteria.communicate_info, f"{task.id}: a refusal must require saying why"

    writes_change = golden_hash != start_hash
    reads_graded = RewardType.ACTION in criteria.reward_basis and any(
        not env.is_write(action.name) for action in task.golden_actions()
    )
    assert writes_change or criteria.communicate_info or reads_graded, f"{task.id}: silence would pass"


@pytest.mark.parametrize("raw", SHIPPED, ids=[task["id"] for task in SHIPPED])
def test_shipped_task_is_solvable_and_strict(pack: DomainPack, raw: dict[str, Any]) -> None:
    _check_task(pack, raw)


@pytest.mark.parametrize("raw", SEED7, ids=[task["id"] for task in SEED7])
def test_seed7_task_is_solvable_and_strict(pack: DomainPack, raw: dict[str, Any]) -> None:
    _check_task(pack, raw)


def _conversation(pack: DomainPack, task: Task, calls: list[ToolCall], final: str) -> list[Message]:
    """A scripted agent: one tool call per turn, then one closing message."""
    env = Environment(pack, task)
    messages = [Message(role="user", content=task.user_scenario.request_text())]
    for call in calls:
        messages.append(Message(role="assistant", tool_calls=[call]))
        messages.append(env.execute(call, "assistant"))
    messages.append(Message(role="assistant", content=final))
    return messages


def _reward(pack: DomainPack, task: Task, messages: list[Message]) -> float:
    return evaluate(pack, task, messages, TerminationReason.AGENT_STOP, judge=lambda _m, _a: []).reward


def test_oracle_passes_silence_and_forbidden_writes_fail(pack: DomainPack) -> None:
    silent_passes = 0
    for task in pack.tasks:
        criteria = task.evaluation_criteria
        assert criteria is not None
        golden = [_call(i, a.name, a.arguments) for i, a in enumerate(task.golden_actions())]
        said = "Done. " + " ".join(criteria.communicate_info or [])
        assert _reward(pack, task, _conversation(pack, task, golden, said)) == 1.0, task.id
        silent_passes += _reward(pack, task, _conversation(pack, task, [], "How can I help?")) == 1.0
        assert isinstance(task.description, dict)
        forbidden = task.description.get("forbidden_actions", [])
        if forbidden:
            extra = [_call(100 + i, c["name"], c["arguments"]) for i, c in enumerate(forbidden)]
            assert _reward(pack, task, _conversation(pack, task, golden + extra, said)) == 0.0, task.id
    assert silent_passes <= len(pack.tasks) // 10


def test_every_intent_appears_in_the_shipped_set() -> None:
    intents = {intent for task in SHIPPED for intent in task["description"]["intents"]}
    assert intents == set(taskgen.BUILDERS)
    auths = {task["description"]["authentication"] for task in SHIPPED}
    assert auths == {"email", "name_zip"}


def test_calculate_is_arithmetic_only(pack: DomainPack) -> None:
    env = Environment(pack)
    assert env.execute(_call(0, "calculate", {"expression": "(49.99 + 12.5) * 2"}), "assistant").content == "124.98"
    for bad in ("__import__('os').getcwd()", "2 ** 1000", "1 / 0", "x + 1", "print(1)"):
        assert env.execute(_call(1, "calculate", {"expression": bad}), "assistant").error, bad


def test_name_zip_lookup_follows_an_address_change(pack: DomainPack) -> None:
    env = Environment(pack)
    user_id = next(iter(pack.base_state.ids("users")))
    user = env.state.users[user_id]
    first, last = user["name"]["first_name"], user["name"]["last_name"]
    old_zip = user["address"]["zip"]
    address = {"address1": "1 Test Road", "address2": "", "city": "Boise", "state": "ID", "country": "USA"}
    new_zip = "83799" if old_zip != "83799" else "83798"
    moved = env.execute(
        _call(0, "modify_user_address", {"user_id": user_id, **address, "zip_code": new_zip}), "assistant"
    )
    assert not moved.error
    lookup = {"first_name": first, "last_name": last, "zip_code": new_zip}
    assert env.execute(_call(1, "find_user_id_by_name_zip", lookup), "assistant").content == user_id
    old = env.execute(_call(2, "find_user_id_by_name_zip", {**lookup, "zip_code": old_zip}), "assistant")
    assert old.error


def test_tools_reject_impossible_input(pack: DomainPack) -> None:
    env = Environment(pack)
    processed = next(oid for oid in pack.base_state.ids("orders") if env.state.orders[oid]["status"] == "processed")
    item = env.state.orders[processed]["items"][0]["item_id"]
    method = next(iter(env.state.users[env.state.orders[processed]["user_id"]]["payment_methods"]))
    args = {"order_id": processed, "item_ids": [item], "payment_method_id": method}
    assert env.execute(_call(0, "return_delivered_order_items", args), "assistant").error
    assert env.execute(_call(1, "get_order_details", {"order_id": "ord_12"}), "assistant").error
