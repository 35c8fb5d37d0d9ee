"""Turns `run`-style flags into one RunConfig; `run`, `estimate`, `bisect` and `demo` share it."""

from __future__ import annotations

from tauproxy.engine.agent import AgentPrompt
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import parse_record_mode
from tauproxy.runner.config import RunConfig, load_agent_config, parse_executor, parse_llm_args
from tauproxy_cli.run_flags import RunFlags


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
    executor = parse_executor(flags.executor)
    if flags.ray_address is not None and executor != "ray":
        raise ConfigError("--ray-address needs --executor ray")
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
        executor=executor,
        ray_address=flags.ray_address,
    )
