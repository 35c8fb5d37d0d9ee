"""The flags of `tauproxy run` as one plain object. Imports nothing heavy: `--help` stays fast."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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
    executor: str = "thread"
    ray_address: str | None = None
