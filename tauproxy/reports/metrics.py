"""pass^k and friends, as pure functions over simulation runs."""

from __future__ import annotations

import sys
from collections import Counter, OrderedDict
from math import comb

from pydantic import BaseModel

from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.data_model.task import RewardType
from tauproxy.reports.numpy_draws import Pcg64, pairwise_sum, quantile_linear

SUCCESS_TOLERANCE = 1e-6
EXCLUDED_TERMINATIONS = frozenset({TerminationReason.INFRASTRUCTURE_ERROR})
# Draws a bootstrap makes in Python rather than with numpy (numpy_draws.py): up to here, drawing them
# costs less CPU than importing numpy (2000 resamples of 30 tasks: about 0.1 s against 0.14 s).
PYTHON_DRAWS_MAX = 60_000


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
    return {k: sum(pass_hat_k(c.trials, c.successes, k) for c in counts) / len(counts) for k in range(1, max_k + 1)}


def average_reward(runs: list[SimulationRun]) -> float:
    counted = counted_runs(runs)
    if not counted:
        return float("nan")
    return sum(r.reward_info.reward if r.reward_info else 0.0 for r in counted) / len(counted)


# Reward bases in the order reports list them (tau2's RewardType, grouped: state checks, then dialogue).
BASIS_ORDER: tuple[RewardType, ...] = (
    RewardType.DB,
    RewardType.ENV_ASSERTION,
    RewardType.ACTION,
    RewardType.COMMUNICATE,
    RewardType.NL_ASSERTION,
)


def bootstrap_pass_hat_k_ci(
    counts: list[TaskCount], n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> dict[int, tuple[float, float]]:
    """Percentile bootstrap interval of pass^k, resampling tasks with replacement.

    Tasks are the sampling unit (trials of one task are not independent draws of the benchmark), so
    each resample draws len(counts) tasks and averages their per-task pass^k. One index matrix
    serves every k, which keeps the intervals of different k consistent with each other. The draws
    are numpy's (`default_rng(seed).integers`); a small bootstrap makes them in Python instead
    (numpy_draws.py: the same numbers, without numpy's import).
    """
    if not counts:
        return {}
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    points = pass_hat_ks(counts)
    # per_task[k-1][i]: pass^k of task i.
    per_task = [[pass_hat_k(c.trials, c.successes, k) for c in counts] for k in points]
    tail = (1.0 - level) / 2.0
    small = n_boot * len(counts) <= PYTHON_DRAWS_MAX and "numpy" not in sys.modules
    bounds = (_python_bounds if small else _numpy_bounds)(per_task, n_boot, seed, tail)
    intervals: dict[int, tuple[float, float]] = {}
    for (k, point), (low, high) in zip(points.items(), bounds, strict=True):
        # A skewed bootstrap distribution can leave the estimate just outside the percentile
        # interval; widening to include it keeps "estimate [lo, hi]" readable and never narrower.
        intervals[k] = (min(low, point), max(high, point))
    return intervals


def _numpy_bounds(per_task: list[list[float]], n_boot: int, seed: int, tail: float) -> list[tuple[float, float]]:
    import numpy as np  # here, not at import: a small bootstrap or a report without one never loads it

    values = np.array(per_task, dtype=float)
    rng = np.random.default_rng(seed)
    # (n_boot, tasks): row b lists the tasks drawn, with replacement, for resample b.
    picks = rng.integers(0, values.shape[1], size=(n_boot, values.shape[1]))
    bounds: list[tuple[float, float]] = []
    for row in values:  # a loop over k (a few), never over resamples
        low, high = np.quantile(row[picks].mean(axis=1), [tail, 1.0 - tail])
        bounds.append((float(low), float(high)))
    return bounds


def _python_bounds(per_task: list[list[float]], n_boot: int, seed: int, tail: float) -> list[tuple[float, float]]:
    tasks = len(per_task[0])
    flat = Pcg64(seed).integers(tasks, n_boot * tasks)
    picks = [flat[start : start + tasks] for start in range(0, len(flat), tasks)]
    bounds: list[tuple[float, float]] = []
    for row in per_task:
        means = sorted(pairwise_sum([row[i] for i in pick]) / tasks for pick in picks)
        bounds.append((quantile_linear(means, tail), quantile_linear(means, 1.0 - tail)))
    return bounds


class BasisMean(BaseModel):
    """The mean reward of one basis, over the runs whose breakdown has it."""

    mean: float
    runs: int


def reward_breakdown(runs: list[SimulationRun]) -> dict[RewardType, BasisMean]:
    """Mean reward of each basis over the counted runs whose breakdown has it (tau2 omits unused ones).

    In BASIS_ORDER, then any other basis in the order first seen.
    """
    totals: dict[RewardType, list[float]] = {basis: [] for basis in BASIS_ORDER}
    for run in counted_runs(runs):
        breakdown = run.reward_info.reward_breakdown if run.reward_info else None
        for basis, value in (breakdown or {}).items():
            totals.setdefault(RewardType(basis), []).append(value)
    return {
        basis: BasisMean(mean=sum(values) / len(values), runs=len(values)) for basis, values in totals.items() if values
    }


class TerminationCounts(BaseModel):
    """Why runs ended; `excluded` holds the reasons kept out of pass^k (infrastructure errors)."""

    counted: dict[str, int]
    excluded: dict[str, int]


def termination_counts(runs: list[SimulationRun]) -> TerminationCounts:
    counted: Counter[str] = Counter()
    excluded: Counter[str] = Counter()
    for run in runs:
        side = excluded if run.termination_reason in EXCLUDED_TERMINATIONS else counted
        side[run.termination_reason.value] += 1
    return TerminationCounts(counted=dict(sorted(counted.items())), excluded=dict(sorted(excluded.items())))
