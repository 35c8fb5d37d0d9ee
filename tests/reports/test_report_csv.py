"""Per-trial rows (tauproxy/reports/trial_rows.py) and `report --format csv`: our runs and τ²'s files,
unknown money and unknown call counts as empty cells, never 0."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli
from report_runs import SLIPS, mock_run, results_json, tau2_fixture, tiny_results
from test_tau2_commands import SEED, tiny_tau2

from tauproxy.data_model.call import CallRecord, Usage
from tauproxy.data_model.result import RewardInfo, TerminationReason
from tauproxy.data_model.task import RewardType
from tauproxy.reports.trial_rows import columns, trial_rows, write_csv
from tauproxy.results.load import load_any_results

ROLE_COLUMNS = [
    f"{role}_{part}"
    for role in ("agent", "user", "judge")
    for part in ("cost_usd", "prompt_tokens", "completion_tokens")
]


def call(index: int, role: str, source: str, cost: float | None, prompt: int = 10) -> CallRecord:
    return CallRecord(
        index=index,
        role=role,
        model="m",
        key=f"k{index}",
        sample_key=f"s{index}",  # type: ignore[arg-type]
        source=source,
        usage=Usage(prompt_tokens=prompt, completion_tokens=1),
        cost_usd=cost,
    )  # type: ignore[arg-type]


def parse(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_row_counts_calls_and_sums_cost_and_tokens_by_role() -> None:
    results = tiny_results(
        calls=[
            call(0, "agent", "live", 0.25, prompt=100),
            call(1, "user", "replay", 0.5),
            call(2, "agent", "replay", 0.125, prompt=7),
        ]
    )
    results.simulations[0].reward_info = RewardInfo(
        reward=0.0, reward_breakdown={RewardType.DB: 1.0, RewardType.COMMUNICATE: 0.0}
    )
    (row,) = trial_rows(results)
    assert (row.task, row.trial, row.seed, row.reward) == (results.tasks[0].id, 0, 3, 0.0)
    assert row.components == {RewardType.DB: 1.0, RewardType.COMMUNICATE: 0.0}
    assert (row.live_calls, row.replayed_calls) == (1, 2)
    assert row.cost_usd == pytest.approx(0.875) and row.live_cost_usd == pytest.approx(0.25)
    assert (row.agent.cost_usd, row.agent.prompt_tokens, row.agent.completion_tokens) == (0.375, 107, 2)
    assert (row.user.cost_usd, row.user.prompt_tokens) == (0.5, 10)
    assert (row.judge.cost_usd, row.judge.prompt_tokens) == (0.0, 0), "no judge call: known to cost nothing"

    out = io.StringIO()
    write_csv([row], out)
    header, _ = out.getvalue().splitlines()
    assert header.split(",") == [
        "task",
        "trial",
        "seed",
        "reward",
        "reward_db",
        "reward_communicate",
        "termination",
        "live_calls",
        "replayed_calls",
        "shared_calls",
        "cost_usd",
        "live_cost_usd",
        *ROLE_COLUMNS,
    ]
    assert parse(out.getvalue())[0]["reward_communicate"] == "0.0"


def test_unknown_price_and_ungraded_trials_are_empty_cells_not_zero(tmp_path: Path) -> None:
    results = tiny_results(calls=[call(0, "agent", "live", None), call(1, "user", "live", 0.5)])
    results.simulations.append(
        results.simulations[0].model_copy(
            update={
                "id": "x:1",
                "trial": 1,
                "termination_reason": TerminationReason.INFRASTRUCTURE_ERROR,
                "reward_info": None,
                "calls": [],
            }
        )
    )
    target = tmp_path / "rows.csv"
    write_csv(trial_rows(results), target)
    first, second = parse(target.read_text(encoding="utf-8"))
    assert first["agent_cost_usd"] == "" and first["cost_usd"] == "" and first["live_cost_usd"] == ""
    assert first["user_cost_usd"] == "0.5", "the priced role keeps its cost"
    assert second["reward"] == "" and second["termination"] == "infrastructure_error"
    assert second["live_calls"] == "0", "our own trial without call records made no call"


def test_rows_follow_task_order_then_trial() -> None:
    results = tiny_results()
    first = results.simulations[0]
    other = tiny_results(task_id="zzz").tasks[0]
    results.tasks.insert(0, other)
    results.simulations = [
        first.model_copy(update={"trial": 1, "id": "a:1"}),
        first,
        first.model_copy(update={"task_id": "zzz", "id": "zzz:0"}),
    ]
    assert [(r.task, r.trial) for r in trial_rows(results)] == [("zzz", 0), (first.task_id, 0), (first.task_id, 1)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mock_run(
        tmp_path_factory.mktemp("csv") / "run",
        trials=2,
        seed=5,
        agent=SLIPS,
        extra=("--num-tasks", "4", "--cassette", str(tmp_path_factory.getbasetemp() / "csv-cassette")),
    )


def test_report_format_csv_of_a_run_and_its_strict_replay(run_dir: Path, tmp_path: Path) -> None:
    data = results_json(run_dir)
    rows = parse(invoke_cli("report", str(run_dir), "--format", "csv").stdout)
    simulations = data["simulations"]
    assert [(r["task"], int(r["trial"]), int(r["seed"])) for r in rows] == [
        (s["task_id"], s["trial"], s["seed"]) for s in simulations
    ]
    for row, sim in zip(rows, simulations, strict=True):
        assert float(row["reward"]) == sim["reward_info"]["reward"]
        for basis, value in (sim["reward_info"]["reward_breakdown"] or {}).items():
            assert float(row[f"reward_{basis.lower()}"]) == value
        assert row["termination"] == sim["termination_reason"]
        assert int(row["live_calls"]) == len(sim["calls"]) and row["replayed_calls"] == "0"
        agent_tokens = sum(c["usage"]["prompt_tokens"] for c in sim["calls"] if c["role"] == "agent")
        assert int(row["agent_prompt_tokens"]) == agent_tokens > 0
        assert float(row["cost_usd"]) == 0.0, "scripted models are free by declaration"

    replay = tmp_path / "replay"
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        SLIPS,
        "--num-trials",
        "2",
        "--seed",
        "5",
        "--num-tasks",
        "4",
        "--cassette",
        data["info"]["cassette"],
        "--record-mode",
        "replay",
        "--save-to",
        str(replay),
    )
    replayed = parse(invoke_cli("report", str(replay), "--format", "csv").stdout)
    assert [r["live_calls"] for r in replayed] == ["0"] * len(rows)
    assert [r["replayed_calls"] for r in replayed] == [r["live_calls"] for r in rows]
    assert [r["reward"] for r in replayed] == [r["reward"] for r in rows]


def test_format_csv_refuses_json_and_against(run_dir: Path) -> None:
    both = invoke_cli("report", str(run_dir), "--json", "--format", "csv", check=False)
    assert both.returncode == 2 and "--format csv" in both.stderr and "Traceback" not in both.stderr
    against = invoke_cli("report", str(run_dir), "--against", str(run_dir), "--format", "csv", check=False)
    assert against.returncode == 2 and "--format csv" in against.stderr


def tau2_document() -> dict[str, Any]:
    """One τ² simulation (greeting, then user, agent and user messages that carry their usage), with a
    DB reward and the 0.0 cost τ² writes for a model it has no price for."""
    document = tiny_tau2()
    simulation = document["simulations"][0]
    simulation["user_cost"] = 0.0
    simulation["reward_info"]["reward_breakdown"] = {"DB": 1.0}
    return document


def test_a_tau2_file_has_no_call_counts_and_its_usage_per_message(tmp_path: Path) -> None:
    path = tmp_path / "airline.json"
    path.write_text(json.dumps(tau2_document()))
    (row,) = parse(invoke_cli("report", str(path), "--format", "csv").stdout)
    assert (row["task"], row["seed"], row["reward"], row["reward_db"]) == ("t1", str(SEED), "1.0", "1.0")
    assert row["live_calls"] == row["replayed_calls"] == row["live_cost_usd"] == "", "τ² keeps no call records"
    assert (row["agent_prompt_tokens"], row["agent_completion_tokens"]) == ("10", "2")
    assert (row["user_prompt_tokens"], row["user_completion_tokens"]) == ("20", "4")
    assert row["agent_cost_usd"] == "0.001"
    # τ² writes 0.0 for a model it has no price for: unknown, and so is the trial's total.
    assert row["user_cost_usd"] == "" and row["cost_usd"] == ""
    assert row["judge_prompt_tokens"] == "" and row["judge_cost_usd"] == ""


def test_the_real_tau2_fixture_exports_a_row_per_simulation() -> None:
    path = tau2_fixture()
    rows = parse(invoke_cli("report", str(path), "--format", "csv").stdout)
    results = load_any_results(path)
    assert len(rows) == len(results.simulations)
    assert list(rows[0]) == columns(trial_rows(results))
    assert {r["live_calls"] for r in rows} == {""}
    assert sum(float(r["reward"]) for r in rows) == pytest.approx(
        sum(s.reward_info.reward for s in results.simulations if s.reward_info)
    )
