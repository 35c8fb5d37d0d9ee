"""The interval behind check and the paired comparisons: its methods' properties on synthetic data,
and that check uses the one that reaches its nominal coverage (bench/check_calibration.py measures it
on recorded populations too)."""

from __future__ import annotations

import numpy as np
import pytest
from paired_support import results_of

from tauproxy.reports.paired import (
    PAIRED_INTERVAL,
    IntervalMethod,
    bootstrap_interval,
    bootstrap_picks,
    expansion,
    paired_comparison,
)
from tauproxy.reports.regression import compare_scores


def pass_shares(p: np.ndarray, trials: int, rng: np.random.Generator) -> np.ndarray:
    return (rng.random((len(p), trials)) < p[:, None]).mean(axis=1)


def test_each_widening_contains_the_one_before() -> None:
    rng = np.random.default_rng(4)
    deltas = pass_shares(np.full(12, 0.6), 4, rng) - pass_shares(np.full(12, 0.5), 4, rng)
    picks = bootstrap_picks(12, 2000, seed=0)
    point = deltas.mean()
    low, high = bootstrap_interval(deltas, picks, 0.95, IntervalMethod.PERCENTILE)
    wide_low, wide_high = bootstrap_interval(deltas, picks, 0.95, IntervalMethod.EXPANDED)
    factor = expansion(12, 0.95)
    assert factor > 1
    assert point - wide_low == pytest.approx((point - low) * factor)
    assert wide_high - point == pytest.approx((high - point) * factor)
    step = 1 / (12 * 4)
    cc_low, cc_high = bootstrap_interval(deltas, picks, 0.95, IntervalMethod.EXPANDED_CORRECTED, step)
    assert (cc_low, cc_high) == pytest.approx((wide_low - step / 2, wide_high + step / 2))


def test_no_spread_gives_the_point_and_one_task_the_whole_range() -> None:
    picks = bootstrap_picks(5, 500, seed=1)
    for method in IntervalMethod:
        assert bootstrap_interval(np.full(5, 0.25), picks, 0.95, method, step=0.05) == (0.25, 0.25)
    one = bootstrap_picks(1, 100, seed=1)
    assert bootstrap_interval(np.array([0.5]), one, 0.95, IntervalMethod.EXPANDED_CORRECTED, 0.25) == (-1.0, 1.0)


def test_bca_follows_the_skew_of_the_differences() -> None:
    # A few tasks far below the rest: the mean's sampling distribution is skewed to the left.
    deltas = np.array([0.0] * 17 + [-0.75, -1.0, -1.0])
    picks = bootstrap_picks(20, 4000, seed=2)
    point = deltas.mean()
    low, high = bootstrap_interval(deltas, picks, 0.95, IntervalMethod.BCA)
    p_low, p_high = bootstrap_interval(deltas, picks, 0.95, IntervalMethod.PERCENTILE)
    assert low <= point <= high
    assert (low, high) != (p_low, p_high)
    assert point - low > high - point  # the long side is the skewed one


@pytest.mark.parametrize("tasks", [10, 20])
def test_the_check_interval_reaches_its_level_where_the_percentile_one_falls_short(tasks: int) -> None:
    """A/A pairs of a uniform agent (every task p = 0.6) x 4 trials: the share of pairs whose interval
    holds the true difference 0. Seeded, so the figures are fixed; 600 pairs give a standard error of
    about 0.9 points around 0.95."""
    rng = np.random.default_rng(tasks)
    p = np.full(tasks, 0.6)
    covered = dict.fromkeys(IntervalMethod, 0)
    pairs = 600
    for pair in range(pairs):
        deltas = pass_shares(p, 4, rng) - pass_shares(p, 4, rng)
        picks = bootstrap_picks(tasks, 2000, seed=pair)
        for method in IntervalMethod:
            low, high = bootstrap_interval(deltas, picks, 0.95, method, step=1 / (tasks * 4))
            covered[method] += low <= 1e-12 and high >= -1e-12
    assert covered[PAIRED_INTERVAL] / pairs >= 0.95
    assert covered[IntervalMethod.PERCENTILE] < covered[PAIRED_INTERVAL]


def test_check_and_the_paired_comparison_use_the_chosen_interval() -> None:
    before = {f"t{i}": [float(i % 3 != 0)] * 2 + [1.0, 0.0] for i in range(15)}
    after = {f"t{i}": [float(i % 4 != 0)] * 2 + [0.0, 1.0] for i in range(15)}
    base, cand = results_of(before, seed0=100), results_of(after, agent="b", seed0=500)
    found = paired_comparison(cand, base, seed=3)
    assert found is not None and found.interval is PAIRED_INTERVAL is IntervalMethod.EXPANDED_CORRECTED
    deltas = np.array([np.mean(after[task]) - np.mean(before[task]) for task in before])
    expected = bootstrap_interval(deltas, bootstrap_picks(15, 2000, 3), 0.95, PAIRED_INTERVAL, 1 / 60)
    assert found.differences["pass^1"].ci == pytest.approx(expected)
    result = compare_scores(cand, base, "pass^1", max_drop=0.05, seed=3)
    assert result.drop_ci == pytest.approx((-expected[1], -expected[0]))
