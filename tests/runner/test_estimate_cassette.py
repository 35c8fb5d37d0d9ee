"""`estimate` is exact for what the cassette covers: a planned trial that replays to its end costs
nothing live, with or without history; a partly covered plan is priced for its uncovered part only.

Recorded here, in-process, on the mock pack with the scripted models, priced by the shipped demo
prices (so a covered call would cost something if it were wrongly counted live)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tauproxy.domain.pack import load_pack
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.runner.config import RunConfig
from tauproxy.runner.estimate import Estimate, estimate
from tauproxy.runner.run import execute

REPO = Path(__file__).resolve().parents[2]
DEMO_PRICES = REPO / "cassettes" / "demo-prices.json"


def plan(cassette: Path, **update: object) -> RunConfig:
    config = RunConfig(
        domain="mock",
        agent=LLMConfig(model="scripted/oracle"),
        user=LLMConfig(model="scripted/user"),
        num_trials=2,
        num_tasks=3,
        cassette=cassette,
        prices=DEMO_PRICES,
    )
    return config.model_copy(update=update)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunConfig, Path]:
    """The first 3 mock tasks x 2 trials recorded into a cassette; the run kept as history."""
    tmp = tmp_path_factory.mktemp("estimate-cassette")
    config = plan(tmp / "cassette", save_to=tmp / "run")
    results = execute(config).results
    assert all(call.source == "live" for sim in results.simulations for call in sim.calls)
    return config.model_copy(update={"save_to": None}), tmp / "run"


def live_calls(result: Estimate) -> float:
    return sum(role.calls_p90 for role in result.roles.values())


@pytest.mark.parametrize("with_history", [False, True], ids=["prior", "history"])
def test_a_covered_plan_predicts_no_live_call_and_no_cost(recorded: tuple[RunConfig, Path], with_history: bool) -> None:
    config, run_dir = recorded
    result = estimate(config, [run_dir] if with_history else [], config.cassette)
    assert result.replayed_calls > 0 and result.replayed_cost > 0
    assert live_calls(result) == 0
    assert result.live_cost_p50 == 0 and result.live_cost_p90 == 0
    assert all(role.cost_p90 == 0 and role.tokens_p90 == 0 for role in result.roles.values())


@pytest.mark.parametrize("with_history", [False, True], ids=["prior", "history"])
def test_a_partly_covered_plan_prices_only_its_uncovered_trials(
    recorded: tuple[RunConfig, Path], with_history: bool
) -> None:
    config, run_dir = recorded
    history = [run_dir] if with_history else []
    wider = estimate(config.model_copy(update={"num_tasks": 5}), history, config.cassette, seed=3)
    # The same two uncovered tasks planned alone, with nothing to replay.
    uncovered = [task.id for task in load_pack("mock").tasks][3:5]
    rest = config.model_copy(update={"num_tasks": None, "task_ids": uncovered, "cassette": None})
    alone = estimate(rest, history, None, seed=3)
    covered = estimate(config, history, config.cassette, seed=3)
    assert wider.replayed_calls == covered.replayed_calls
    assert wider.live_cost_p50 == pytest.approx(alone.live_cost_p50)
    assert wider.live_cost_p90 == pytest.approx(alone.live_cost_p90)
    for role, row in alone.roles.items():
        assert wider.roles[role].calls_p50 == pytest.approx(row.calls_p50)
        assert wider.roles[role].tokens_p90 == pytest.approx(row.tokens_p90)


def test_a_trial_that_misses_goes_live_from_the_miss(recorded: tuple[RunConfig, Path]) -> None:
    config, _ = recorded
    # A third trial of each task has a seed the cassette never saw: it is planned live.
    result = estimate(config.model_copy(update={"num_trials": 3}), [], config.cassette)
    assert result.live_cost_p50 is not None and result.live_cost_p50 > 0
    assert result.roles["agent"].calls_p50 >= 3


def test_the_prior_counts_calls_from_the_tasks_expected_actions() -> None:
    from tauproxy.data_model.task import Action, EvaluationCriteria, Task, UserScenario
    from tauproxy.runner.estimate import prior_calls
    from tauproxy.runner.trial import TrialSpec

    def spec(agent_actions: int, user_actions: int) -> TrialSpec:
        actions = [Action(action_id=f"a{i}", name="lookup") for i in range(agent_actions)]
        actions += [Action(action_id=f"u{i}", requestor="user", name="toggle") for i in range(user_actions)]
        task = Task(
            id="t",
            user_scenario=UserScenario(instructions="x"),
            evaluation_criteria=EvaluationCriteria(actions=actions),
        )
        return TrialSpec(task=task, trial=0, seed=1)

    quiet, busy, guided = prior_calls(spec(0, 0)), prior_calls(spec(4, 0)), prior_calls(spec(0, 4))
    assert quiet["agent"] >= 1 and quiet["user"] >= 1 and quiet["judge"] == 0
    assert busy["agent"] == quiet["agent"] + 4 and busy["user"] == quiet["user"]
    assert guided["agent"] > quiet["agent"] and guided["user"] > quiet["user"]
