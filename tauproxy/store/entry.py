"""One recorded call as it sits in a cassette: references to stored messages plus call metadata."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from tauproxy.data_model.call import CallRole, Usage

ENTRY_VERSION = 1


class StoredRequest(BaseModel):
    """A canonical request with its messages and tools replaced by content hashes."""

    model: str | None = None
    messages: list[str] = Field(default_factory=list)
    tools: str | None = None
    tool_choice: str | dict[str, Any] | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class StoredResponse(BaseModel):
    """The first choice of a chat-completions response; `message` is a content hash."""

    message: str
    finish_reason: str | None = None
    response_id: str | None = None
    response_model: str | None = None
    created: int | None = None


class CassetteEntry(BaseModel):
    """One sample: a request, its recorded response, and where and when it was drawn."""

    v: int = ENTRY_VERSION
    key: str
    sample_key: str
    task_id: str
    trial: int
    occurrence: int
    seed: int | None = None
    role: CallRole
    call_index: int
    request: StoredRequest
    response: StoredResponse
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    price_source: str | None = None
    latency_s: float = 0.0
    recorded_at: str

    def message_refs(self) -> list[str]:
        """Every message hash this entry needs, request messages first, then the reply."""
        return [*self.request.messages, self.response.message]
