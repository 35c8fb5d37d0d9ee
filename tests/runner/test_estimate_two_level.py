"""The estimate's spread includes the pilot's own sampling error and the tail of task sizes, and its
coverage is measured, near its 90% goal."""

from __future__ import annotations

import numpy as np
import pytest

from tauproxy.runner.estimate import TASK_SIZE_KURTOSIS_FLOOR, _PastTrial, _TwoLevel, _variance_dof, p90_coverage


def pilot(tasks: int, trials: int, seed: int, scale: np.ndarray | None = None) -> tuple[list[_PastTrial], np.ndarray]:
    rng = np.random.default_rng(seed)
    if scale is None:
        scale = rng.lognormal(0.0, 0.8, size=tasks)  # tasks differ a lot in cost
    past, values = [], []
    for t in range(tasks):
        for _ in range(trials):
            past.append(_PastTrial(f"t{t}", []))
            values.append(scale[t] * rng.lognormal(0.0, 0.2))
    return past, np.array(values)


def planned_total(sampler: _TwoLevel, values: np.ndarray, task_ids: list[str], trials: int) -> np.ndarray:
    total = np.zeros(sampler.draws)
    for task_id in task_ids:
        for _ in range(trials):
            picks, scale = sampler.picks(task_id)
            total += values[picks] * scale
    return total


def test_unseen_tasks_spread_includes_the_pilots_task_sampling_error() -> None:
    past, values = pilot(tasks=6, trials=2, seed=0)
    sampler = _TwoLevel(past, 4000, np.random.default_rng(1), sizes=values)
    totals = planned_total(sampler, values, [f"new{i}" for i in range(60)], 2)
    # A single-level draw (any past trial, the pilot taken as the truth) for the same 120 trials.
    flat = np.random.default_rng(1).integers(0, len(past), size=(4000, 120))
    single = values[flat].sum(axis=1)
    spread = np.percentile(totals, 90) - np.percentile(totals, 50)
    assert spread > 2 * (np.percentile(single, 90) - np.percentile(single, 50))
    assert np.percentile(totals, 99) > 120 * values.max() / 2  # the predictive reaches past the tasks seen


def test_trials_of_one_unseen_task_share_its_stand_in() -> None:
    past, values = pilot(tasks=5, trials=3, seed=5)
    sampler = _TwoLevel(past, 500, np.random.default_rng(6), sizes=values)
    size = sampler.task_size("new")
    first, _ = sampler.picks("new")
    second, _ = sampler.picks("new")
    assert [past[i].task_id for i in first] == [past[i].task_id for i in second]
    assert size is not None and (sampler.task_size("new") == size).all()  # one drawn size for all its trials
    other, _ = sampler.picks("other")
    assert [past[i].task_id for i in other] != [past[i].task_id for i in first]


def test_seen_tasks_draw_from_their_own_trials() -> None:
    past, values = pilot(tasks=5, trials=3, seed=2)
    sampler = _TwoLevel(past, 4000, np.random.default_rng(3), sizes=values)
    picks, scale = sampler.picks("t4")
    assert {past[i].task_id for i in picks} == {"t4"}
    # Rescaled to the task's size times a pooled trial residual: centred on the task's mean trial, and
    # spread wider than its own 3 trials resampled (which hold (n - 1) / n of the trial variance).
    own = values[[i for i, trial in enumerate(past) if trial.task_id == "t4"]]
    planned = values[picks] * scale
    assert abs(planned.mean() / own.mean() - 1) < 0.1
    assert planned.std() > own.std()
    assert (sampler.task_size("t4") == sampler.task_size("t4")).all()


def test_without_sizes_seen_tasks_resample_their_own_trials() -> None:
    past, _ = pilot(tasks=5, trials=3, seed=2)
    picks, scale = _TwoLevel(past, 500, np.random.default_rng(3)).picks("t4")
    assert {past[i].task_id for i in picks} == {"t4"} and (scale == 1).all()


def test_out_of_sample_coverage_is_near_its_goal() -> None:
    """Fresh tasks from the same population: the p90 of 40 x 2 planned trials from a 10 x 2 pilot."""
    rng = np.random.default_rng(7)
    hits = 0
    for rep in range(60):
        scale = rng.lognormal(0.0, 0.8, size=50)
        past, values = pilot(10, 2, seed=100 + rep, scale=scale[:10])
        _, actual = pilot(50, 2, seed=500 + rep, scale=scale)
        sampler = _TwoLevel(past, 1000, rng, sizes=values)
        ids = [f"t{t}" for t in range(50)]
        hits += actual.sum() <= np.percentile(planned_total(sampler, values, ids, 2), 90)
    assert 0.8 <= hits / 60 <= 1.0


def test_coverage_is_measured_and_near_its_goal() -> None:
    past, values = pilot(tasks=40, trials=2, seed=4)
    coverage, checks = p90_coverage(past, values, seed=0)
    assert checks == 40 and coverage is not None and 0.8 <= coverage <= 1.0
    assert p90_coverage(past[:6], values[:6], seed=0) == (None, 0)  # 3 tasks: too few to halve


def test_the_spread_of_task_sizes_is_less_certain_for_heavy_tails_and_few_tasks() -> None:
    rng = np.random.default_rng(11)
    normal, heavy = rng.standard_normal(40), rng.standard_t(3, size=40)
    assert _variance_dof(rng.standard_normal(3)) == 2  # too few for a fourth moment: chi2(n - 1)
    # Normal sizes still count as TASK_SIZE_KURTOSIS_FLOOR-tailed: fewer degrees than n - 1.
    floor = 2 / (2 / 39 + TASK_SIZE_KURTOSIS_FLOOR / 40)
    assert _variance_dof(normal) == pytest.approx(floor) and floor < 39
    assert _variance_dof(heavy) < floor
    assert _variance_dof(rng.standard_normal(10)) < _variance_dof(rng.standard_normal(100))


def test_out_of_sample_coverage_holds_for_heavy_tailed_task_sizes() -> None:
    """Log task sizes from a Laplace (excess kurtosis 3): a 15 x 2 pilot predicts 45 x 2 other tasks."""
    rng = np.random.default_rng(8)
    hits = 0
    for rep in range(60):
        scale = np.exp(rng.laplace(0.0, 0.3, size=60))
        past, values = pilot(15, 2, seed=200 + rep, scale=scale[:15])
        _, actual = pilot(60, 2, seed=600 + rep, scale=scale)
        sampler = _TwoLevel(past, 1000, rng, sizes=values)
        ids = [f"t{t}" for t in range(15, 60)]
        hits += actual[30:].sum() <= np.percentile(planned_total(sampler, values, ids, 2), 90)
    assert 0.9 <= hits / 60 <= 1.0  # 0.87 without TASK_SIZE_KURTOSIS_FLOOR
