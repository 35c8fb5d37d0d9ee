"""Turns `run`-style flags into one RunConfig; `run`, `estimate`, `bisect` and `demo` share it.

The options that are RunConfig fields pass through as they are; the flag-only ones are parsed or merged
here, each into the fields its `sets` names in run_flags.py.
"""

from __future__ import annotations

from typing import Any

from tauproxy.engine.agent import AgentPrompt
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import parse_record_mode
from tauproxy.runner.config import RunConfig, load_agent_config, parse_executor, parse_llm_args
from tauproxy_cli.run_flags import RunFlags, as_is_options


def build_run_config(flags: RunFlags) -> RunConfig:
    agent = _agent_fields(flags)
    executor = parse_executor(flags.executor)
    if flags.ray_address is not None and executor != "ray":
        raise ConfigError("--ray-address needs --executor ray")
    return RunConfig(
        **{name: getattr(flags, name) for name in as_is_options()},
        **agent,
        user=LLMConfig(model=flags.user_llm, args=parse_llm_args(flags.user_llm_args, "--user-llm-args")),
        judge=LLMConfig(model=flags.judge_llm, args=parse_llm_args(flags.judge_llm_args, "--judge-llm-args")),
        task_ids=_split_task_ids(flags.task_ids),
        record_mode=parse_record_mode(flags.record_mode),
        executor=executor,
    )


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
    return {"agent": LLMConfig(model=model, args=agent_args), "agent_prompt": prompt}


def _split_task_ids(items: list[str] | None) -> list[str] | None:
    if not items:
        return None
    return [t.strip() for item in items for t in item.split(",") if t.strip()]
