"""The paired statistics behind check, diff and report --against: known cases, exactness, seeds."""

from __future__ import annotations

import itertools

import pytest
from paired_support import results_of

from tauproxy.reports.paired import TaskPair, paired_comparison, sign_flip_test
from tauproxy.reports.regression import Verdict, compare_scores


def noisy(tasks: int, trials: int, seed: int, p: float) -> dict[str, list[float]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    return {f"t{i}": [float(x) for x in (rng.random(trials) < p)] for i in range(tasks)}


def test_identical_runs_give_an_interval_around_zero_and_good() -> None:
    run = results_of(noisy(20, 4, seed=1, p=0.6))
    found = paired_comparison(run, run)
    assert found is not None
    for diff in found.differences.values():
        assert diff.difference == 0.0 and diff.ci == (0.0, 0.0)
    assert found.test.p_value == 1.0 and found.seed_paired_tasks == 20
    result = compare_scores(run, run, "pass^1", max_drop=0.0)
    assert result.verdict is Verdict.GOOD and result.drop_ci == (0.0, 0.0)


def test_every_task_failing_against_all_passing_is_bad() -> None:
    tasks = [f"t{i}" for i in range(10)]
    passing = results_of({t: [1.0] * 4 for t in tasks})
    failing = results_of({t: [0.0] * 4 for t in tasks}, agent="broken")
    for metric in ("pass^1", "pass^k", "avg_reward"):
        result = compare_scores(failing, passing, metric, max_drop=0.05)
        assert result.verdict is Verdict.BAD, metric
        assert result.drop == 1.0 and result.drop_ci == (1.0, 1.0)
    # 10 tasks all differing the same way: the exact two-sided p-value is 2 / 2^10.
    assert result.p_value == pytest.approx(2 / 2**10)
    # And the reverse (a gain) is good.
    assert compare_scores(passing, failing, "pass^1", max_drop=0.05).verdict is Verdict.GOOD


def test_small_noisy_difference_on_few_tasks_is_undecided_and_says_what_would_decide() -> None:
    base = results_of(
        {"a": [1, 1, 0, 1], "b": [0, 1, 1, 0], "c": [1, 0, 1, 1], "d": [1, 1, 1, 0]}, seed0=100, cost=0.02
    )
    cand = results_of(
        {"a": [1, 0, 0, 1], "b": [0, 1, 0, 0], "c": [1, 0, 1, 1], "d": [1, 1, 1, 0]},
        agent="other",
        seed0=500,
        cost=0.03,
    )
    result = compare_scores(cand, base, "pass^1", max_drop=0.05)
    assert result.verdict is Verdict.UNDECIDED
    assert result.drop_ci is not None and result.drop_ci[0] < 0.05 < result.drop_ci[1]
    more = result.more_trials
    assert more is not None and more.trials_per_task is not None and more.trials_per_task >= 1
    assert more.extra_trials == more.trials_per_task * 4
    assert more.cost_usd == pytest.approx(more.extra_trials * (0.03 + 0.02))
    assert "more trial(s) per task" in result.reason
    # An unknown price makes the cost unknown, never $0.
    unpriced = results_of(
        {"a": [1, 0, 0, 1], "b": [0, 1, 0, 0], "c": [1, 0, 1, 1], "d": [1, 1, 1, 0]},
        agent="other",
        seed0=500,
        cost=None,
    )
    again = compare_scores(unpriced, base, "pass^1", max_drop=0.05)
    assert again.more_trials is not None and again.more_trials.cost_usd is None


def test_bootstrap_is_reproducible_with_a_seed_and_moves_with_another() -> None:
    base, cand = results_of(noisy(30, 4, seed=2, p=0.7)), results_of(noisy(30, 4, seed=3, p=0.6), seed0=900)
    one, two = paired_comparison(cand, base, seed=7), paired_comparison(cand, base, seed=7)
    assert one is not None and two is not None and one == two
    other = paired_comparison(cand, base, seed=8)
    assert other is not None and other.differences["pass^1"].ci != one.differences["pass^1"].ci
    assert one.seed_paired_tasks == 0  # different seeds: trials are not matched


def test_shared_seeds_pair_the_same_trials() -> None:
    base = results_of({"a": [1, 1, 1, 1, 0, 0, 0, 0]})
    cand = results_of({"a": [1, 1, 1, 1]}, agent="other")  # seeds 100..103: the baseline's first four
    found = paired_comparison(cand, base)
    assert found is not None and found.seed_paired_tasks == 1
    assert found.per_task[0].baseline_trials == 4 and found.differences["pass^1"].difference == 0.0


def test_sign_flip_p_value_is_exact() -> None:
    tasks = [
        TaskPair(
            task_id=f"t{i}",
            candidate_successes=c,
            candidate_trials=4,
            baseline_successes=b,
            baseline_trials=2,
            paired_by_seed=False,
        )
        for i, (c, b) in enumerate([(4, 1), (1, 2), (3, 1), (2, 0), (0, 0), (4, 2)])
    ]
    diffs = [t.candidate_successes / 4 - t.baseline_successes / 2 for t in tasks]
    observed = abs(sum(diffs))
    patterns = list(itertools.product((1, -1), repeat=len(diffs)))
    brute = sum(
        abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed - 1e-12 for signs in patterns
    ) / len(patterns)
    assert sign_flip_test(tasks).p_value == pytest.approx(brute, abs=1e-12)


def test_no_common_task_gives_no_comparison() -> None:
    assert paired_comparison(results_of({"a": [1.0]}), results_of({"b": [1.0]})) is None
