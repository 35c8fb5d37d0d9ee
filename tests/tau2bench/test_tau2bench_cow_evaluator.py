"""τ²'s own evaluator grades a trajectory alike on our copy-on-write environments and on its own fresh
ones (a file of its own so that, under `--dist loadfile`, it can run beside the every-task fork test)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("tau2")

import cow_support as cow
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.evaluator.evaluator_env import EnvironmentEvaluator


def _trajectory(domain: str, task: Any, actions: list[Any]) -> list[Any]:
    """Messages carrying `actions` as tool calls, with the tool results of a fresh τ² environment."""
    environments = cow.fresh_environments(domain)
    env = environments()
    state = task.initial_state
    env.set_state(
        initialization_data=state.initialization_data if state is not None else None,
        initialization_actions=state.initialization_actions if state is not None else None,
        message_history=[],
    )
    messages: list[Any] = []
    for i, action in enumerate(actions):
        call = ToolCall(id=f"call_{i}", name=action.name, arguments=action.arguments, requestor=action.requestor)
        if action.requestor == "user":
            messages.append(UserMessage(role="user", tool_calls=[call]))
        else:
            messages.append(AssistantMessage(role="assistant", tool_calls=[call]))
        messages.append(env.get_response(call))
    environments.release(env)
    return messages


def _reward(constructor: Any, task: Any, trajectory: list[Any]) -> Any:
    try:
        info = EnvironmentEvaluator.calculate_reward(
            environment_constructor=constructor, task=task, full_trajectory=trajectory
        )
    except Exception as error:  # τ²'s own evaluator raises for some tasks: the factory must raise alike
        return ("raised", type(error).__name__, str(error))
    return info.model_dump()


@pytest.mark.slow
@pytest.mark.parametrize("domain", cow.DOMAINS)
def test_evaluator_gives_the_same_reward_with_the_factory(domain: str) -> None:
    factory = cow.factory(domain)
    fresh = cow.fresh_environments(domain)  # τ²'s own environments, each as a fresh load gives it
    tasks = cow.tasks(domain)
    if domain in ("airline", "retail"):
        tasks = tasks[::6]  # τ²'s constructor loads the DB twice per call: a spread sample
    rewards: list[float] = []
    for task in tasks:
        gold = cow.gold(task)
        for actions in (gold, gold[:-1]):
            trajectory = _trajectory(domain, task, actions)
            ours = _reward(factory, task, trajectory)
            theirs = _reward(fresh, task, trajectory)
            fresh.release_all()
            assert ours == theirs, task.id
            if isinstance(theirs, dict):
                rewards.append(theirs["reward"])
    assert factory.base_unchanged()
    assert 1.0 in rewards and 0.0 in rewards  # both successes and failures were compared
