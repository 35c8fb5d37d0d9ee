"""One recorded call as it sits in a cassette: references to stored content plus call metadata."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from tauproxy.data_model.call import CallRole, Usage

# v3: v2 with 16-hex references and no stored sample key (derived on read), see format.py.
# v2: a request names its messages by one chain node (`request.chain`); still read, never written.
# v1: a request listed one message hash per message (`request.messages`); still read, never written.
ENTRY_VERSION = 3


class StoredRequest(BaseModel):
    """A canonical request with its messages and tools replaced by content hashes.

    `chain` is the hash of the node line ending the request's message chain (None: no messages).
    `messages` is the version-1 form, the message hashes listed in full; an entry carries one form or
    the other, and `Cassette.message_hashes` reads either.
    """

    model: str | None = None
    chain: str | None = None
    messages: list[str] | None = None
    tools: str | None = None
    tool_choice: str | dict[str, Any] | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_form(self) -> StoredRequest:
        if self.chain is not None and self.messages is not None:
            raise ValueError("a request has either `chain` (v2) or `messages` (v1), not both")
        return self

    def wire_form(self) -> dict[str, Any]:
        """The request as written on a call line: only the message form it uses."""
        data = self.model_dump(mode="json")
        del data["chain" if self.messages is not None else "messages"]
        return data


class StoredResponse(BaseModel):
    """The first choice of a chat-completions response; `message` is a content hash.

    `message` names the reply in canonical form (what the next request's key sees). `raw` names a
    blob holding the reply exactly as the upstream gave it (tool-call arguments as sent, nulls kept),
    written only when that differs from the canonical form: `serve` answers with it, so a harness
    receives what the upstream said (canonical forms are for keys only).
    """

    message: str
    raw: str | None = None
    finish_reason: str | None = None
    response_id: str | None = None
    response_model: str | None = None
    created: int | None = None


class CassetteEntry(BaseModel):
    """One sample: a request, its recorded response, and where and when it was drawn.

    Entries returned by a Cassette are shared with its index: read them, do not mutate them.
    """

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

    def wire_form(self) -> dict[str, Any]:
        """The entry as the fields of its call line (without the line kind `t`)."""
        data = {**self.model_dump(mode="json"), "request": self.request.wire_form()}
        if self.response.raw is None:
            del data["response"]["raw"]  # absent, not null: older entries keep their exact bytes
        if self.v >= 3:
            del data["sample_key"]  # derived from key, seed and scope on read (format.py)
        return data
