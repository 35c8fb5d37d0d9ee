"""The airline domain pack: it loads, its DB and tasks are deterministic, every task is solvable as written
(golden actions run cleanly and within policy), refusals are flagged by policy_check, and silence fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.message import Message, ToolCall
from tauproxy.data_model.result import TerminationReason
from tauproxy.data_model.task import RewardType, Task
from tauproxy.domain.pack import DomainPack, load_pack
from tauproxy.engine.environment import Environment
from tauproxy.engine.evaluator import evaluate
from tauproxy.errors import ToolExecutionError
from tauproxy_domains.airline import taskgen, tools
from tauproxy_domains.airline.db import BAG_FEE, build_db

PACK_DIR = Path(taskgen.__file__).parent
WRITE_TOOLS = {
    "book_reservation",
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_cabin",
    "update_reservation_baggages",
    "update_reservation_passengers",
    "send_certificate",
}


@pytest.fixture(scope="module")
def pack() -> DomainPack:
    return load_pack("airline")


@pytest.fixture(scope="module")
def shipped() -> list[dict[str, Any]]:
    return json.loads((PACK_DIR / "tasks.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def seed7() -> list[dict[str, Any]]:
    return taskgen.generate_tasks(7, 60)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _refusal(task: dict[str, Any]) -> bool:
    return bool(task["description"].get("forbidden_actions"))


def _run(env: Environment, index: int, name: str, arguments: dict[str, Any]) -> str:
    message = env.execute(ToolCall(id=f"call_{index}", name=name, arguments=arguments), "assistant")
    assert not message.error, f"{name}({arguments}) failed: {message.content}"
    return message.content or ""


# ---------------------------------------------------------------------------------------------- the pack


def test_pack_loads_with_the_expected_tools(pack: DomainPack, shipped: list[dict[str, Any]]) -> None:
    kinds = {f.name: f.mark.kind for f in pack.agent_tools()}
    assert {name for name, kind in kinds.items() if kind == "write"} == WRITE_TOOLS
    assert len(kinds) == 14
    assert kinds["transfer_to_human_agents"] == "read" and kinds["calculate"] == "read"
    assert "2027-03-10" in pack.policy and "$45" in pack.policy and "24 hours" in pack.policy
    assert len(pack.tasks) == len(shipped)


def test_build_db_is_deterministic_per_seed() -> None:
    # How long it takes is measured by bench/pack_speed.py.
    first = _dumps(build_db(0))
    assert first == _dumps(build_db(0))
    assert first != _dumps(build_db(1))


def test_db_has_the_promised_shape() -> None:
    db = build_db(0)
    assert len(db["users"]) >= 300 and len(db["reservations"]) >= 2000 and len(db["airports"]) >= 12
    for key, route in db["routes"].items():
        assert key == f"{route['origin']}-{route['destination']}"
        assert all(db["flights"][number]["origin"] == route["origin"] for number in route["flights"])
    for user in db["users"].values():
        assert all(db["reservations"][rid]["user_id"] == user["user_id"] for rid in user["reservations"])


# ---------------------------------------------------------------------------------------------- the tasks


def test_generate_tasks_is_deterministic_per_seed() -> None:
    db = build_db(0)
    first = _dumps(taskgen.generate_tasks(3, 16, db))
    assert first == _dumps(taskgen.generate_tasks(3, 16, db))
    assert first != _dumps(taskgen.generate_tasks(4, 16, db))


def test_shipped_tasks_are_the_seed_0_set(shipped: list[dict[str, Any]]) -> None:
    text = json.dumps(taskgen.generate_tasks(0, 60), indent=1, sort_keys=True) + "\n"
    assert (PACK_DIR / "tasks.json").read_text(encoding="utf-8") == text
    assert len(shipped) >= 50
    assert sum(_refusal(task) for task in shipped) >= 8
    assert sum(len(task["description"]["intents"]) > 1 for task in shipped) >= 8
    intents = {intent.split(":")[0] for task in shipped for intent in task["description"]["intents"]}
    assert intents == {
        "cancel",
        "change_flight",
        "change_cabin",
        "add_bags",
        "update_passengers",
        "compensation",
        "book",
        "baggage_question",
    }
    conditions = {intent.split(":")[-1] for task in shipped for intent in task["description"]["intents"]}
    assert {"lookup", "id_known"} <= conditions


def _each_task(shipped: list[dict[str, Any]], seed7: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [*shipped, *seed7]


def test_every_task_is_valid_for_the_task_model(shipped: list[dict[str, Any]], seed7: list[dict[str, Any]]) -> None:
    for task in _each_task(shipped, seed7):
        Task.model_validate(task)


def test_golden_actions_run_within_policy(
    pack: DomainPack, shipped: list[dict[str, Any]], seed7: list[dict[str, Any]]
) -> None:
    for raw in _each_task(shipped, seed7):
        task = Task.model_validate(raw)
        env = Environment(pack, task)
        for index, action in enumerate(task.golden_actions()):
            reason = tools.policy_check(env.state, action.name, action.arguments)
            assert reason is None, f"{task.id}: golden {action.name} breaks policy: {reason}"
            _run(env, index, action.name, action.arguments)


def test_forbidden_actions_run_but_are_flagged(
    pack: DomainPack, shipped: list[dict[str, Any]], seed7: list[dict[str, Any]]
) -> None:
    refusals = [raw for raw in _each_task(shipped, seed7) if _refusal(raw)]
    assert refusals
    for raw in refusals:
        task = Task.model_validate(raw)
        env = Environment(pack, task)
        for index, action in enumerate(task.golden_actions()):
            _run(env, index, action.name, action.arguments)
        golden_hash = env.state_hash()
        for index, forbidden in enumerate(raw["description"]["forbidden_actions"]):
            assert tools.policy_check(env.state, forbidden["name"], forbidden["arguments"]), task.id
            _run(env, 100 + index, forbidden["name"], forbidden["arguments"])
        assert env.state_hash() != golden_hash, task.id


def test_communicated_figures_come_from_tool_outputs_or_policy(
    pack: DomainPack, shipped: list[dict[str, Any]], seed7: list[dict[str, Any]]
) -> None:
    policy = pack.policy.lower()
    for raw in _each_task(shipped, seed7):
        task = Task.model_validate(raw)
        env = Environment(pack, task)
        outputs = " ".join(_run(env, i, a.name, a.arguments) for i, a in enumerate(task.golden_actions())).lower()
        for info in task.evaluation_criteria.communicate_info or []:
            needle = info.lower().removeprefix("$")
            assert needle in outputs or info.lower() in policy, f"{task.id}: {info!r} is not backed by any output"


def test_silence_fails_every_task(pack: DomainPack, shipped: list[dict[str, Any]], seed7: list[dict[str, Any]]) -> None:
    start_hash = pack.base_state.fresh().sha256()
    for raw in _each_task(shipped, seed7):
        task = Task.model_validate(raw)
        criteria = task.evaluation_criteria
        assert criteria is not None
        must_say = RewardType.COMMUNICATE in criteria.reward_basis and bool(criteria.communicate_info)
        must_read = RewardType.ACTION in criteria.reward_basis and any(
            not pack.functions[a.name].is_write for a in task.golden_actions()
        )
        if must_say or must_read:
            continue
        # Only then pay for hashing the whole DB: the golden writes must be what silence misses.
        env = Environment(pack, task)
        for index, action in enumerate(task.golden_actions()):
            _run(env, index, action.name, action.arguments)
        assert RewardType.DB in criteria.reward_basis, f"{task.id}: a silent agent would pass"
        assert env.state_hash() != start_hash, f"{task.id}: a silent agent would pass"


def test_refusals_need_more_than_a_lookup(shipped: list[dict[str, Any]]) -> None:
    """A refusal is proven by saying the rule or by a required lookup, since its golden run writes nothing."""
    for task in filter(_refusal, shipped):
        criteria = task["evaluation_criteria"]
        said = "COMMUNICATE" in criteria["reward_basis"] and criteria["communicate_info"]
        looked = "ACTION" in criteria["reward_basis"]
        assert said or looked, task["id"]


# ---------------------------------------------------------------------------------------------- rules


def _state(pack: DomainPack) -> Any:
    return pack.base_state.fresh()


def _find(pack: DomainPack, wanted: Any) -> dict[str, Any]:
    state = _state(pack)
    return next(r for r in state.reservations.values() if wanted(state, r))


def test_basic_economy_change_is_flagged_but_cabin_upgrade_is_not(pack: DomainPack) -> None:
    reservation = _find(
        pack,
        lambda s, r: r["cabin"] == "basic_economy" and r["status"] == "active" and not tools.flown_flights(r),
    )
    state = _state(pack)
    card = next(
        p for p, m in state.users[reservation["user_id"]]["payment_methods"].items() if m["source"] == "credit_card"
    )
    flights = [{"flight_number": f["flight_number"], "date": f["date"]} for f in reservation["flights"]]
    args = {"reservation_id": reservation["reservation_id"], "flights": flights, "payment_id": card}
    assert "basic economy" in (tools.policy_check(state, "update_reservation_flights", args) or "")
    upgrade = {"reservation_id": reservation["reservation_id"], "cabin": "economy", "payment_id": card}
    assert tools.policy_check(state, "update_reservation_cabin", upgrade) is None


def test_bag_fee_follows_the_tier_allowance(pack: DomainPack) -> None:
    reservation = _find(
        pack,
        lambda s, r: (
            r["status"] == "active"
            and not tools.flown_flights(r)
            and s.users[r["user_id"]]["membership"] == "regular"
            and r["cabin"] == "economy"
            and len(r["passengers"]) == 1
            and r["total_baggages"] == 0
        ),
    )
    state = _state(pack)
    card = next(
        p for p, m in state.users[reservation["user_id"]]["payment_methods"].items() if m["source"] == "credit_card"
    )
    base = {"reservation_id": reservation["reservation_id"], "payment_id": card}
    assert tools.policy_check(
        state, "update_reservation_baggages", {**base, "total_baggages": 3, "nonfree_baggages": 3}
    )
    good = {**base, "total_baggages": 3, "nonfree_baggages": 2}
    assert tools.policy_check(state, "update_reservation_baggages", good) is None
    output = pack.functions["update_reservation_baggages"].call(state, good)
    assert output["bag_fee"] == 2 * BAG_FEE


def test_booking_ids_are_deterministic(pack: DomainPack, shipped: list[dict[str, Any]]) -> None:
    raw = next(t for t in shipped if any(a["name"] == "book_reservation" for a in t["evaluation_criteria"]["actions"]))
    booking = next(a for a in raw["evaluation_criteria"]["actions"] if a["name"] == "book_reservation")
    ids = []
    for _ in range(2):
        state = _state(pack)
        ids.append(pack.functions["book_reservation"].call(state, booking["arguments"])["reservation_id"])
        assert state.meta["counters"]["bookings"] == 1
    assert ids[0] == ids[1]


def test_calculate_is_arithmetic_only(pack: DomainPack) -> None:
    calculate = pack.functions["calculate"]
    assert calculate.call(_state(pack), {"expression": "(320 + 45) * 2 - 10 / 4"}) == "727.5"
    for bad in ("__import__('os')", "2 ** 999999", "x + 1", "1 / 0", "[1, 2]", "(lambda: 1)()"):
        with pytest.raises(ToolExecutionError):
            calculate.call(_state(pack), {"expression": bad})


def test_tools_reject_impossible_input(pack: DomainPack) -> None:
    state = _state(pack)
    cancelled = next(r for r in state.reservations.values() if r["status"] == "cancelled")
    with pytest.raises(ToolExecutionError):
        pack.functions["cancel_reservation"].call(
            state, {"reservation_id": cancelled["reservation_id"], "reason": "other"}
        )
    with pytest.raises(ToolExecutionError):
        pack.functions["get_user_details"].call(state, {"user_id": "no_body_0000"})
    with pytest.raises(ToolExecutionError):
        pack.functions["get_reservation_details"].call(state, {"reservation_id": "not-an-id"})


def test_cancellation_windows(pack: DomainPack) -> None:
    def open_economy(s: Any, r: dict[str, Any]) -> bool:
        return (
            r["status"] == "active"
            and r["cabin"] == "economy"
            and not tools.flown_flights(r)
            and not tools.airline_cancelled(s, r)
        )

    recent = _find(pack, lambda s, r: open_economy(s, r) and tools.booked_within_24h(r))
    old_uninsured = _find(
        pack, lambda s, r: open_economy(s, r) and not tools.booked_within_24h(r) and r["insurance"] == "no"
    )
    old_insured = _find(
        pack, lambda s, r: open_economy(s, r) and not tools.booked_within_24h(r) and r["insurance"] == "yes"
    )
    state = _state(pack)

    def verdict(reservation: dict[str, Any], reason: str) -> str | None:
        args = {"reservation_id": reservation["reservation_id"], "reason": reason}
        return tools.policy_check(state, "cancel_reservation", args)

    assert verdict(recent, "change_of_plans") is None
    assert "24 hours" in (verdict(old_uninsured, "change_of_plans") or "")
    assert verdict(old_uninsured, "medical")
    assert verdict(old_insured, "change_of_plans")
    assert verdict(old_insured, "medical") is None


def test_booking_more_than_five_passengers_is_flagged(pack: DomainPack, shipped: list[dict[str, Any]]) -> None:
    raw = next(t for t in shipped if any(a["name"] == "book_reservation" for a in t["evaluation_criteria"]["actions"]))
    args = next(a for a in raw["evaluation_criteria"]["actions"] if a["name"] == "book_reservation")["arguments"]
    crowd = [{"first_name": "Ann", "last_name": "Lee", "dob": "1990-01-01"}] * 6
    assert "5 passengers" in (tools.policy_check(_state(pack), "book_reservation", {**args, "passengers": crowd}) or "")


# ---------------------------------------------------------------------------------------------- graded runs


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


def test_oracle_passes_silence_fails_and_violations_fail(pack: DomainPack) -> None:
    """The real grader on the shipped set: the oracle gets 1.0 everywhere, silence at most 10%, and a
    refusal task done anyway gets 0."""
    silent_passes = 0
    for task in pack.tasks:
        criteria = task.evaluation_criteria
        assert criteria is not None and isinstance(task.description, dict)
        golden = [ToolCall(id=f"g{i}", name=a.name, arguments=a.arguments) for i, a in enumerate(task.golden_actions())]
        said = "All set. " + " ".join(criteria.communicate_info or [])
        assert _reward(pack, task, _conversation(pack, task, golden, said)) == 1.0, task.id
        silent_passes += _reward(pack, task, _conversation(pack, task, [], "Sorry, I cannot help.")) == 1.0
        forbidden = task.description.get("forbidden_actions", [])
        if forbidden:
            extra = [ToolCall(id=f"f{i}", name=c["name"], arguments=c["arguments"]) for i, c in enumerate(forbidden)]
            assert _reward(pack, task, _conversation(pack, task, golden + extra, said)) == 0.0, task.id
    assert silent_passes <= len(pack.tasks) // 10
