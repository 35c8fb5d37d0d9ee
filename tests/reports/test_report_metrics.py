"""Bootstrap intervals of pass^k, the reward breakdown and termination counts."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import report_json
from report_runs import mock_run

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import RewardInfo, SimulationRun, TerminationReason
from tauproxy.data_model.task import RewardType
from tauproxy.reports import metrics
from tauproxy.reports.metrics import (
    TaskCount,
    _numpy_bounds,
    _python_bounds,
    bootstrap_pass_hat_k_ci,
    pass_hat_k,
    pass_hat_ks,
    reward_breakdown,
    task_counts,
    termination_counts,
)
from tauproxy.reports.numpy_draws import Pcg64, pairwise_sum, quantile_linear


def counts(successes: list[int], trials: int) -> list[TaskCount]:
    return [TaskCount(task_id=str(i), successes=s, trials=trials) for i, s in enumerate(successes)]


@pytest.mark.parametrize("seed", range(8))
def test_interval_contains_the_estimate_for_every_k(seed: int) -> None:
    rng = np.random.default_rng(seed)
    trials = int(rng.integers(1, 9))
    sample = counts([int(x) for x in rng.integers(0, trials + 1, size=int(rng.integers(1, 40)))], trials)
    points = pass_hat_ks(sample)
    intervals = bootstrap_pass_hat_k_ci(sample, seed=seed)
    assert set(intervals) == set(points)
    for k, (lo, hi) in intervals.items():
        assert 0.0 <= lo <= points[k] <= hi <= 1.0


def test_bootstrap_is_seeded() -> None:
    sample = counts([4, 3, 0, 2, 4, 1, 4, 4, 0, 3], 4)
    assert bootstrap_pass_hat_k_ci(sample, seed=7) == bootstrap_pass_hat_k_ci(sample, seed=7)
    assert bootstrap_pass_hat_k_ci(sample, seed=7) != bootstrap_pass_hat_k_ci(sample, seed=8)


def test_all_tasks_alike_gives_a_zero_width_interval() -> None:
    intervals = bootstrap_pass_hat_k_ci(counts([2, 2, 2], 2))
    assert intervals == {1: (1.0, 1.0), 2: (1.0, 1.0)}
    assert bootstrap_pass_hat_k_ci([]) == {}


def test_interval_narrows_as_trials_are_added(tmp_path: Path) -> None:
    """Same slip model, 2 vs 8 trials per task: per-task estimates steady, so pass^1's interval shrinks."""
    widths = {}
    for trials in (2, 8):
        report = report_json(mock_run(tmp_path / f"t{trials}", trials=trials))
        lo, hi = report["pass_hat_k_ci"]["1"]
        assert lo <= report["pass_hat_k"]["1"] <= hi
        widths[trials] = hi - lo
    assert widths[8] < widths[2]


def run(
    task_id: str,
    trial: int,
    reason: TerminationReason,
    reward: float | None,
    breakdown: dict[RewardType, float] | None = None,
) -> SimulationRun:
    info = None if reward is None else RewardInfo(reward=reward, reward_breakdown=breakdown)
    return SimulationRun(
        id=f"{task_id}:{trial}",
        task_id=task_id,
        trial=trial,
        seed=trial,
        termination_reason=reason,
        messages=[Message(role="assistant", content="hi")],
        reward_info=info,
    )


def test_infrastructure_errors_are_counted_apart_and_left_out_of_pass_hat_k() -> None:
    runs = [
        run("a", 0, TerminationReason.USER_STOP, 1.0, {RewardType.DB: 1.0}),
        run("a", 1, TerminationReason.INFRASTRUCTURE_ERROR, None),
        run("b", 0, TerminationReason.MAX_STEPS, 0.0, {RewardType.DB: 0.0, RewardType.COMMUNICATE: 1.0}),
        run("b", 1, TerminationReason.USER_STOP, 1.0, {RewardType.DB: 1.0, RewardType.COMMUNICATE: 1.0}),
    ]
    terminations = termination_counts(runs)
    assert terminations.counted == {"max_steps": 1, "user_stop": 2}
    assert terminations.excluded == {"infrastructure_error": 1}
    assert [(c.task_id, c.successes, c.trials) for c in task_counts(runs)] == [("a", 1, 1), ("b", 1, 2)]

    breakdown = {basis: (b.mean, b.runs) for basis, b in reward_breakdown(runs).items()}
    # Means only over the runs whose breakdown has the basis, in the canonical basis order.
    assert breakdown == {RewardType.DB: (2 / 3, 3), RewardType.COMMUNICATE: (1.0, 2)}
    assert list(reward_breakdown(runs)) == [RewardType.DB, RewardType.COMMUNICATE]


def _random_counts(rng: np.random.Generator) -> list[TaskCount]:
    trials = int(rng.integers(1, 7))
    tasks = int(rng.integers(1, 45))
    # Some tasks with more trials than the rest: pass^k stops at the fewest.
    per_task = [trials + int(rng.integers(0, 3)) if rng.random() < 0.2 else trials for _ in range(tasks)]
    return [TaskCount(task_id=str(i), trials=n, successes=int(rng.integers(0, n + 1))) for i, n in enumerate(per_task)]


@pytest.mark.parametrize("case", range(40))
def test_a_bootstrap_drawn_in_python_gives_numpys_interval_to_the_bit(case: int) -> None:
    rng = np.random.default_rng(1000 + case)
    sample = _random_counts(rng)
    points = pass_hat_ks(sample)
    per_task = [[pass_hat_k(c.trials, c.successes, k) for c in sample] for k in points]
    n_boot = int(rng.choice([1, 2, 9, 200, 2000]))
    seed = int(rng.integers(0, 2**40))
    tail = (1.0 - 0.95) / 2.0
    assert _python_bounds(per_task, n_boot, seed, tail) == _numpy_bounds(per_task, n_boot, seed, tail)


@pytest.mark.parametrize("seed", [0, 1, 300, 2**32 + 5, 123456789012345678901])
def test_pcg64_draws_numpys_integers(seed: int) -> None:
    for high in (1, 2, 3, 10, 97, 1000, 2**31 + 11, 2**32 - 1, 2**32):
        assert Pcg64(seed).integers(high, 300) == np.random.default_rng(seed).integers(0, high, size=300).tolist()


def test_numpys_row_mean_and_quantile_are_reproduced() -> None:
    rng = np.random.default_rng(7)
    for _ in range(500):
        # Values whose sums round differently in different orders: only numpy's own order matches.
        values = [
            float(v) for v in rng.choice([0.1, 1 / 3, 2 / 3, 0.25, 1 / 6, 0.7, 1.0], size=int(rng.integers(1, 300)))
        ]
        assert pairwise_sum(values) / len(values) == np.array([values, values]).mean(axis=1)[0]
        q = float(rng.choice([0.025000000000000022, 0.5, 0.9, 0.975]))
        assert quantile_linear(sorted(values), q) == float(np.quantile(np.array(values), q))


def test_a_small_bootstrap_never_loads_numpy_and_a_large_one_uses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    small = counts([4, 3, 0, 2, 4, 1, 4, 4, 0, 3], 4)
    expected = bootstrap_pass_hat_k_ci(small, seed=3)

    def refused(*args: object) -> object:
        raise AssertionError("this path must not run")

    monkeypatch.delitem(sys.modules, "numpy")  # as in a process that never imported it
    monkeypatch.setattr(metrics, "_numpy_bounds", refused)
    assert bootstrap_pass_hat_k_ci(small, seed=3) == expected
    assert "numpy" not in sys.modules
    monkeypatch.undo()
    large = counts([i % 5 for i in range(metrics.PYTHON_DRAWS_MAX // 2000 + 1)], 4)
    monkeypatch.setattr(metrics, "_python_bounds", refused)
    assert set(bootstrap_pass_hat_k_ci(large)) == {1, 2, 3, 4}
