"""τ²-bench's reward for a trajectory: `evaluate_simulation` with EvaluationType.ALL, as `tau2 run` grades.

The three evaluators are τ²'s own classes (`EnvironmentEvaluator`, `ActionEvaluator`,
`CommunicateEvaluator`), called as `evaluate_simulation` calls them; only the environment
constructor differs: τ²'s builds a fresh environment from its data files (the airline DB loaded and
validated anew, about 0.25 s, twice per trial), ours forks one loaded copy (tau2bench/cow.py) and
compares databases by their change from it. `tau2.evaluator.evaluator` itself is not imported (its
NL judge imports litellm), so the combination below is its `ALL` branch, step for step; the
reward-equality tests re-grade every trajectory with τ²'s own `evaluate_simulation`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def grade(simulation: Any, task: Any, environment_constructor: Callable[..., Any], solo_mode: bool = False) -> Any:
    from tau2.data_model.simulation import RewardInfo, TerminationReason
    from tau2.data_model.tasks import RewardType
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    if simulation.termination_reason not in {TerminationReason.AGENT_STOP, TerminationReason.USER_STOP}:
        return RewardInfo(
            reward=0.0,
            reward_basis=None,
            info={
                "note": f"Simulation terminated prematurely. Termination reason: "
                f"{TerminationReason(simulation.termination_reason).value}"
            },
        )
    if task.evaluation_criteria is None:
        return RewardInfo(reward=1.0, reward_basis=None, info={"note": "No evaluation criteria"})
    env_info = EnvironmentEvaluator.calculate_reward(
        environment_constructor=environment_constructor,
        task=task,
        full_trajectory=simulation.messages,
        solo_mode=solo_mode,
    )
    action_info = ActionEvaluator.calculate_reward(task=task, full_trajectory=simulation.messages)
    communicate_info = CommunicateEvaluator.calculate_reward(task=task, full_trajectory=simulation.messages)
    basis = set(task.evaluation_criteria.reward_basis)
    reward = 1.0
    breakdown: dict[Any, float] = {}
    for part, bases in ((env_info, {RewardType.DB, RewardType.ENV_ASSERTION}), (action_info, {RewardType.ACTION})):
        if basis & bases:
            breakdown.update(part.reward_breakdown or {})
            reward *= part.reward
    if basis & {RewardType.NL_ASSERTION}:
        raise ValueError("NL assertions are part of the reward basis, but they are not being evaluated.")
    if basis & {RewardType.COMMUNICATE}:
        breakdown.update(communicate_info.reward_breakdown or {})
        reward *= communicate_info.reward
    return RewardInfo(
        reward=reward,
        db_check=env_info.db_check,
        env_assertions=env_info.env_assertions,
        action_checks=action_info.action_checks,
        nl_assertions=None,
        communicate_checks=communicate_info.communicate_checks,
        reward_basis=task.evaluation_criteria.reward_basis,
        reward_breakdown=breakdown,
        info={"env": env_info.info, "nl": None, "communicate": communicate_info.info, "action": action_info.info},
    )
