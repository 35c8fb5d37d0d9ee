"""Simulated agents for the adaptive loop: each trial of task t passes with probability p[t], drawn
from its own (task, trial) seed, so a rerun of the same plan gives the same trials (as a replay)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, Results, RewardInfo, RunInfo, SimulationRun
from tauproxy.data_model.task import Task, UserScenario
from tauproxy.workflows.adaptive import SourceOutcome

_MESSAGE = [Message(role="assistant", content="ok")]


def trial_of(task_id: str, trial: int, passed: bool, seed0: int, cost: float = 0.0) -> SimulationRun:
    return SimulationRun(
        id=f"{task_id}:{trial}",
        task_id=task_id,
        trial=trial,
        seed=seed0 + trial,
        termination_reason="user_stop",
        messages=_MESSAGE,
        reward_info=RewardInfo(reward=float(passed)),
        agent_cost=cost,
        user_cost=0.0,
        judge_cost=0.0,
    )


def results_of(
    outcomes: dict[str, list[bool]], agent: str, seed0: int, cost: float = 0.0, runs: list[SimulationRun] | None = None
) -> Results:
    tasks = [Task(id=task_id, user_scenario=UserScenario(instructions="x")) for task_id in outcomes]
    if runs is None:
        runs = [
            trial_of(task_id, j, passed, seed0, cost)
            for task_id, trials in outcomes.items()
            for j, passed in enumerate(trials)
        ]
    trials = max(len(v) for v in outcomes.values())
    info = RunInfo(
        tauproxy_version="sim",
        domain="sim",
        domain_sha256="0" * 64,
        num_trials=trials,
        seed=seed0,
        trial_seeds=[seed0 + j for j in range(trials)],
        max_steps=1,
        max_errors=1,
        agent_info=ModelInfo(llm=agent),
        user_info=ModelInfo(llm="u"),
        judge_info=ModelInfo(llm="j"),
    )
    return Results(info=info, tasks=tasks, simulations=runs)


MAX_TRIALS = 1000


def draws(task_id: str, seed: int) -> np.ndarray:
    """The task's uniform draws, trial by trial: trial j passes when draws[j] < p."""
    return np.random.default_rng([seed, zlib.crc32(task_id.encode())]).random(MAX_TRIALS)


class BernoulliAgent:
    """A TrialSource: counts the trials it is asked to run (`ran`), like a live run would pay for them."""

    def __init__(self, p: Mapping[str, float], seed: int, cost: float = 0.0) -> None:
        self.p, self.seed, self.cost = dict(p), seed, cost
        self.done: dict[str, list[bool]] = {task: [] for task in p}
        self.runs: dict[str, list[SimulationRun]] = {task: [] for task in p}
        self._draws = {task: draws(task, seed) for task in p}
        self.ran = 0

    def run(self, plan: Mapping[str, int], budget: float | None) -> SourceOutcome:
        for task, n in plan.items():
            trials = self.done[task]
            while len(trials) < n:
                passed = bool(self._draws[task][len(trials)] < self.p[task])
                self.runs[task].append(trial_of(task, len(trials), passed, 50_000, self.cost))
                trials.append(passed)
                self.ran += 1
        runs = [run for task in self.p for run in self.runs[task]]
        return SourceOutcome(results_of(self.done, "candidate", 50_000, self.cost, runs))


def baseline_of(p: Mapping[str, float], trials: int, seed: int) -> Results:
    return results_of(
        {task: [bool(d < q) for d in draws(task, seed)[:trials]] for task, q in p.items()}, "baseline", 10_000
    )
