"""The --until-decided loop on seeded Bernoulli agents: stops when decided, adds trials only where they
matter, keeps to the budget, and says why it stopped."""

from __future__ import annotations

import sys

from conftest import TESTS_DIR

from tauproxy.reports.regression import Verdict
from tauproxy.workflows.adaptive import AdaptiveSettings, until_decided
from tauproxy.workflows.sequential import LookSchedule

sys.path.insert(0, str(TESTS_DIR / "workflows"))
from bernoulli_agents import BernoulliAgent, baseline_of


def settings(max_drop: float = 0.05, max_cost: float | None = None, **kwargs: object) -> AdaptiveSettings:
    return AdaptiveSettings(max_drop=max_drop, schedule=LookSchedule(confidence=0.95), max_cost=max_cost, **kwargs)  # type: ignore[arg-type]


def test_a_clear_regression_is_bad_at_the_first_look_with_no_more_trials() -> None:
    base_p = {f"t{i}": 0.95 for i in range(20)}
    agent = BernoulliAgent({t: 0.1 for t in base_p}, seed=1)
    outcome = until_decided(agent, baseline_of(base_p, 4, 2), {t: 4 for t in base_p}, settings())
    assert outcome.final.verdict is Verdict.BAD and outcome.stop.kind == "decided"
    assert len(outcome.rounds) == 1 and agent.ran == 80


def test_more_trials_go_only_to_tasks_that_can_change_the_verdict() -> None:
    # Half the tasks always pass on both sides; the other half are coin flips for the candidate.
    base_p = {**{f"easy{i}": 1.0 for i in range(10)}, **{f"hard{i}": 0.9 for i in range(10)}}
    cand_p = {**{f"easy{i}": 1.0 for i in range(10)}, **{f"hard{i}": 0.5 for i in range(10)}}
    agent = BernoulliAgent(cand_p, seed=3)
    outcome = until_decided(agent, baseline_of(base_p, 4, 4), {t: 4 for t in base_p}, settings(max_drop=0.1))
    assert len(outcome.rounds) > 1
    later = {task for done in outcome.rounds[1:] for task in done.tasks}
    assert later and all(task.startswith("hard") for task in later)
    assert all(len(agent.done[f"easy{i}"]) == 4 for i in range(10))
    assert outcome.rounds[-1].trials == agent.ran == sum(done.trials_added for done in outcome.rounds)
    if outcome.stop.kind == "decided":
        assert outcome.final.verdict in (Verdict.GOOD, Verdict.BAD)


def test_the_budget_is_kept_and_named_as_the_reason() -> None:
    p = {f"t{i}": 0.6 for i in range(10)}
    agent = BernoulliAgent(p, seed=0, cost=0.01)
    outcome = until_decided(agent, baseline_of(p, 40, 100), {t: 4 for t in p}, settings(max_drop=0.1, max_cost=0.7))
    assert outcome.stop.kind == "budget" and outcome.final.verdict is Verdict.UNDECIDED
    assert outcome.spend_usd is not None and 0.4 < outcome.spend_usd <= 0.7 + 1e-9
    assert agent.ran == round(outcome.spend_usd / 0.01)


def test_a_verdict_on_the_threshold_stops_as_futile_not_at_the_budget() -> None:
    # A/A at --max-drop 0: the true drop is the threshold, and the baseline's 4 trials stay noisy.
    p = {f"t{i}": 0.6 for i in range(10)}
    agent = BernoulliAgent(p, seed=7, cost=0.01)
    outcome = until_decided(agent, baseline_of(p, 4, 8), {t: 4 for t in p}, settings(max_drop=0.0, max_cost=100.0))
    assert outcome.stop.kind == "futile" and outcome.final.verdict is Verdict.UNDECIDED
    assert outcome.spend_usd is not None and outcome.spend_usd < 5.0


def test_out_of_looks_is_undecided() -> None:
    p = {f"t{i}": 0.6 for i in range(10)}
    looks = AdaptiveSettings(max_drop=0.1, schedule=LookSchedule(confidence=0.95, looks=2), max_cost=None)
    outcome = until_decided(BernoulliAgent(p, seed=0), baseline_of(p, 40, 100), {t: 4 for t in p}, looks)
    assert outcome.stop.kind == "looks" and len(outcome.rounds) == 2
    assert outcome.final.verdict is Verdict.UNDECIDED and outcome.rounds[-1].confidence == outcome.final.confidence


def test_an_unknown_price_stops_before_spending_blind() -> None:
    p = {f"t{i}": 0.6 for i in range(10)}
    agent = BernoulliAgent(p, seed=0)
    agent.cost = None  # type: ignore[assignment]
    outcome = until_decided(agent, baseline_of(p, 40, 100), {t: 4 for t in p}, settings(max_drop=0.1, max_cost=1.0))
    assert outcome.stop.kind == "unknown price" and agent.ran == 40 and outcome.spend_usd is None


def test_the_same_data_make_the_same_rounds() -> None:
    p = {f"t{i}": 0.7 for i in range(10)}
    runs = [
        until_decided(BernoulliAgent(p, seed=11), baseline_of(p, 4, 12), {t: 4 for t in p}, settings())
        for _ in range(2)
    ]
    assert runs[0].model_dump() == runs[1].model_dump()
