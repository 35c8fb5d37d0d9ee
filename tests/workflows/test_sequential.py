"""The adaptive verdict's error rate holds under optional stopping (alpha spent over the planned looks),
where peeking at the nominal level at every look does not. Seeded Bernoulli agents, no engine."""

from __future__ import annotations

import sys

import pytest
from conftest import TESTS_DIR

sys.path.insert(0, str(TESTS_DIR / "workflows"))
from bernoulli_agents import BernoulliAgent, baseline_of

from tauproxy.reports.regression import Verdict
from tauproxy.workflows.adaptive import AdaptiveSettings, until_decided
from tauproxy.workflows.sequential import LookSchedule

TASKS = {f"t{i}": 0.6 for i in range(12)}
ALPHA = 0.05


class Peeking(LookSchedule):
    """The wrong way: every look at the nominal confidence, as if it were the only one."""

    @property
    def per_look(self) -> float:
        return self.confidence


def test_alpha_is_spent_equally_over_the_looks() -> None:
    assert LookSchedule(confidence=0.95, looks=5).per_look == pytest.approx(0.99)
    assert LookSchedule(confidence=0.9, looks=1).per_look == pytest.approx(0.9)
    with pytest.raises(ValueError):
        LookSchedule(confidence=1.0)


def false_alarms(schedule: LookSchedule, experiments: int) -> tuple[float, float]:
    """A/A pairs at --max-drop 0: the true drop is 0, so "bad" is always wrong. The loop stops at the
    first decided look (the futility stop is off: it would end most of these pairs early, and the point
    is to look again and again); returns the share of wrong verdicts and the mean looks used."""
    wrong = looks = 0
    for e in range(experiments):
        agent = BernoulliAgent(TASKS, seed=e)
        outcome = until_decided(
            agent,
            baseline_of(TASKS, 4, seed=10_000 + e),
            {t: 4 for t in TASKS},
            AdaptiveSettings(max_drop=0.0, schedule=schedule, max_cost=None, max_trials=32, seed=e, stop_futile=False),
        )
        wrong += outcome.final.verdict is Verdict.BAD
        looks += len(outcome.rounds)
    return wrong / experiments, looks / experiments


@pytest.mark.slow
def test_error_rate_holds_under_optional_stopping_where_peeking_breaks_it() -> None:
    ours, ours_looks = false_alarms(LookSchedule(confidence=1 - ALPHA), 150)
    peeking, peeking_looks = false_alarms(Peeking(confidence=1 - ALPHA), 150)
    assert ours_looks > 3 and peeking_looks > 3  # the loop did look again and again
    # "bad" is one side of the interval: its share of wrong verdicts is at most alpha / 2.
    assert ours <= ALPHA / 2
    assert peeking > ALPHA / 2 and peeking > 2 * ours
