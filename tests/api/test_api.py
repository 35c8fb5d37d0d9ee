"""tauproxy.api: run a config, load it back (ours and τ²'s), compare and check, export rows."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from tauproxy import api
from tauproxy.errors import ConfigError, ReplayMissError
from tauproxy.reports.regression import Verdict
from tauproxy.reports.trial_rows import columns

SLIPS = "scripted/oracle?error_rate=0.3"


def slips(base: Path) -> api.RunConfig:
    return api.run_config(
        "mock",
        agent=SLIPS,
        num_tasks=4,
        num_trials=3,
        seed=11,
        cassette=base / "cassette",
        save_to=base / "run",
        record_mode="auto",
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[api.RunReport, Path]:
    """4 mock tasks x 3 trials with seeded slips, recorded into a cassette and saved to a run directory."""
    base = tmp_path_factory.mktemp("api")
    return api.run(slips(base)), base


def test_run_returns_the_report_rows_and_cost(recorded: tuple[api.RunReport, Path]) -> None:
    report, _ = recorded
    assert isinstance(report, api.RunReport)
    assert list(report.pass_hat_k) == [1, 2, 3]
    assert report.pass_hat_k == report.summary.pass_hat_k and all(isinstance(k, int) for k in report.pass_hat_k)
    assert report.pass_hat_k[3] <= report.pass_hat_k[1]
    for k, (low, high) in report.pass_hat_k_ci.items():
        assert low <= report.pass_hat_k[k] <= high
    assert report.new_trials == 12 and report.stop is None
    assert [(row.task, row.trial) for row in report.rows] == [
        (sim.task_id, sim.trial) for sim in report.results.simulations
    ]
    passed = [row.reward == 1.0 for row in report.rows]
    assert sum(passed) / len(passed) == pytest.approx(report.pass_hat_k[1])
    assert report.cost.live_usd == 0.0, "scripted models are free by declaration, a known $0"
    assert report.summary.calls.live == sum(row.live_calls or 0 for row in report.rows) > 0


def test_load_run_reads_it_back_and_a_strict_replay_matches(recorded: tuple[api.RunReport, Path]) -> None:
    report, base = recorded
    loaded = api.load_run(base / "run")
    assert loaded.pass_hat_k == report.pass_hat_k
    assert [row.reward for row in loaded.rows] == [row.reward for row in report.rows]
    assert loaded.new_trials == 0
    progress: list[int] = []
    resumed = api.run(slips(base), progress=lambda _sim, done, _total: progress.append(done))
    assert resumed.new_trials == 0 and progress == [] and resumed.pass_hat_k == report.pass_hat_k

    replay = api.run(
        api.run_config(
            "mock", agent=SLIPS, num_tasks=4, num_trials=3, seed=11, cassette=base / "cassette", record_mode="none"
        )
    )  # vcrpy's name
    assert replay.summary.calls.live == 0 and replay.summary.calls.replayed == report.summary.calls.live
    assert [row.reward for row in replay.rows] == [row.reward for row in report.rows]
    assert all(row.live_calls == 0 for row in replay.rows)


def test_a_changed_agent_misses_in_strict_replay_with_the_diff(recorded: tuple[api.RunReport, Path]) -> None:
    _, base = recorded
    changed = api.run_config(
        "mock",
        agent="scripted/oracle",
        num_tasks=1,
        seed=11,
        cassette=base / "cassette",
        record_mode=api.RecordMode.REPLAY,
    )
    with pytest.raises(ReplayMissError, match="replay miss") as miss:
        api.run(changed)
    assert "model" in str(miss.value), "the miss names what differs"


def test_compare_and_check(recorded: tuple[api.RunReport, Path], tmp_path: Path) -> None:
    report, base = recorded
    same = api.compare(report, base / "run")
    assert [run.label for run in same.runs] == [str(base / "run"), "candidate"]
    comparison = same.comparisons[0].comparison
    assert comparison is not None and comparison.tasks == 4
    assert comparison.differences["pass^1"].difference == 0.0

    seen: list[tuple[int, int]] = []
    silent = api.run(
        api.run_config("mock", agent="scripted/silent", num_tasks=4, num_trials=3, seed=11),
        progress=lambda _sim, done, total: seen.append((done, total)),
    )
    assert seen == [(n, 12) for n in range(1, 13)]
    worse = api.compare(silent, report).comparisons[0].comparison
    assert worse is not None and worse.differences["pass^1"].difference < 0
    assert worse.differences["pass^1"].candidate == 0.0

    assert api.check(report, report, max_drop=0.05).verdict is Verdict.GOOD
    verdict = api.check(silent, report, max_drop=0.05)
    assert verdict.verdict in (Verdict.BAD, Verdict.UNDECIDED) and verdict.drop is not None and verdict.drop > 0


def test_run_config_refuses_bad_values_in_one_line() -> None:
    with pytest.raises(ConfigError, match="num_trials"):
        api.run_config("mock", agent=SLIPS, num_trials=0)
    with pytest.raises(ConfigError, match="unknown record mode 'sometimes'"):
        api.run_config("mock", agent=SLIPS, record_mode="sometimes")
    config = api.run_config("mock", agent=api.LLMConfig(model=SLIPS, args={"temperature": 0}), user="scripted/user")
    assert config.agent.args == {"temperature": 0} and config.user.model == "scripted/user"


def test_csv_and_dataframe_have_the_same_columns(recorded: tuple[api.RunReport, Path]) -> None:
    report, _ = recorded
    out = io.StringIO()
    report.write_csv(out)
    header = out.getvalue().splitlines()[0].split(",")
    assert header == columns(report.rows)
    pytest.importorskip("pandas")
    frame = report.to_dataframe()
    assert list(frame.columns) == header and len(frame) == len(report.rows)
    assert frame["reward"].tolist() == [row.reward for row in report.rows]


def test_to_dataframe_without_pandas_says_what_to_install(
    recorded: tuple[api.RunReport, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ConfigError, match="pip install pandas"):
        api.to_dataframe(recorded[0].rows)


def test_load_run_reads_a_tau2_file(tmp_path: Path) -> None:
    role = {"implementation": "x", "llm": "openai/gpt-4.1", "llm_args": {}}
    sims = [
        {
            "id": f"s{trial}",
            "task_id": "t1",
            "trial": trial,
            "seed": trial,
            "termination_reason": "user_stop",
            "agent_cost": 0.001,
            "user_cost": 0.001,
            "messages": [],
            "reward_info": {"reward": float(trial == 0)},
        }
        for trial in range(2)
    ]
    document = {
        "timestamp": "t",
        "tasks": [],
        "simulations": sims,
        "info": {
            "num_trials": 2,
            "seed": 300,
            "user_info": role,
            "agent_info": role,
            "environment_info": {"domain_name": "airline"},
        },
    }
    path = tmp_path / "airline.json"
    path.write_text(json.dumps(document))
    report = api.load_run(str(path))
    assert report.summary.origin == "tau2"
    assert report.pass_hat_k == {1: 0.5, 2: 0.0}
    assert [row.live_calls for row in report.rows] == [None, None]
    with pytest.raises(ConfigError, match="no such file"):
        api.load_run(tmp_path / "nowhere.json")


@pytest.mark.parametrize("mode", ["replay", "none", "once"])
def test_strict_replay_without_a_cassette_refuses_before_any_call(mode: str, tmp_path: Path) -> None:
    """Strict replay never goes live: with no cassette it names the flag to add, and no trial runs."""
    config = api.run_config(
        "mock", agent="scripted/oracle", user="scripted/user", num_tasks=1, record_mode=mode, save_to=tmp_path / "run"
    )
    with pytest.raises(ConfigError, match="add --cassette DIR"):
        api.run(config)
    assert not (tmp_path / "run").exists(), "nothing ran, nothing was written"
