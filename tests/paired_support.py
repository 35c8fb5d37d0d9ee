"""Results built from rewards alone (no engine): for the paired-statistics tests."""

from __future__ import annotations

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, Results, RewardInfo, RunInfo, SimulationRun
from tauproxy.domain.pack import load_pack


def results_of(
    rewards: dict[str, list[float]], agent: str = "agent-model", seed0: int = 100, cost: float | None = 0.0
) -> Results:
    """One task per key, one trial per reward; trial i has seed seed0 + i (same seed0: same trials)."""
    template = load_pack("mock").tasks[0]
    tasks = [template.model_copy(update={"id": task_id}) for task_id in rewards]
    runs = [
        SimulationRun(
            id=f"{task_id}:{trial}",
            task_id=task_id,
            trial=trial,
            seed=seed0 + trial,
            termination_reason="user_stop",
            messages=[Message(role="assistant", content="ok")],
            reward_info=RewardInfo(reward=reward),
            agent_cost=cost,
            user_cost=0.0,
            judge_cost=0.0,
        )
        for task_id, values in rewards.items()
        for trial, reward in enumerate(values)
    ]
    trials = max(len(values) for values in rewards.values())
    info = RunInfo(
        tauproxy_version="0",
        domain="mock",
        domain_sha256="x" * 64,
        num_trials=trials,
        seed=1,
        trial_seeds=[seed0 + i for i in range(trials)],
        max_steps=10,
        max_errors=3,
        agent_info=ModelInfo(llm=agent),
        user_info=ModelInfo(llm="user-model"),
        judge_info=ModelInfo(llm="judge-model"),
    )
    return Results(timestamp="t", info=info, tasks=tasks, simulations=runs)
