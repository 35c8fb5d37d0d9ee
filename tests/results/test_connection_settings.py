"""Connection settings (where and how a call is sent) are never written to a run directory, and
changing them never blocks a resume: pointing a dead endpoint at a live one is how a run recovers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli

from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.results.run_dir import RESULTS_FILE, RUN_INFO_FILE, SIMULATIONS_FILE
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute

DEAD = {"api_base": "http://127.0.0.1:9/v1", "timeout": 3, "temperature": 0}
LIVE = {"api_base": "http://127.0.0.1:8/v1", "timeout": 60, "num_retries": 5, "temperature": 0}


def run_args(save_to: Path, agent_args: dict[str, Any]) -> list[str]:
    return [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--user-llm",
        "scripted/user",
        "--num-trials",
        "2",
        "--num-tasks",
        "3",
        "--save-to",
        str(save_to),
        "--agent-llm-args",
        json.dumps(agent_args),
        "--user-llm-args",
        json.dumps(agent_args),
    ]


def config(save_to: Path, agent_args: dict[str, Any]) -> RunConfig:
    return RunConfig(
        domain="mock",
        agent=LLMConfig(model="scripted/oracle", args=agent_args),
        user=LLMConfig(model="scripted/user"),
        num_trials=2,
        num_tasks=3,
        save_to=save_to,
    )


def keep_first_lines(run_dir: Path, count: int) -> list[str]:
    lines = (run_dir / SIMULATIONS_FILE).read_text().splitlines(keepends=True)
    (run_dir / SIMULATIONS_FILE).write_text("".join(lines[:count]))
    (run_dir / RESULTS_FILE).unlink()
    return lines[:count]


def test_connection_settings_are_never_written(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    invoke_cli(*run_args(run_dir, DEAD))
    for name in (RUN_INFO_FILE, RESULTS_FILE):
        text = (run_dir / name).read_text()
        assert "api_base" not in text and "127.0.0.1:9" not in text, name
        info = json.loads(text)
        info = info.get("info", info)
        for role in ("agent_info", "user_info"):
            assert info[role]["llm_args"] == {"temperature": 0}, (name, role)


def test_a_resume_may_change_connection_settings(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    invoke_cli(*run_args(run_dir, DEAD))
    kept = keep_first_lines(run_dir, 2)

    invoke_cli(*run_args(run_dir, LIVE))
    lines = (run_dir / SIMULATIONS_FILE).read_text().splitlines(keepends=True)
    assert lines[:2] == kept and len(lines) == 6, "only the four unfinished trials ran"
    assert len(json.loads((run_dir / RESULTS_FILE).read_text())["simulations"]) == 6


def test_a_run_json_that_still_holds_connection_settings_resumes(tmp_path: Path) -> None:
    """As tauproxy wrote run.json before connection settings were kept out of it."""
    run_dir = tmp_path / "run"
    execute(config(run_dir, DEAD))
    info = json.loads((run_dir / RUN_INFO_FILE).read_text())
    info["agent_info"]["llm_args"] = {**DEAD, "api_key": "sk-old", "base_url": "http://old/v1"}
    (run_dir / RUN_INFO_FILE).write_text(json.dumps(info))
    keep_first_lines(run_dir, 4)

    resumed = execute(config(run_dir, LIVE))
    assert len(resumed.new_runs) == 2
    assert "api_base" not in (run_dir / RUN_INFO_FILE).read_text(), "rewritten without them"


def test_a_changed_sampling_arg_still_refuses_to_resume(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    execute(config(run_dir, DEAD))
    with pytest.raises(ConfigError, match=r"agent_info differ"):
        execute(config(run_dir, {**LIVE, "temperature": 0.5}))
