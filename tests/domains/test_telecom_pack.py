"""The telecom (dual-control) pack: it loads, DB and tasks are deterministic, every task is solvable as
written by both sides together, silence fails, each phone tool changes the phone state as documented,
and the oracle driving both sides passes every task end to end."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.message import ToolCall
from tauproxy.data_model.task import Task
from tauproxy.domain.pack import DomainPack, load_pack
from tauproxy.engine.environment import Environment
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.reports.metrics import is_success
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute
from tauproxy_domains.telecom import taskgen, tools
from tauproxy_domains.telecom.db import DEFAULT_APN, TOPUP_PRICES, abroad_location, build_db, default_device

PACK_DIR = Path(taskgen.__file__).parent
ORACLE, USER, SILENT = "scripted/oracle", "scripted/user", "scripted/silent"


@pytest.fixture(scope="module")
def pack() -> DomainPack:
    return load_pack("telecom")


@pytest.fixture(scope="module")
def seed5_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("telecom") / "tasks_seed5.json"
    path.write_text(taskgen.dumps(taskgen.generate_tasks(5, taskgen.DEFAULT_N)), encoding="utf-8")
    return path


def _tasks(pack: DomainPack, which: str, seed5_file: Path) -> list[Task]:
    return pack.tasks if which == "shipped" else load_pack("telecom", seed5_file).tasks


def _call(env: Environment, name: str, arguments: dict[str, Any], side: str) -> Any:
    message = env.execute(ToolCall(id="c", name=name, arguments=arguments, requestor=side), side)
    assert not message.error, f"{name}({arguments}) failed: {message.content}"
    return json.loads(message.content) if message.content and message.content[0] in "[{" else message.content


def _assertions_met(env: Environment, task: Task) -> list[bool]:
    criteria = task.evaluation_criteria
    assert criteria is not None and criteria.env_assertions
    return [env.run_function(a) == a.assert_value for a in criteria.env_assertions]


# --------------------------------------------------------------------------------------- pack and data


def test_pack_loads_with_both_tool_sets(pack: DomainPack) -> None:
    assert pack.is_dual_control and pack.user_policy
    agent = {f.name for f in pack.agent_tools()}
    user = {f.name for f in pack.user_tools()}
    assert {
        "get_customer_by_phone",
        "make_payment",
        "resume_line",
        "enable_roaming",
        "add_data_topup",
        "change_plan",
        "transfer_to_human_agents",
    } <= agent
    assert len(agent) >= 10 and len(user) >= 12
    assert len(pack.tasks) >= 40


def test_user_tool_names_never_contain_each_other(pack: DomainPack) -> None:
    # scripted/user acts on the first pending user action whose name appears in the agent's text.
    names = [f.name for f in pack.user_tools()]
    assert not [(a, b) for a in names for b in names if a != b and a in b]


def test_db_is_deterministic() -> None:
    # How long it takes is measured by bench/pack_speed.py.
    first = json.dumps(build_db(0), sort_keys=True)
    assert first == json.dumps(build_db(0), sort_keys=True)
    assert first != json.dumps(build_db(1), sort_keys=True)


def test_tasks_are_deterministic_and_shipped_file_is_seed_0() -> None:
    shipped = (PACK_DIR / "tasks.json").read_text(encoding="utf-8")
    assert taskgen.dumps(taskgen.generate_tasks(0, taskgen.DEFAULT_N)) == shipped
    assert taskgen.dumps(taskgen.generate_tasks(5, 20)) == taskgen.dumps(taskgen.generate_tasks(5, 20))
    assert taskgen.dumps(taskgen.generate_tasks(5, 20)) != taskgen.dumps(taskgen.generate_tasks(6, 20))


@pytest.mark.parametrize("which", ["shipped", "seed5"])
def test_task_composition(pack: DomainPack, seed5_file: Path, which: str) -> None:
    tasks = _tasks(pack, which, seed5_file)
    both_sides = 0
    seen: set[str] = set()
    for task in tasks:
        description = task.description
        assert isinstance(description, dict)
        assert 1 <= len(description["faults"]) <= 3 and description["user_faults"]
        both_sides += bool(description["agent_faults"])
        seen.update(description["faults"])
        user_side = [a for a in task.golden_actions() if a.requestor == "user"]
        assert any(pack.functions[a.name].is_write for a in user_side), task.id
    assert both_sides > len(tasks) / 2
    assert seen == set(taskgen.ATOM_ORDER)


# ----------------------------------------------------------------------------- every task, action by action


@pytest.mark.parametrize("which", ["shipped", "seed5"])
def test_golden_actions_solve_every_task_in_policy(pack: DomainPack, seed5_file: Path, which: str) -> None:
    for task in _tasks(pack, which, seed5_file):
        before = task.model_dump_json()
        env = Environment(pack, task)
        assert not all(_assertions_met(env, task)), f"{task.id}: nothing is broken, silence would pass"
        assert not tools.mobile_data_working(env.state), task.id
        for action in task.golden_actions():
            if action.requestor == "assistant":
                reason = tools.policy_check(env.state, action.name, action.arguments)
                assert reason is None, f"{task.id}: {action.name} breaks policy: {reason}"
            _call(env, action.name, action.arguments, action.requestor)
        assert all(_assertions_met(env, task)), f"{task.id}: golden actions leave it unsolved"
        # A trial must never edit the task's own initialization records (they are shared by every trial).
        assert task.model_dump_json() == before, task.id


def test_communicate_figures_are_in_golden_tool_outputs(pack: DomainPack) -> None:
    for task in pack.tasks:
        env = Environment(pack, task)
        outputs = []
        for action in task.golden_actions():
            call = ToolCall(id="c", name=action.name, arguments=action.arguments, requestor=action.requestor)
            outputs.append(env.execute(call, action.requestor).content or "")
        for info in task.evaluation_criteria.communicate_info or []:  # type: ignore[union-attr]
            assert any(info in text for text in outputs), f"{task.id}: {info} is never shown to the agent"


# -------------------------------------------------------------------------------------- the phone itself


def _device_env(pack: DomainPack, **device: Any) -> Environment:
    env = Environment(pack)
    base = default_device("L10001", "Pixel 8")
    env.state.update({"phone": {"device": {**base, **device}}})
    return env


# tool -> (arguments, starting device fields, expected device fields afterwards)
USER_TOOL_CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "toggle_airplane_mode": ({"on": False}, {"airplane_mode": True}, {"airplane_mode": False}),
    "toggle_mobile_data": ({"on": True}, {"mobile_data": False}, {"mobile_data": True}),
    "toggle_data_roaming": ({"on": True}, {"data_roaming": False}, {"data_roaming": True}),
    "set_network_mode": ({"mode": "4g_3g"}, {"network_mode": "2g_only"}, {"network_mode": "4g_3g"}),
    "reset_apn_settings": (
        {},
        {"apn": {"name": "wap.kestrel", "proxy": "10.0.0.172"}},
        {"apn": DEFAULT_APN, "apn_pending_restart": True},
    ),
    "reseat_sim_card": ({}, {"sim_seated": False}, {"sim_seated": True}),
    "reboot_device": (
        {},
        {"apn_pending_restart": True, "boot_count": 2},
        {"apn_pending_restart": False, "boot_count": 3},
    ),
    "toggle_wifi": ({"on": True}, {"wifi": False}, {"wifi": True}),
    "set_wifi_calling": ({"on": True}, {"wifi_calling": False}, {"wifi_calling": True}),
    "check_status_bar": ({}, {}, {}),
    "check_network_settings": ({}, {}, {}),
    "check_sim_status": ({}, {}, {}),
    "check_apn_settings": ({}, {}, {}),
    "check_data_usage": ({}, {}, {}),
    "run_speed_test": ({}, {}, {}),
}


def test_every_user_tool_is_covered(pack: DomainPack) -> None:
    assert set(USER_TOOL_CASES) == {f.name for f in pack.user_tools()}


@pytest.mark.parametrize("name", sorted(USER_TOOL_CASES))
def test_user_tool_changes_phone_state_deterministically(pack: DomainPack, name: str) -> None:
    arguments, start, expected = USER_TOOL_CASES[name]
    results = []
    for _ in range(2):
        env = _device_env(pack, **copy.deepcopy(start))
        before = copy.deepcopy(env.state.phone["device"])
        output = _call(env, name, arguments, "user")
        after = env.state.phone["device"]
        changed = {key: after[key] for key in after if after[key] != before[key]}
        assert changed == expected, f"{name}: changed {changed}, expected {expected}"
        assert pack.functions[name].is_write == bool(expected)
        results.append((json.dumps(output, sort_keys=True), env.state_hash()))
    assert results[0] == results[1]


def test_user_tools_are_refused_to_the_agent(pack: DomainPack) -> None:
    env = Environment(pack)
    message = env.execute(ToolCall(id="c", name="toggle_airplane_mode", arguments={"on": True}), "assistant")
    assert message.error and env.state.phone["device"]["airplane_mode"] is False


def test_speed_test_and_status_bar_follow_the_combined_state(pack: DomainPack) -> None:
    env = _device_env(pack, airplane_mode=True)
    assert _call(env, "run_speed_test", {}, "user")["download_mbps"] == 0.0
    assert _call(env, "check_status_bar", {}, "user")["network_type"] == "none"
    _call(env, "toggle_airplane_mode", {"on": False}, "user")
    assert _call(env, "check_status_bar", {}, "user")["network_type"] == "5G"
    assert _call(env, "run_speed_test", {}, "user")["download_mbps"] > 0
    _call(env, "set_network_mode", {"mode": "2g_only"}, "user")  # no 2G anywhere: no service
    assert not tools.service_working(env.state)
    _call(env, "set_network_mode", {"mode": "3g_only"}, "user")
    assert _call(env, "check_status_bar", {}, "user")["network_type"] == "3G"
    assert tools.mobile_data_working(env.state)


def test_line_suspension_kills_service(pack: DomainPack) -> None:
    env = _device_env(pack)
    assert tools.service_working(env.state)
    _call(env, "suspend_line", {"line_id": "L10001"}, "assistant")
    assert not tools.service_working(env.state)
    assert _call(env, "check_sim_status", {}, "user")["status"] == "blocked by carrier"
    _call(env, "resume_line", {"line_id": "L10001"}, "assistant")
    assert tools.service_working(env.state)


@pytest.mark.parametrize("line_roaming", [False, True])
@pytest.mark.parametrize("phone_roaming", [False, True])
def test_data_abroad_needs_roaming_on_both_sides(pack: DomainPack, line_roaming: bool, phone_roaming: bool) -> None:
    env = _device_env(pack, data_roaming=phone_roaming)
    line = copy.deepcopy(env.state.lines["L10001"])
    line.update(plan_id="plan_smart15", roaming_enabled=line_roaming, data_used_gb=1.0, topups=[])
    env.state.update({"lines": {"L10001": line}, "location": {"current": abroad_location("Japan")}})
    works = line_roaming and phone_roaming
    assert tools.service_working(env.state)
    assert tools.roaming_data_working(env.state) is works
    assert (_call(env, "run_speed_test", {}, "user")["download_mbps"] > 0) is works


def test_apn_reset_takes_effect_after_reboot(pack: DomainPack) -> None:
    env = _device_env(pack, apn={"name": "mms.kestrel", "proxy": ""})
    assert not tools.mobile_data_working(env.state)
    _call(env, "reset_apn_settings", {}, "user")
    assert not tools.mobile_data_working(env.state)
    _call(env, "reboot_device", {}, "user")
    assert tools.mobile_data_working(env.state)


# ------------------------------------------------------------------------------------------- the policy


def _why(env: Environment, name: str, **arguments: Any) -> str:
    return tools.policy_check(env.state, name, arguments) or ""


def test_policy_check_flags_the_written_rules(pack: DomainPack) -> None:
    task = next(t for t in pack.tasks if "line_suspended_unpaid" in t.description["faults"])  # type: ignore[index]
    env = Environment(pack, task)
    line_id = task.golden_actions()[2].arguments["line_id"]
    payment = next(a for a in task.golden_actions() if a.name == "make_payment")
    assert "overdue" in _why(env, "resume_line", line_id=line_id)
    assert _why(env, "add_data_topup", line_id=line_id, gb=1)
    assert _why(env, "change_plan", line_id=line_id, plan_id="plan_max100")
    _call(env, "make_payment", payment.arguments, "assistant")
    assert _why(env, "resume_line", line_id=line_id) == ""
    assert "suspended" in _why(env, "add_data_topup", line_id=line_id, gb=1)
    _call(env, "resume_line", {"line_id": line_id}, "assistant")
    while not _why(env, "add_data_topup", line_id=line_id, gb=1):
        _call(env, "add_data_topup", {"line_id": line_id, "gb": 1}, "assistant")
    assert len(env.state.lines[line_id]["topups"]) == 2
    assert "at most 2" in _why(env, "add_data_topup", line_id=line_id, gb=3)


def test_roaming_needs_a_plan_that_includes_it(pack: DomainPack) -> None:
    env = Environment(pack)
    lines = env.state.lines
    basic = next(lid for lid in sorted(lines.ids()) if lines[lid]["plan_id"] == "plan_basic5")
    assert "plan" in _why(env, "enable_roaming", line_id=basic)
    _call(env, "change_plan", {"line_id": basic, "plan_id": "plan_smart15"}, "assistant")
    assert _why(env, "enable_roaming", line_id=basic) == ""


def test_tools_reject_impossible_input(pack: DomainPack) -> None:
    env = Environment(pack)
    bad = [
        ("get_customer_by_phone", {"phone_number": "12"}),
        ("get_line_details", {"line_id": "L99999"}),
        ("add_data_topup", {"line_id": "L10001", "gb": 2}),
        ("resume_line", {"line_id": "L10001"}),
        ("make_payment", {"bill_id": "B100001", "payment_method_id": "pm_200001"}),  # already paid
        ("change_plan", {"line_id": "L10001", "plan_id": env.state.lines["L10001"]["plan_id"]}),
    ]
    for name, arguments in bad:
        assert env.execute(ToolCall(id="c", name=name, arguments=arguments), "assistant").error, name
    assert sorted(TOPUP_PRICES) == [1, 3, 5]


# ---------------------------------------------------------------------------------- end to end, both sides


@pytest.mark.parametrize("which", ["shipped", "seed5"])
def test_oracle_with_scripted_user_passes_every_task(seed5_file: Path, which: str) -> None:
    tasks_file = None if which == "shipped" else seed5_file
    outcome = execute(
        RunConfig(domain="telecom", agent=LLMConfig(model=ORACLE), user=LLMConfig(model=USER), tasks_file=tasks_file)
    )
    runs = outcome.results.simulations
    failed = [(r.task_id, r.termination_reason.value) for r in runs if not is_success(r)]
    assert len(runs) >= 40 and not failed


@pytest.mark.parametrize("which", ["shipped", "seed5"])
def test_silent_agent_passes_at_most_ten_percent(seed5_file: Path, which: str) -> None:
    tasks_file = None if which == "shipped" else seed5_file
    outcome = execute(
        RunConfig(domain="telecom", agent=LLMConfig(model=SILENT), user=LLMConfig(model=USER), tasks_file=tasks_file)
    )
    runs = outcome.results.simulations
    assert sum(is_success(r) for r in runs) <= 0.1 * len(runs)
