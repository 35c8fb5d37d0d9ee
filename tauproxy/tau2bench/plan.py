"""What a run of a `tau2/` domain checks before its first trial, and its seeds.

τ²-bench's domain source (tauproxy/sources/tau2.py) calls in here; this module takes plain values,
not the run's config, so it stays below the sources and the runner.
"""

from __future__ import annotations

import hashlib
import random

from tauproxy.domain.pack import DomainPack
from tauproxy.errors import ConfigError
from tauproxy.tau2bench.domain import load_catalog, load_tau2_pack
from tauproxy.tau2bench.peer import engine_name
from tauproxy.tau2bench.settings import (
    DUMMY_USER,
    GT_AGENT,
    LLM_AGENT,
    OUR_ORCHESTRATOR,
    SOLO_AGENT,
    TAU2_ORCHESTRATOR,
    Tau2AgentName,
    Tau2Orchestrator,
    Tau2Settings,
)

# τ²'s seeds are drawn from [0, TAU2_SEED_MAX] (tau2/run.py: random.randint(0, 1000000) per trial).
TAU2_SEED_MAX = 1_000_000
# The executors a τ²-bench trial runs on (a Ray worker loads the domain from its own installed τ²).
TAU2_EXECUTORS = ("thread", "ray")
# Model names that only tauproxy's own engine can answer (they need our task format or a typed request).
OWN_ENGINE_PREFIXES = ("scripted/", "local/")


def tau2_trial_seeds(run_seed: int, num_trials: int) -> list[int]:
    """`tau2 run`'s per-trial seeds: seeded with the run seed (default 300), one draw per trial, and
    every task of a trial shares it. Drawn from a private RNG with the same algorithm as τ²'s global
    one (`random.seed(seed)` then `random.randint` per trial), so nothing global is touched."""
    rng = random.Random(run_seed)
    return [rng.randint(0, TAU2_SEED_MAX) for _ in range(num_trials)]


def check_tau2_run(
    *,
    agent_model: str,
    user_model: str,
    solo: bool,
    custom_prompt: bool,
    agent_impl: str | None,
    tasks_file: object | None,
    executor: str,
    judge_model: str | None = None,
) -> None:
    """What a τ²-bench run cannot do, as one line each, before anything is loaded."""
    if agent_impl:
        raise ConfigError("--agent-impl runs on tauproxy's engine; a tau2/ domain runs τ²-bench's own agent")
    if custom_prompt:
        raise ConfigError("a custom agent prompt needs tauproxy's engine; a tau2/ domain uses τ²-bench's own prompt")
    if tasks_file is not None:
        raise ConfigError(
            "--tasks-file is for tauproxy's packs; a tau2/ domain's tasks come from the package "
            "(pick a split with tau2/<domain>:<split>, tasks with --task-ids)"
        )
    if executor not in TAU2_EXECUTORS:
        raise ConfigError(f"tau2/ domains run on the {' or '.join(TAU2_EXECUTORS)} executor, not {executor!r}")
    roles = [("agent", agent_model)] + ([] if solo else [("user", user_model)])
    roles += [("judge", judge_model)] if judge_model is not None else []
    for role, model in roles:
        if model.startswith(OWN_ENGINE_PREFIXES):
            raise ConfigError(
                f"the {role} model {model!r} knows only tauproxy's own task format; a tau2/ domain needs a "
                "litellm model (e.g. openai/gpt-4.1, or openai/<name> with an api_base)"
            )


def check_implementations(settings: Tau2Settings) -> None:
    """`--agent` and `--user` combinations `tau2 run` cannot run, as one line each."""
    if settings.user_implementation == DUMMY_USER and not settings.solo:
        raise ConfigError(
            f"--user {DUMMY_USER} plays with τ²'s solo agent only (--agent {SOLO_AGENT}, or --solo); "
            f"`tau2 run --agent {settings.agent_implementation} --user {DUMMY_USER}` fails the same way"
        )


def load_for_run(
    name: str,
    agent: Tau2AgentName = LLM_AGENT,
    task_set: str | None = None,
    task_ids: list[str] | None = None,
    num_tasks: int | None = None,
) -> DomainPack:
    """The runner's pack of a τ²-bench domain, its tasks from `--task-set-name` when given. For τ²'s
    solo and ground-truth agents, the tasks `tau2 run --agent ...` runs: the ones chosen (`--task-ids`,
    then the first `--num-tasks`) that the agent accepts, in that order, so `--num-tasks 5` may leave
    fewer, as in τ². A task named by id that the agent does not accept is refused in one line."""
    pack = load_tau2_pack(name, task_set)
    if agent not in (SOLO_AGENT, GT_AGENT):
        return pack
    from tau2.agent.llm_agent import LLMGTAgent, LLMSoloAgent

    accepts = LLMSoloAgent if agent == SOLO_AGENT else LLMGTAgent
    catalog = load_catalog(name, task_set)
    chosen = [task for task in pack.tasks if not task_ids or task.id in task_ids][:num_tasks]
    refused = [task.id for task in chosen if task_ids and not accepts.check_valid_task(catalog.task(task.id))]
    if refused:
        raise ConfigError(
            f"--agent {agent} does not run task(s) {', '.join(refused)}: τ²'s agent accepts only the tasks its "
            "check_valid_task passes (`tau2 run` skips the others)"
        )
    pack.tasks = [task for task in chosen if accepts.check_valid_task(catalog.task(task.id))]
    return pack


def agent_prompt_sha256(name: str) -> str:
    return hashlib.sha256(load_catalog(name).agent_system_prompt.encode()).hexdigest()


def run_orchestrator(settings: Tau2Settings) -> Tau2Orchestrator:
    """What runs a run's trials: τ²'s own for what tauproxy's does not run (another agent or user, the
    repetition judge: tau2bench/trial.py), whatever `--tau2-orchestrator` says. A task with a message
    history runs on τ²'s too; the run info names the run's choice."""
    return TAU2_ORCHESTRATOR if settings.needs_tau2_orchestrator() else OUR_ORCHESTRATOR


def engine(orchestrator: str, task_set: str | None = None) -> str:
    """Run info's engine: τ²'s version, the orchestrator that ran the trials, and a task set that is not
    the domain's own (`--task-set-name`)."""
    named = f", task set {task_set}" if task_set else ""
    return f"{engine_name()}, {orchestrator} orchestrator{named}"
