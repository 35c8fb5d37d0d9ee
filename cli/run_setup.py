"""Turns `run`-style flags into one RunConfig; `run`, `estimate`, `bisect` and `demo` share it.

The options that are RunConfig fields pass through as they are; the flag-only ones are parsed or merged
here, each into the fields its `sets` names in run_flags.py.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from tauproxy.engine.agent import AgentPrompt
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import parse_record_mode
from tauproxy.runner.config import RunConfig, load_agent_config, parse_executor, parse_llm_args
from tauproxy_cli.run_flags import RunFlags, as_is_options, run_options


def build_run_config(flags: RunFlags) -> RunConfig:
    agent = _agent_fields(flags)
    executor = parse_executor(flags.executor)
    if flags.ray_address is not None and executor != "ray":
        raise ConfigError("--ray-address needs --executor ray")
    try:
        return RunConfig(
            **{name: getattr(flags, name) for name in as_is_options()},
            **agent,
            user=_llm(flags.user_llm, parse_llm_args(flags.user_llm_args, "--user-llm-args"), "--user-llm-args"),
            judge=_llm(flags.judge_llm, parse_llm_args(flags.judge_llm_args, "--judge-llm-args"), "--judge-llm-args"),
            task_ids=_split_task_ids(flags.task_ids),
            record_mode=parse_record_mode(flags.record_mode),
            executor=executor,
        )
    except ValidationError as exc:
        raise ConfigError(_flag_error(exc.errors()[0])) from None


def _flag_error(error: ErrorDetails) -> str:
    """One line naming the flag behind a RunConfig field that refused its value."""
    field = str(error["loc"][0]) if error["loc"] else ""
    flag = next((f"--{o.name.replace('_', '-')}" for o in run_options() if field in o.config_fields), field)
    shown = _number(error.get("input"))
    ctx = error.get("ctx", {})
    if error["type"] == "less_than_equal":
        return f"{flag} {shown} is over the limit of {_number(ctx['le'])}"
    if error["type"] == "greater_than_equal":
        return f"{flag} {shown} is below the minimum of {_number(ctx['ge'])}"
    if error["type"] == "finite_number":
        return f"{flag} {shown}: give a finite number"
    if error["type"] == "value_error":
        return f"{flag} {ctx['error']}"
    return f"{flag} {shown}: {error['msg']}"


def _number(value: Any) -> str:
    """-5.0 as -5, as it was typed."""
    return str(int(value)) if isinstance(value, float) and math.isfinite(value) and value.is_integer() else str(value)


def _agent_fields(flags: RunFlags) -> dict[str, Any]:
    """`agent` and `agent_prompt`: the flags win over the agent config file, args merged key by key."""
    agent_args = parse_llm_args(flags.agent_llm_args, "--agent-llm-args")
    prompt = AgentPrompt()
    model = flags.agent_llm
    if flags.agent_config is not None:
        config_file = load_agent_config(flags.agent_config)
        model = model or config_file.model
        agent_args = {**config_file.llm_args, **agent_args}
        prompt = config_file.prompt()
    if model is None:
        raise ConfigError("no agent model: pass --agent-llm or --agent-config")
    source = "--agent-llm-args" if flags.agent_config is None else f"--agent-llm-args or {flags.agent_config}"
    return {"agent": _llm(model, agent_args, source), "agent_prompt": prompt}


def _llm(model: str, args: dict[str, Any], source: str) -> LLMConfig:
    """A role's model and args, its connection settings (api_base, timeout, ...) checked now: a bad one
    is a one-line error here, not a traceback when the first call is made."""
    config = LLMConfig(model=model, args=args)
    try:
        config.connection()
    except ValidationError as exc:
        first = exc.errors()[0]
        # The value is not shown: it may be a key.
        raise ConfigError(f"{source}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    return config


def _split_task_ids(items: list[str] | None) -> list[str] | None:
    if not items:
        return None
    return [t.strip() for item in items for t in item.split(",") if t.strip()]
