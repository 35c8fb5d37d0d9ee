"""Helpers for the report tests: make mock runs through the real CLI, find the shared τ² fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, invoke_cli

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, Results, RewardInfo, RunInfo, SimulationRun
from tauproxy.domain.pack import load_pack

SLIPS = "scripted/oracle?error_rate=0.3"
FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"
TAU2_SIMULATIONS = FIXTURES / "tau2-airline-50x4-silent-stub.json"
TAU2_METRICS = FIXTURES / "tau2-airline-50x4-silent-stub_results.json"


def mock_run(dest: Path, *, trials: int, seed: int = 300, agent: str = SLIPS, extra: tuple[str, ...] = ()) -> Path:
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        agent,
        "--num-trials",
        str(trials),
        "--seed",
        str(seed),
        "--save-to",
        str(dest),
        *extra,
    )
    return dest


def results_json(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "results.json").read_text())


def tau2_fixture() -> Path:
    """The real `tau2 run` output kept in ../shared; it is another project's data, never copied here."""
    if not TAU2_SIMULATIONS.exists() or not TAU2_METRICS.exists():
        pytest.skip(f"τ²-bench fixture not found at {FIXTURES} (it lives beside the repo, in ../shared)")
    return TAU2_SIMULATIONS


def tiny_results(content: str = "hi", task_id: str | None = None, calls: list[CallRecord] | None = None) -> Results:
    """A one-trial Results on the mock domain's first task, built without running anything."""
    task = load_pack("mock").tasks[0]
    if task_id is not None:
        task = task.model_copy(update={"id": task_id})
    info = RunInfo(
        tauproxy_version="0",
        domain="mock",
        domain_sha256="x" * 64,
        num_trials=1,
        seed=1,
        trial_seeds=[3],
        max_steps=10,
        max_errors=3,
        agent_info=ModelInfo(llm="agent-model"),
        user_info=ModelInfo(llm="user-model"),
        judge_info=ModelInfo(llm="judge-model"),
    )
    run = SimulationRun(
        id=f"{task.id}:0",
        task_id=task.id,
        trial=0,
        seed=3,
        termination_reason="user_stop",
        messages=[Message(role="assistant", content=content)],
        reward_info=RewardInfo(reward=1.0),
        calls=calls or [],
    )
    return Results(timestamp="t", info=info, tasks=[task], simulations=[run])
