"""Tool schemas in OpenAI function format."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

ToolKind = Literal["read", "write"]


class FunctionSchema(BaseModel):
    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolSchema(BaseModel):
    """What the model sees of a tool: `{"type": "function", "function": {...}}`."""

    type: Literal["function"] = "function"
    function: FunctionSchema

    @property
    def name(self) -> str:
        return self.function.name
