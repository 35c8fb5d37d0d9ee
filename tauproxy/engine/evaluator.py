"""Grades a finished trajectory by program, the tau2 way: reward = product over the task's reward_basis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tauproxy.data_model.message import Message, ToolCall
from tauproxy.data_model.result import (
    ActionCheck,
    CommunicateCheck,
    DBCheck,
    EnvAssertionCheck,
    NLAssertionCheck,
    RewardInfo,
    TerminationReason,
)
from tauproxy.data_model.task import Action, RewardType, Task
from tauproxy.domain.pack import DomainPack
from tauproxy.domain.state import State
from tauproxy.engine.environment import Environment

NLJudge = Callable[[list[Message], list[str]], list[NLAssertionCheck]]


def evaluate(
    pack: DomainPack, task: Task, messages: list[Message], termination: TerminationReason, judge: NLJudge
) -> RewardInfo:
    criteria = task.evaluation_criteria
    if criteria is None:
        return RewardInfo(reward=1.0, info={"note": "task has no evaluation criteria"})
    if not termination.is_stop:
        return RewardInfo(
            reward=0.0, reward_basis=criteria.reward_basis, info={"note": f"run ended by {termination.value}"}
        )
    info = RewardInfo(reward=1.0, reward_basis=criteria.reward_basis, reward_breakdown={})
    breakdown: dict[RewardType, float] = {}
    final_env = replay_writes(pack, task, messages)
    for basis in criteria.reward_basis:
        if basis == RewardType.DB:
            # Equal states are exactly equal sha256 of sorted-key JSON; same_as decides it from the
            # records either side touched, without hashing the whole DB twice per trial.
            match = final_env.state.same_as(golden_state(pack, task))
            info.db_check = DBCheck(db_match=match, db_reward=float(match))
            breakdown[basis] = float(match)
        elif basis == RewardType.ENV_ASSERTION:
            info.env_assertions = check_env_assertions(final_env, task)
            breakdown[basis] = _product(c.reward for c in info.env_assertions)
        elif basis == RewardType.ACTION:
            info.action_checks = check_actions(task.golden_actions(), tool_calls(messages))
            breakdown[basis] = _product(c.action_reward for c in info.action_checks)
        elif basis == RewardType.COMMUNICATE:
            info.communicate_checks = check_communicate(criteria.communicate_info or [], messages)
            breakdown[basis] = _product(float(c.met) for c in info.communicate_checks)
        elif basis == RewardType.NL_ASSERTION:
            assertions = criteria.nl_assertions or []
            info.nl_assertions = judge(messages, assertions) if assertions else []
            breakdown[basis] = _product(float(c.met) for c in info.nl_assertions)
    info.reward_breakdown = breakdown
    info.reward = _product(breakdown.values())
    return info


def _product(values: Any) -> float:
    result = 1.0
    for value in values:
        result *= value
    return result


def tool_calls(messages: list[Message]) -> list[ToolCall]:
    return [call for m in messages if m.role in ("assistant", "user") for call in m.tool_calls or []]


def replay_writes(pack: DomainPack, task: Task, messages: list[Message]) -> Environment:
    """A fresh environment with the trajectory's state-changing calls replayed, in order."""
    env = Environment(pack, task)
    for call in tool_calls(messages):
        if env.is_write(call.name):
            env.execute(call, call.requestor)
    return env


def golden_environment(pack: DomainPack, task: Task) -> Environment:
    env = Environment(pack, task)
    for index, action in enumerate(task.golden_actions()):
        call = ToolCall(id=f"golden_{index}", name=action.name, arguments=action.arguments, requestor=action.requestor)
        env.execute(call, action.requestor)
    return env


def golden_state(pack: DomainPack, task: Task) -> State:
    cached = pack.golden_states.get(task.id)
    if cached is None:
        cached = golden_environment(pack, task).state
        pack.golden_states[task.id] = cached
    return cached


def check_env_assertions(env: Environment, task: Task) -> list[EnvAssertionCheck]:
    checks = []
    criteria = task.evaluation_criteria
    for assertion in (criteria.env_assertions or []) if criteria else []:
        try:
            value = env.run_function(assertion)
        except Exception as exc:  # an assertion that cannot run is an unmet assertion, with the reason
            value = f"error: {exc}"
        met = value == assertion.assert_value
        checks.append(EnvAssertionCheck(env_assertion=assertion, met=met, reward=float(met), actual_value=value))
    return checks


def action_matches(action: Action, call: ToolCall) -> bool:
    if call.name != action.name or call.requestor != action.requestor:
        return False
    names = action.arguments.keys() if action.compare_args is None else action.compare_args
    return all(call.arguments.get(name) == action.arguments.get(name) for name in names)


def check_actions(golden: list[Action], calls: list[ToolCall]) -> list[ActionCheck]:
    checks = []
    for action in golden:
        match = any(action_matches(action, call) for call in calls)
        checks.append(ActionCheck(action=action, action_match=match, action_reward=float(match)))
    return checks


def check_communicate(infos: list[str], messages: list[Message]) -> list[CommunicateCheck]:
    said = [(m.content or "").lower().replace(",", "") for m in messages if m.role == "assistant" and m.has_text()]
    checks = []
    for info in infos:
        needle = info.lower().replace(",", "")
        met = any(needle in text for text in said)
        checks.append(CommunicateCheck(info=info, met=met, justification="said" if met else "never said"))
    return checks
