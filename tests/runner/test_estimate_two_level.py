"""The estimate's spread includes the pilot's own sampling error (two-level bootstrap), and its coverage is measured."""

from __future__ import annotations

import numpy as np

from tauproxy.data_model.call import Usage
from tauproxy.runner.estimate import _PastCall, _PastTrial, _TwoLevel, p90_coverage


def pilot(tasks: int, trials: int, seed: int) -> tuple[list[_PastTrial], np.ndarray]:
    rng = np.random.default_rng(seed)
    scale = rng.lognormal(0.0, 0.8, size=tasks)  # tasks differ a lot in cost
    past, values = [], []
    for t in range(tasks):
        for _ in range(trials):
            past.append(_PastTrial(f"t{t}", [_PastCall("agent", "m", Usage(prompt_tokens=1))]))
            values.append(scale[t] * rng.lognormal(0.0, 0.2))
    return past, np.array(values)


def test_unseen_tasks_spread_includes_the_pilots_task_sampling_error() -> None:
    past, values = pilot(tasks=6, trials=2, seed=0)
    sampler = _TwoLevel(past, 4000, np.random.default_rng(1))
    totals = sum(values[sampler.picks(f"new{i}")] for i in range(120))
    # A single-level draw (any past trial, the pilot taken as the truth) for the same 120 trials.
    flat = np.random.default_rng(1).integers(0, len(past), size=(4000, 120))
    single = values[flat].sum(axis=1)
    spread = np.percentile(totals, 90) - np.percentile(totals, 50)
    assert spread > 2 * (np.percentile(single, 90) - np.percentile(single, 50))


def test_seen_tasks_draw_from_their_own_trials() -> None:
    past, _ = pilot(tasks=5, trials=3, seed=2)
    picks = _TwoLevel(past, 500, np.random.default_rng(3)).picks("t4")
    assert {past[i].task_id for i in picks} == {"t4"}


def test_coverage_is_measured_and_near_its_goal() -> None:
    past, values = pilot(tasks=40, trials=2, seed=4)
    coverage, checks = p90_coverage(past, values, seed=0)
    assert checks == 40 and coverage is not None and 0.75 <= coverage <= 1.0
    assert p90_coverage(past[:6], values[:6], seed=0) == (None, 0)  # 3 tasks: too few to halve
