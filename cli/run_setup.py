"""Turns `run`-style flags into one RunConfig; `run` and `estimate` share it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tauproxy.engine.agent import AgentPrompt
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.runner.config import RunConfig, load_agent_config, parse_llm_args, parse_record_mode


@dataclass
class RunFlags:
    domain: str = "mock"
    agent_llm: str | None = None
    agent_llm_args: str | None = None
    agent_config: Path | None = None
    agent_impl: str | None = None
    user_llm: str = "scripted/user"
    user_llm_args: str | None = None
    judge_llm: str = "scripted/judge"
    judge_llm_args: str | None = None
    num_trials: int = 1
    num_tasks: int | None = None
    task_ids: list[str] | None = None
    tasks_file: Path | None = None
    seed: int = 300
    max_concurrency: int = 1
    max_steps: int = 200
    max_errors: int = 10
    solo: bool = False
    save_to: Path | None = None
    cassette: Path | None = None
    record_mode: str = "auto"
    prices: Path | None = None
    max_cost: float | None = None


def build_run_config(flags: RunFlags) -> RunConfig:
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
    task_ids = None
    if flags.task_ids:
        task_ids = [t.strip() for item in flags.task_ids for t in item.split(",") if t.strip()]
    return RunConfig(
        domain=flags.domain,
        agent=LLMConfig(model=model, args=agent_args),
        agent_prompt=prompt,
        agent_impl=flags.agent_impl,
        user=LLMConfig(model=flags.user_llm, args=parse_llm_args(flags.user_llm_args, "--user-llm-args")),
        judge=LLMConfig(model=flags.judge_llm, args=parse_llm_args(flags.judge_llm_args, "--judge-llm-args")),
        num_trials=flags.num_trials,
        num_tasks=flags.num_tasks,
        task_ids=task_ids,
        tasks_file=flags.tasks_file,
        seed=flags.seed,
        max_concurrency=flags.max_concurrency,
        max_steps=flags.max_steps,
        max_errors=flags.max_errors,
        solo=flags.solo,
        save_to=flags.save_to,
        cassette=flags.cassette,
        record_mode=parse_record_mode(flags.record_mode),
        prices=flags.prices,
        max_cost=flags.max_cost,
    )
