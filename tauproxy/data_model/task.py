"""Tasks, in tau2-bench's task-file shape."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tauproxy.data_model.message import Message, Requestor

EnvType = Literal["assistant", "user"]


class RewardType(StrEnum):
    DB = "DB"
    ENV_ASSERTION = "ENV_ASSERTION"
    NL_ASSERTION = "NL_ASSERTION"
    ACTION = "ACTION"
    COMMUNICATE = "COMMUNICATE"


class StructuredInstructions(BaseModel):
    """tau2's structured user instructions: what the user wants, knows and does not know."""

    model_config = ConfigDict(extra="forbid")

    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str = ""

    def render(self) -> str:
        parts = [f"Domain: {self.domain}", f"Reason for call: {self.reason_for_call}"]
        if self.known_info:
            parts.append(f"Known info: {self.known_info}")
        if self.unknown_info:
            parts.append(f"Unknown info: {self.unknown_info}")
        if self.task_instructions:
            parts.append(f"Task instructions: {self.task_instructions}")
        return "\n".join(parts)


class UserScenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    persona: str | None = None
    instructions: str | StructuredInstructions

    def render(self) -> str:
        text = self.instructions if isinstance(self.instructions, str) else self.instructions.render()
        return f"Persona: {self.persona}\n{text}" if self.persona else text

    def request_text(self) -> str:
        """The one sentence a user opens with."""
        if isinstance(self.instructions, str):
            return self.instructions
        return self.instructions.reason_for_call


class Action(BaseModel):
    """A golden tool call. `compare_args` limits which arguments must match (None: all)."""

    model_config = ConfigDict(extra="forbid")

    action_id: str
    requestor: Requestor = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    compare_args: list[str] | None = None
    info: str | None = None


class EnvFunctionCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    env_type: EnvType = "assistant"
    func_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class EnvAssertion(EnvFunctionCall):
    assert_value: Any = True
    message: str | None = None


class InitializationData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class InitialState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvFunctionCall] | None = None
    message_history: list[Message] | None = None


class EvaluationCriteria(BaseModel):
    model_config = ConfigDict(extra="forbid")

    actions: list[Action] | None = None
    env_assertions: list[EnvAssertion] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None
    reward_basis: list[RewardType] = Field(default_factory=lambda: [RewardType.DB, RewardType.COMMUNICATE])

    @field_validator("reward_basis")
    @classmethod
    def _basis_not_empty(cls, value: list[RewardType]) -> list[RewardType]:
        if not value:
            raise ValueError("reward_basis must name at least one of " + ", ".join(RewardType))
        return value


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    description: dict[str, Any] | str | None = None
    user_scenario: UserScenario
    initial_state: InitialState | None = None
    evaluation_criteria: EvaluationCriteria | None = None
    user_tools: list[str] | None = None

    def golden_actions(self) -> list[Action]:
        if self.evaluation_criteria is None or self.evaluation_criteria.actions is None:
            return []
        return self.evaluation_criteria.actions
