"""Conversation messages, in tau2-bench's shape (role, content, tool_calls, ...)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]
Requestor = Literal["assistant", "user"]


class ToolCall(BaseModel):
    """One tool call: `arguments` is a parsed object, never a JSON string."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Requestor = "assistant"


class Message(BaseModel):
    """A message of the trajectory.

    `role` is from the point of view of the simulation: "assistant" is the agent, "user" the user
    simulator, "tool" a tool result (for the side named by `requestor`).
    """

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    requestor: Requestor | None = None
    error: bool = False
    turn_idx: int | None = None

    def has_text(self) -> bool:
        return bool(self.content and self.content.strip())

    def is_tool_call(self) -> bool:
        return bool(self.tool_calls)


def system_message(content: str) -> Message:
    return Message(role="system", content=content)
