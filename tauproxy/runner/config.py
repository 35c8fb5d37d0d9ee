"""One config object for a run; the CLI builds it from flags and an optional agent TOML file."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tauproxy.engine.agent import AgentPrompt, PromptMode
from tauproxy.engine.limits import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import RecordMode
from tauproxy.runner.defaults import (
    DEFAULT_EXECUTOR,
    DEFAULT_JUDGE_LLM,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_INFRA_ERRORS,
    DEFAULT_NUM_TRIALS,
    DEFAULT_RECORD_MODE,
    DEFAULT_SEED,
    DEFAULT_USER_LLM,
    MAX_CONCURRENCY_LIMIT,
    NUM_TRIALS_LIMIT,
    PLANNED_TRIALS_LIMIT,
)
from tauproxy.sources.registry import validate_source_options
from tauproxy.validation import first_problem

# Where trials run: threads in this process, or Ray tasks (a local instance or a cluster).
Executor = Literal["thread", "ray"]


def parse_executor(value: str) -> Executor:
    return cast(Executor, _choice(value, get_args(Executor), "executor"))


def _choice(value: str, choices: tuple[str, ...], what: str) -> str:
    value = value.strip().lower()
    if value in choices:
        return value
    raise ConfigError(f"unknown {what} {value!r} (choose from: {', '.join(choices)})")


class AgentConfig(BaseModel):
    """An agent config file (TOML): model, llm args and a system prompt that wraps or replaces ours."""

    model_config = ConfigDict(extra="forbid")

    model: str
    llm_args: dict[str, Any] = Field(default_factory=dict)
    system_prompt: str | None = None
    system_prompt_file: Path | None = None
    prompt_mode: PromptMode = "wrap"
    name: str | None = None

    def prompt(self) -> AgentPrompt:
        text = self.system_prompt
        if self.system_prompt_file is not None:
            try:
                text = self.system_prompt_file.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"{self.system_prompt_file}: cannot read system prompt: {exc.strerror}") from None
            except UnicodeDecodeError as exc:
                raise ConfigError(
                    f"{self.system_prompt_file}: cannot read system prompt: not UTF-8 text (byte {exc.start})"
                ) from None
        return AgentPrompt(custom=text, mode=self.prompt_mode)


def load_agent_config(path: Path) -> AgentConfig:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read agent config: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not an agent config: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    raw = raw.get("agent", raw)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: field agent: expected a table (model, llm_args, system_prompt, ...)")
    if isinstance(raw.get("system_prompt_file"), str):
        raw["system_prompt_file"] = str((path.parent / raw["system_prompt_file"]).resolve())
    try:
        return AgentConfig.model_validate(raw)
    except ValidationError as exc:
        field, message = first_problem(exc, "config")
        raise ConfigError(f"{path}: field {field}: {message}") from None


def parse_llm_args(text: str | None, flag: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{flag}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ConfigError(f"{flag}: not valid JSON (nested too deeply)") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag}: expected a JSON object")
    return value


class RunConfig(BaseModel):
    """Everything a run needs. Built once; passed down whole instead of long argument lists."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    domain: str
    agent: LLMConfig
    agent_prompt: AgentPrompt = Field(default_factory=AgentPrompt)
    # "module:callable" taking an AgentSetup and returning an Agent; None: the built-in LLM agent.
    agent_impl: str | None = Field(default=None, min_length=1)  # "": a forgotten name, not the built-in agent
    user: LLMConfig = Field(default_factory=lambda: LLMConfig(model=DEFAULT_USER_LLM))
    judge: LLMConfig = Field(default_factory=lambda: LLMConfig(model=DEFAULT_JUDGE_LLM))
    num_trials: int = Field(default=DEFAULT_NUM_TRIALS, ge=1, le=NUM_TRIALS_LIMIT)
    num_tasks: int | None = Field(default=None, ge=1)
    task_ids: list[str] | None = None
    tasks_file: Path | None = None
    seed: int = DEFAULT_SEED
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, le=MAX_CONCURRENCY_LIMIT)
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1)
    max_errors: int = Field(default=DEFAULT_MAX_ERRORS, ge=1)
    save_to: Path | None = None
    cassette: Path | None = None
    record_mode: RecordMode = RecordMode(DEFAULT_RECORD_MODE)
    prices: Path | None = None
    max_cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    max_infra_errors: int = Field(default=DEFAULT_MAX_INFRA_ERRORS, ge=1)
    solo: bool = False
    # Options of the domain's source, by name (τ²-bench's: tau2_orchestrator, judge_window_size,
    # judge_system_prompt); each is checked by its source's own model (tauproxy/sources/registry.py).
    source_options: dict[str, Any] = Field(default_factory=dict)
    # Under "thread", max_concurrency is the number of trials at once; under "ray" it caps live model
    # calls across the cluster, and the trials at once are the cluster's CPUs (see runner/ray_executor.py).
    executor: Executor = DEFAULT_EXECUTOR
    ray_address: str | None = None  # None: start a local Ray instance for the run

    @property
    def judge_chosen(self) -> bool:
        """Whether the judge model was named, rather than left at the default scripted judge."""
        return self.judge.model != DEFAULT_JUDGE_LLM

    @field_validator("source_options")
    @classmethod
    def _source_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        return validate_source_options(options)

    @field_validator("save_to", "cassette")
    @classmethod
    def _is_a_directory(cls, path: Path | None) -> Path | None:
        """A run directory or cassette that is a file (or lies under one) is refused before the run plans
        anything, instead of failing in mkdir once the run has started."""
        blocker = _file_in_the_way(path) if path is not None else None
        if blocker is not None:
            where = "is a file" if blocker == path else f"is under {blocker}, a file"
            raise ValueError(f"{path} {where}; give a directory")
        return path

    @field_validator("tasks_file", "prices")
    @classmethod
    def _is_not_a_directory(cls, path: Path | None) -> Path | None:
        if path is not None and path.is_dir():
            raise ValueError(f"{path} is a directory; give a file")
        return path


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest existing one of `path` and its parents, when it is not a directory."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def check_trial_plan(config: RunConfig, num_tasks: int) -> None:
    """Refuse a run of more than PLANNED_TRIALS_LIMIT trials (tasks x trials) before any is planned.

    `RunConfig` bounds the trials per task; the tasks are only known once the domain pack is loaded,
    so `prepare` calls this with their number, before it builds seeds or trial specs.
    """
    planned = num_tasks * config.num_trials
    if planned > PLANNED_TRIALS_LIMIT:
        raise ConfigError(
            f"{num_tasks} tasks x {config.num_trials} trials is {planned:,} trials, over the limit of "
            f"{PLANNED_TRIALS_LIMIT:,} per run; pick fewer with --num-tasks, --task-ids or --num-trials"
        )
