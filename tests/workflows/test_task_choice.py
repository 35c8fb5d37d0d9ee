"""Which tasks get more trials: discordant first, then the most uncertain; unanimous agreement is left alone."""

from __future__ import annotations

from tauproxy.reports.paired import TaskPair
from tauproxy.workflows.task_choice import choose_tasks, variance_cut


def pair(task_id: str, cand: tuple[int, int], base: tuple[int, int]) -> TaskPair:
    return TaskPair(
        task_id=task_id,
        candidate_successes=cand[0],
        candidate_trials=cand[1],
        baseline_successes=base[0],
        baseline_trials=base[1],
        paired_by_seed=False,
    )


def test_discordant_then_uncertain_and_never_unanimous_agreement() -> None:
    tasks = [
        pair("agree_pass", (4, 4), (4, 4)),
        pair("agree_fail", (0, 4), (0, 4)),
        pair("noisy_same", (2, 4), (2, 4)),
        pair("dropped", (2, 4), (4, 4)),
        pair("dropped_all", (0, 4), (4, 4)),
        pair("noisy_many", (4, 8), (4, 8)),
    ]
    chosen = choose_tasks(tasks, max_trials=100)
    order = [c.task_id for c in chosen]
    assert set(order) == {"noisy_same", "dropped", "dropped_all", "noisy_many"}
    assert order[:2] == ["dropped", "dropped_all"]  # discordant first; 2/4 is more uncertain than 0/4
    assert order[2:] == ["noisy_same", "noisy_many"]  # 4 trials: one more helps more than at 8
    assert [c.add for c in chosen] == [4, 4, 4, 8]  # each doubles


def test_variance_cut_falls_with_trials_and_certainty() -> None:
    assert variance_cut(2, 4) > variance_cut(4, 8) > variance_cut(8, 16)
    assert variance_cut(2, 4) > variance_cut(0, 4) > 0  # smoothed: all-fail still counts a little


def test_trial_limit_caps_and_excludes() -> None:
    chosen = choose_tasks([pair("a", (3, 6), (6, 6)), pair("b", (5, 10), (10, 10))], max_trials=10)
    assert [(c.task_id, c.add) for c in chosen] == [("a", 4)]


def test_when_everything_agrees_every_task_is_a_candidate() -> None:
    chosen = choose_tasks([pair("a", (4, 4), (4, 4)), pair("b", (0, 2), (0, 2))], max_trials=100)
    assert [c.task_id for c in chosen] == ["b", "a"]  # 2 trials is the less certain
