"""The no-history prior reads what the plan says about the agent: the share of a task's actions its
model options promise to perform (a scripted oracle's error_rate and skip_user); a model whose options
say nothing of it performs every action. In-process, no model is called."""

from __future__ import annotations

from pathlib import Path

import pytest

from tauproxy.data_model.task import Action, EvaluationCriteria, Task, UserScenario
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.runner.config import RunConfig
from tauproxy.runner.estimate import estimate, prior_calls
from tauproxy.runner.estimate_actions import ActionShare, action_share
from tauproxy.runner.trial import TrialSpec

REPO = Path(__file__).resolve().parents[2]
DEMO_PRICES = REPO / "cassettes" / "demo-prices.json"


def spec(agent_actions: int, user_actions: int) -> TrialSpec:
    actions = [Action(action_id=f"a{i}", name="lookup") for i in range(agent_actions)]
    actions += [Action(action_id=f"u{i}", requestor="user", name="toggle") for i in range(user_actions)]
    task = Task(
        id="t", user_scenario=UserScenario(instructions="x"), evaluation_criteria=EvaluationCriteria(actions=actions)
    )
    return TrialSpec(task=task, trial=0, seed=1)


@pytest.mark.parametrize(
    ("model", "solo", "share"),
    [
        ("scripted/oracle", False, ActionShare(1.0, 1.0)),
        ("scripted/oracle?error_rate=0.5", False, ActionShare(0.5, 0.5)),
        ("scripted/oracle?error_rate=0.2&skip_user=1", False, ActionShare(0.8, 0.0)),
        ("scripted/oracle?skip_user=1", True, ActionShare(1.0, 1.0)),  # solo: it acts for the user itself
        ("scripted/silent", False, ActionShare(1.0, 1.0)),  # its options say nothing of actions
        ("openai/gpt-4.1", False, ActionShare(1.0, 1.0)),
        ("local/model.gguf", False, ActionShare(1.0, 1.0)),
    ],
)
def test_the_share_of_actions_comes_from_the_agents_typed_options(model: str, solo: bool, share: ActionShare) -> None:
    assert action_share(model, solo) == share


def test_an_agent_that_skips_actions_is_planned_with_fewer_calls() -> None:
    full = prior_calls(spec(4, 2))
    half = prior_calls(spec(4, 2), ActionShare(0.5, 0.5))
    no_guidance = prior_calls(spec(4, 2), ActionShare(1.0, 0.0))
    assert half["agent"] == pytest.approx(prior_calls(spec(2, 1))["agent"])
    assert half["user"] == pytest.approx(prior_calls(spec(2, 1))["user"])
    assert no_guidance["user"] == prior_calls(spec(4, 0))["user"] < full["user"]
    assert prior_calls(spec(0, 0), ActionShare(0.0, 0.0)) == prior_calls(
        spec(0, 0)
    )  # the answer and the user's turns stay


def test_the_prior_of_a_slipping_agent_costs_less_and_stays_labelled_low_confidence() -> None:
    def prior(agent: str) -> float:
        config = RunConfig(
            domain="mock",
            agent=LLMConfig(model=agent),
            user=LLMConfig(model="scripted/user"),
            num_trials=2,
            prices=DEMO_PRICES,
        )
        result = estimate(config, [], None)
        assert result.confidence.startswith("low") and result.live_cost_p50 is not None
        return result.live_cost_p50

    exact, slipping, sloppy = (
        prior("scripted/oracle"),
        prior("scripted/oracle?error_rate=0.2"),
        prior("scripted/oracle?error_rate=0.5"),
    )
    assert exact > slipping > sloppy > 0
