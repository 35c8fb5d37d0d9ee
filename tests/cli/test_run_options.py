"""The run options are declared once (RunFlags) and agree with RunConfig, the typer commands and each other."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from tauproxy.engine.llm_config import LLMConfig
from tauproxy.runner.config import RunConfig
from tauproxy_cli.bisection import NOT_FOR_BISECT
from tauproxy_cli.estimate import NOT_FOR_ESTIMATE
from tauproxy_cli.flag import flag
from tauproxy_cli.main import app
from tauproxy_cli.run_flags import RunFlags, RunOption, as_is_options, run_options
from tauproxy_cli.run_options import with_run_options
from tauproxy_cli.run_setup import build_run_config

WIDE = {"COLUMNS": "250"}  # so rich wraps no option name or help text in `--help`
AGENT = "scripted/oracle"
OPTIONS = run_options()
BY_NAME = {o.name: o for o in OPTIONS}


def base_flags() -> RunFlags:
    return RunFlags(agent_llm=AGENT)  # the agent model is the one option without a default


def test_every_run_config_field_is_set_by_some_option() -> None:
    decided = {name for o in OPTIONS for name in o.config_fields}
    assert decided == set(RunConfig.model_fields)


def test_as_is_options_have_run_config_defaults_and_types() -> None:
    for name in as_is_options():
        config_field = RunConfig.model_fields[name]
        option = BY_NAME[name]
        assert option.annotation == config_field.annotation, name
        if not config_field.is_required():
            assert option.default == config_field.get_default(call_default_factory=True), name


def test_option_minimums_are_run_config_bounds() -> None:
    for name in as_is_options():
        bounds = [m.ge for m in RunConfig.model_fields[name].metadata if hasattr(m, "ge")]
        option = BY_NAME[name]
        if option.spec.min is not None:
            assert bounds == [option.spec.min], name
        elif option.annotation is int:
            assert not bounds, f"{name}: RunConfig bounds it, so the flag should say so in --help"


def test_option_maximums_are_run_config_limits() -> None:
    for name in as_is_options():
        limits = [m.le for m in RunConfig.model_fields[name].metadata if hasattr(m, "le")]
        option = BY_NAME[name]
        assert limits == ([] if option.spec.max is None else [option.spec.max]), name
        if option.spec.max is not None:
            assert f"at most {option.spec.max}" in option.spec.help, name


def test_default_flags_build_the_default_run_config() -> None:
    assert build_run_config(base_flags()) == RunConfig(domain=RunFlags().domain, agent=LLMConfig(model=AGENT))


def sample_changes(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """For every option, flags that move it off its default (with what the option needs beside it)."""
    agent_toml = tmp_path / "agent.toml"
    agent_toml.write_text('model = "unused"\nllm_args = {temperature = 0.5}\nsystem_prompt = "Be brief."\n')
    return {
        "domain": {"domain": "airline"},
        "agent_llm": {"agent_llm": "scripted/silent"},
        "agent_llm_args": {"agent_llm_args": '{"temperature": 0}'},
        "agent_config": {"agent_config": agent_toml},
        "agent_impl": {"agent_impl": "my_agents:make"},
        "user_llm": {"user_llm": "scripted/silent"},
        "user_llm_args": {"user_llm_args": '{"seed": 1}'},
        "judge_llm": {"judge_llm": "scripted/silent"},
        "judge_llm_args": {"judge_llm_args": '{"seed": 1}'},
        "judge_window_size": {"judge_window_size": 8},
        "judge_system_prompt": {"judge_system_prompt": "Be strict."},
        "num_trials": {"num_trials": 3},
        "num_tasks": {"num_tasks": 2},
        "task_ids": {"task_ids": ["a,b"]},
        "tasks_file": {"tasks_file": tmp_path / "tasks.json"},
        "seed": {"seed": 7},
        "max_concurrency": {"max_concurrency": 4},
        "max_steps": {"max_steps": 20},
        "max_errors": {"max_errors": 2},
        "solo": {"solo": True},
        "save_to": {"save_to": tmp_path / "run"},
        "cassette": {"cassette": tmp_path / "cassette"},
        "record_mode": {"record_mode": "replay"},
        "prices": {"prices": tmp_path / "prices.yaml"},
        "max_cost": {"max_cost": 1.5},
        "max_infra_errors": {"max_infra_errors": 3},
        "executor": {"executor": "ray"},
        "tau2_orchestrator": {"tau2_orchestrator": "tau2"},
        "agent": {"agent": "llm_agent_gt"},
        "user": {"user": "dummy_user"},
        "task_set_name": {"task_set_name": "telecom"},
        "enforce_communication_protocol": {"enforce_communication_protocol": True},
        "max_retries": {"max_retries": 0},
        "ray_address": {"ray_address": "ray://head:10001", "executor": "ray"},
        "against": {"against": tmp_path, "until_decided": True, "max_cost": 1.0},
        "until_decided": {"until_decided": True, "against": tmp_path, "max_cost": 1.0},
        "max_drop": {"max_drop": 0.1},
        "confidence": {"confidence": 0.9},
        "undecided": {"undecided": "good"},
        "full": {"full": True},
    }


def test_each_option_reaches_exactly_the_config_fields_it_declares(tmp_path: Path) -> None:
    samples = sample_changes(tmp_path)
    assert set(samples) == set(BY_NAME), "give every option a sample change"
    default = build_run_config(base_flags())
    for name, changes in samples.items():
        config = build_run_config(replace(base_flags(), **changes))
        changed = {f for f in RunConfig.model_fields if getattr(config, f) != getattr(default, f)}
        expected = {field for option in changes for field in BY_NAME[option].config_fields}
        assert changed == expected, name


def test_task_ids_split_on_commas() -> None:
    config = build_run_config(replace(base_flags(), task_ids=["a,b", " c ", ","]))
    assert config.task_ids == ["a", "b", "c"]


def captured_app(seen: list[tuple[RunFlags, bool]]) -> typer.Typer:
    """An app whose one command records what `with_run_options` hands it, instead of running."""
    probe = typer.Typer()

    @probe.command()
    @with_run_options
    def plan(flags: RunFlags, json_output: Annotated[bool, flag("--json")] = False) -> None:
        seen.append((flags, json_output))

    return probe


def test_typer_defaults_are_the_declared_defaults() -> None:
    seen: list[tuple[RunFlags, bool]] = []
    result = CliRunner().invoke(captured_app(seen), [])
    assert result.exit_code == 0, result.output
    assert seen == [(RunFlags(), False)]


def test_flags_reach_the_command() -> None:
    seen: list[tuple[RunFlags, bool]] = []
    args = [
        "--seed",
        "7",
        "--solo",
        "--task-ids",
        "a,b",
        "--task-ids",
        "c",
        "--max-cost",
        "2.5",
        "--agent-config",
        "agent.toml",
        "--json",
    ]
    result = CliRunner().invoke(captured_app(seen), args)
    assert result.exit_code == 0, result.output
    assert seen == [
        (RunFlags(seed=7, solo=True, task_ids=["a,b", "c"], max_cost=2.5, agent_config=Path("agent.toml")), True)
    ]


def test_minimums_are_enforced_by_the_flags() -> None:
    result = CliRunner().invoke(captured_app([]), ["--num-trials", "0"])
    assert result.exit_code == 2


def test_bool_options_are_plain_flags() -> None:
    for option in OPTIONS:
        if option.annotation is bool:
            result = CliRunner().invoke(captured_app([]), ["--no-" + option.name.replace("_", "-")])
            assert result.exit_code == 2, option.name


def help_line(output: str, flag_name: str) -> str:
    lines = [line for line in output.splitlines() if line.strip("│ ").startswith(f"{flag_name} ")]
    assert len(lines) == 1, f"{flag_name} not listed once in:\n{output}"
    return lines[0]


def default_shown(option: RunOption) -> str | None:
    if option.default is None or option.annotation is bool:
        return None
    return f"[default: {option.default}]"


LEFT_OUT = {"run": frozenset[str](), "estimate": NOT_FOR_ESTIMATE, "bisect": NOT_FOR_BISECT}


@pytest.mark.parametrize("command", ["run", "estimate", "bisect"])
def test_help_lists_every_option_the_command_takes(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    for option in OPTIONS:
        flag_name = "--" + option.name.replace("_", "-")
        if option.name in LEFT_OUT[command]:
            assert not [line for line in result.output.splitlines() if line.strip("│ ").startswith(f"{flag_name} ")]
            refused = CliRunner().invoke(app, [command, flag_name, "x"])
            assert refused.exit_code == 2 and "No such option" in refused.output, refused.output
            continue
        line = help_line(result.output, flag_name)
        assert option.spec.help in line
        shown = default_shown(option)
        if shown is not None:
            assert shown in line
        if option.annotation is bool:
            assert "<bool>" not in line and "--no-" not in line
    for panel in {o.spec.panel for o in OPTIONS if o.name not in LEFT_OUT[command]}:
        assert panel in result.output


def test_cli_start_does_not_import_run_config() -> None:
    """The reason RunFlags reads its defaults from tiny modules: `--help` must not import the engine."""
    code = (
        "import sys, tauproxy_cli.main; "
        "print(sorted(m for m in ('tauproxy.runner.config', 'tauproxy.engine.orchestrator', 'litellm') "
        "if m in sys.modules))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert shown.stdout.strip() == "[]"
