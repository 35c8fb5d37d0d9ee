"""One model call: the request the engine builds, the response it gets, and what the results keep."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tauproxy.data_model.message import Message
from tauproxy.data_model.tool import ToolSchema

CallRole = Literal["agent", "user", "judge"]
CallSource = Literal["live", "replay"]


class ConnectionSettings(BaseModel):
    """How to reach a provider. Never part of the key, never written to disk."""

    model_config = ConfigDict(frozen=True, repr=False)

    api_base: str | None = None
    api_key: str | None = None
    api_version: str | None = None
    timeout: float | None = None
    num_retries: int | None = None
    extra_headers: dict[str, str] | None = None


class ModelRequest(BaseModel):
    """What a model is asked. `params` holds every sampling parameter (temperature, seed, ...)."""

    model_config = ConfigDict(frozen=True)

    model: str
    messages: list[Message]
    tools: list[ToolSchema] | None = None
    tool_choice: str | dict[str, Any] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    connection: ConnectionSettings = Field(default_factory=ConnectionSettings, exclude=True)

    @property
    def seed(self) -> int | None:
        seed = self.params.get("seed")
        return seed if isinstance(seed, int) else None


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


class ModelResponse(BaseModel):
    """A model's answer: one assistant message plus what it cost in tokens."""

    message: Message
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    response_id: str | None = None
    response_model: str | None = None
    created: int | None = None


class TrialScope(BaseModel):
    """The scope that sample identity counts occurrences in: one trial of one task."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    trial: int


class CallContext(BaseModel):
    """Who is calling, from where. Carried beside the request, never inside it."""

    model_config = ConfigDict(frozen=True)

    role: CallRole
    scope: TrialScope
    call_index: int = 0


class CallRecord(BaseModel):
    """What the results keep of one call: enough to tell live from replayed and to cost it."""

    index: int
    role: CallRole
    model: str
    key: str
    sample_key: str
    source: CallSource
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    price_source: str | None = None
    latency_s: float = 0.0
