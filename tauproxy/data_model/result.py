"""Simulation runs and results files, in tau2-bench's shape plus per-call records."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.message import Message
from tauproxy.data_model.task import Action, EnvAssertion, RewardType, Task


class TerminationReason(StrEnum):
    USER_STOP = "user_stop"
    AGENT_STOP = "agent_stop"
    # τ²-bench's repetition judge said the agent is stuck in a loop (tau2 run --judge-llm): a failure.
    JUDGE_STOP = "judge_stop"
    MAX_STEPS = "max_steps"
    TOO_MANY_ERRORS = "too_many_errors"
    AGENT_ERROR = "agent_error"
    USER_ERROR = "user_error"
    INFRASTRUCTURE_ERROR = "infrastructure_error"

    @property
    def is_stop(self) -> bool:
        return self in (TerminationReason.USER_STOP, TerminationReason.AGENT_STOP)


class DBCheck(BaseModel):
    db_match: bool
    db_reward: float


class ActionCheck(BaseModel):
    action: Action
    action_match: bool
    action_reward: float


class EnvAssertionCheck(BaseModel):
    env_assertion: EnvAssertion
    met: bool
    reward: float
    actual_value: Any = None


class CommunicateCheck(BaseModel):
    info: str
    met: bool
    justification: str = ""


class NLAssertionCheck(BaseModel):
    nl_assertion: str
    met: bool
    justification: str = ""


class RewardInfo(BaseModel):
    reward: float
    db_check: DBCheck | None = None
    env_assertions: list[EnvAssertionCheck] | None = None
    action_checks: list[ActionCheck] | None = None
    communicate_checks: list[CommunicateCheck] | None = None
    nl_assertions: list[NLAssertionCheck] | None = None
    reward_basis: list[RewardType] | None = None
    reward_breakdown: dict[RewardType, float] | None = None
    info: dict[str, Any] | None = None


class SimulationRun(BaseModel):
    id: str
    task_id: str
    trial: int
    seed: int
    termination_reason: TerminationReason
    messages: list[Message]
    reward_info: RewardInfo | None = None
    calls: list[CallRecord] = Field(default_factory=list)
    error: str | None = None
    agent_cost: float | None = None
    user_cost: float | None = None
    judge_cost: float | None = None
    duration: float = 0.0


class ModelInfo(BaseModel):
    """Which model played a role, with its arguments (connection settings removed)."""

    llm: str
    llm_args: dict[str, Any] = Field(default_factory=dict)
    system_prompt_sha256: str | None = None
    implementation: str | None = None


class RunInfo(BaseModel):
    tauproxy_version: str
    domain: str
    domain_sha256: str
    num_trials: int
    seed: int
    trial_seeds: list[int]
    max_steps: int
    max_errors: int
    agent_info: ModelInfo
    user_info: ModelInfo
    judge_info: ModelInfo
    # τ²-bench's repetition judge looks at this many messages (`tau2 run --judge-window-size`); None
    # when no such judge runs (our own engine's judge grades NL assertions and has no window).
    judge_window_size: int | None = None
    solo: bool = False
    cassette: str | None = None
    record_mode: str | None = None
    price_source: str | None = None
    # What ran the trials: None for tauproxy's own engine; for τ²-bench's domains its version and the
    # orchestrator, "tau2 26.3, tauproxy orchestrator" (tauproxy/tau2bench/trial.py).
    engine: str | None = None


class Results(BaseModel):
    """A results file. `timestamp` is the only field that changes between identical runs."""

    timestamp: str | None = None
    info: RunInfo
    tasks: list[Task]
    simulations: list[SimulationRun]
