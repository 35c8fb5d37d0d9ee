"""pass^k and friends, as pure functions over simulation runs."""

from __future__ import annotations

from collections import OrderedDict
from math import comb

from pydantic import BaseModel

from tauproxy.data_model.result import SimulationRun, TerminationReason

SUCCESS_TOLERANCE = 1e-6
EXCLUDED_TERMINATIONS = frozenset({TerminationReason.INFRASTRUCTURE_ERROR})


def is_success(run: SimulationRun) -> bool:
    return run.reward_info is not None and abs(run.reward_info.reward - 1.0) <= SUCCESS_TOLERANCE


def pass_hat_k(trials: int, successes: int, k: int) -> float:
    """Unbiased pass^k for one task: the chance that k trials drawn without replacement all pass."""
    if k > trials:
        return float("nan")
    return comb(successes, k) / comb(trials, k)


class TaskCount(BaseModel):
    task_id: str
    successes: int
    trials: int


def counted_runs(runs: list[SimulationRun]) -> list[SimulationRun]:
    """Runs that count: infrastructure errors are excluded, as tau2-bench does."""
    return [run for run in runs if run.termination_reason not in EXCLUDED_TERMINATIONS]


def task_counts(runs: list[SimulationRun], task_order: list[str] | None = None) -> list[TaskCount]:
    grouped: OrderedDict[str, list[SimulationRun]] = OrderedDict((t, []) for t in task_order or [])
    for run in counted_runs(runs):
        grouped.setdefault(run.task_id, []).append(run)
    return [
        TaskCount(task_id=task_id, successes=sum(is_success(r) for r in group), trials=len(group))
        for task_id, group in grouped.items()
        if group
    ]


def pass_hat_ks(counts: list[TaskCount]) -> dict[int, float]:
    """pass^k for k = 1..max_k, where max_k is the fewest trials any task has."""
    if not counts:
        return {}
    max_k = min(c.trials for c in counts)
    return {
        k: sum(pass_hat_k(c.trials, c.successes, k) for c in counts) / len(counts) for k in range(1, max_k + 1)
    }


def average_reward(runs: list[SimulationRun]) -> float:
    counted = counted_runs(runs)
    if not counted:
        return float("nan")
    return sum(r.reward_info.reward if r.reward_info else 0.0 for r in counted) / len(counted)
