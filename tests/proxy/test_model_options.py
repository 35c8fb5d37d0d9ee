"""Model options are a typed schema per model family: a typo, a wrong type or an out-of-range value is
one line naming the valid options, raised when the LLMConfig is made, so before any trial."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli

from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.families import family_of
from tauproxy.proxy.model_options import ModelOptionsError
from tauproxy.proxy.scripted import NoOptions, OracleOptions, parse_spec

ORACLE_TAKES = "scripted/oracle takes error_rate (number, 0 to 1), violate (true or false), skip_user (true or false)"


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        ("scripted/oracle?eror_rate=0.3", "unknown option 'eror_rate'"),
        ("scripted/oracle?error_rate=abc", "option error_rate='abc': input should be a valid number"),
        ("scripted/oracle?error_rate=5", "option error_rate='5': input should be less than or equal to 1"),
        ("scripted/oracle?error_rate=-0.1", "option error_rate='-0.1': input should be greater than or equal to 0"),
        ("scripted/oracle?error_rate=nan", "option error_rate='nan': input should be a finite number"),
        ("scripted/oracle?error_rate=", "option error_rate='': input should be a valid number"),
        ("scripted/oracle?violate=maybe", "option violate='maybe': input should be a valid boolean"),
        ("scripted/oracle?error_rate=0.1&error_rate=0.2", "option error_rate is given twice"),
        ("scripted/oracle?violate", "cannot read the options 'violate'"),
    ],
)
def test_a_bad_scripted_option_is_one_line_naming_the_valid_ones(model: str, problem: str) -> None:
    with pytest.raises(ModelOptionsError) as caught:
        parse_spec(model)
    message = str(caught.value)
    assert message.startswith(f"{model}: {problem}") and message.endswith(f"; {ORACLE_TAKES}"), message
    assert "\n" not in message and not caught.value.in_args


def test_scripted_options_are_typed() -> None:
    spec = parse_spec("scripted/oracle?error_rate=0.3&violate=1&skip_user=true")
    assert spec.options == OracleOptions(error_rate=0.3, violate=True, skip_user=True)
    assert parse_spec("scripted/oracle").options == OracleOptions()
    assert parse_spec("scripted/oracle?violate=0").options == OracleOptions(violate=False)
    assert parse_spec("scripted/user").options == NoOptions()


def test_models_that_take_no_options_refuse_them() -> None:
    with pytest.raises(ModelOptionsError, match=r"unknown option 'error_rate'; scripted/user takes no options$"):
        parse_spec("scripted/user?error_rate=0.1")
    with pytest.raises(ModelOptionsError, match=r"unknown option 'temperature'; local/smollm2-135m takes no options"):
        LLMConfig(model="local/smollm2-135m?temperature=1")
    with pytest.raises(ConfigError, match="unknown scripted model"):
        LLMConfig(model="scripted/orcale")


@pytest.mark.parametrize(
    ("model", "args", "problem"),
    [
        ("scripted/oracle", {"temprature": 0.3}, "unknown llm arg 'temprature'"),
        ("scripted/oracle", {"temperature": "hot"}, "llm arg temperature='hot': input should be a valid number"),
        ("scripted/oracle", {"temperature": "0.5"}, "llm arg temperature='0.5': input should be a valid number"),
        ("scripted/user", {"temperature": -1}, "llm arg temperature=-1: input should be greater than or equal to 0"),
        ("local/smollm2-135m", {"top_k": -1}, "llm arg top_k=-1: input should be greater than or equal to 0"),
        ("local/smollm2-135m", {"reasoning_effort": "low"}, "unknown llm arg 'reasoning_effort'"),
        ("openai/gpt-4.1", {"top_p": 2}, "llm arg top_p=2: input should be less than or equal to 1"),
        ("openai/gpt-4.1", {"max_tokens": True}, "llm arg max_tokens=True: input should be a valid integer"),
        ("openai/gpt-4.1", {"seed": 1.5}, "llm arg seed=1.5: input should be a valid integer"),
    ],
)
def test_bad_llm_args_are_one_line_naming_the_valid_ones(model: str, args: dict[str, Any], problem: str) -> None:
    with pytest.raises(ModelOptionsError) as caught:
        LLMConfig(model=model, args=args)
    message = str(caught.value)
    assert message.startswith(problem) and "\n" not in message and caught.value.in_args, message
    assert f"the llm args of {model} take temperature (number, at least 0), top_p (number, 0 to 1)" in message


def test_good_llm_args_pass_unchanged() -> None:
    connection = {"api_base": "http://127.0.0.1:1/v1", "api_key": "sk-x", "timeout": 3, "num_retries": 0}
    for model, args in [
        ("scripted/oracle", {"temperature": 0, "seed": 3, **connection}),
        ("local/smollm2-135m", {"temperature": 0.7, "top_k": 40, "min_p": 0.05, "stop": ["\n"]}),
        # A provider's own args pass on to litellm as given, for the provider to judge.
        ("openai/gpt-4.1", {"temperature": 1, "reasoning_effort": "low", "response_format": {"type": "text"}}),
    ]:
        assert LLMConfig(model=model, args=args).args == args  # checked, never coerced: the key stays


def test_each_family_owns_its_names() -> None:
    assert family_of("scripted/oracle?violate=1").name == "scripted"
    assert family_of("local/smollm2-135m").name == "local"
    assert family_of("openai/gpt-4.1").name == "provider"


@pytest.mark.parametrize("model", ["", " ", "openai/gpt 4", "caf\udce9", "x" * 600])
def test_a_model_name_no_family_could_answer_is_refused(model: str) -> None:
    with pytest.raises(ConfigError) as caught:
        LLMConfig(model=model)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 200


# --- the CLI: one line, exit 2, before any trial ------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--agent-llm", "scripted/oracle?eror_rate=0.3"), "--agent-llm scripted/oracle?eror_rate=0.3: unknown option"),
        (("--agent-llm", "scripted/oracle?error_rate=abc"), "option error_rate='abc'"),
        (("--agent-llm", "scripted/oracle?error_rate=5"), "option error_rate='5'"),
        (("--user-llm", "scripted/user?violate=1"), "--user-llm scripted/user?violate=1: unknown option 'violate'"),
        (("--agent-llm-args", '{"temprature": 0.3}'), "--agent-llm-args: unknown llm arg 'temprature'"),
        (("--judge-llm-args", '{"seed": "7"}'), "--judge-llm-args: llm arg seed='7'"),
    ],
)
@pytest.mark.parametrize("command", ["run", "estimate"])
def test_the_cli_refuses_bad_options_before_any_trial(
    tmp_path: Path, command: str, flags: tuple[str, ...], says: str
) -> None:
    args = [command, "--agent-llm", "scripted/oracle", "--num-tasks", "1", "--save-to", str(tmp_path / "run")]
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    proc = invoke_cli(*args, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert says in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists() and proc.stdout == ""


def test_an_agent_config_with_a_bad_llm_arg_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text('model = "scripted/oracle"\nllm_args = {temprature = 0.3}\n')
    proc = invoke_cli("run", "--agent-config", str(config), "--num-tasks", "1", check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"error: --agent-llm-args or {config}: unknown llm arg 'temprature'")
