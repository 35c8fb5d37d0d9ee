"""One recorded call as it sits in a cassette: references to stored content plus call metadata."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from tauproxy.data_model.call import CallRole, Usage
from tauproxy.data_model.key import seed_of

# v4: v3 without what a call line can derive (see format.py): no `key`, no `seed` equal to the
#     request's, no null or zero fields, no `total_tokens` equal to prompt + completion.
# v3: v2 with 16-hex references and no stored sample key (derived on read), see format.py.
# v2: a request names its messages by one chain node (`request.chain`); still read, never written.
# v1: a request listed one message hash per message (`request.messages`); still read, never written.
ENTRY_VERSION = 4


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

    `body` names a blob holding, as one JSON string, the whole answer body exactly as the upstream
    sent it, for wire APIs whose clients are answered in the upstream's own shape (the Responses
    API, ...): a replay answers those bytes. `message` is then the reply's chat-shaped view (what
    reports, fingerprints and the miss report read). For chat completions, set only when serve passed
    the call through to an OpenAI-compatible upstream (wire_apis/chat_route.py); absent otherwise (litellm's
    answers, and every chat entry recorded before), which replays from `message` as before.
    `content_type` is the Content-Type the upstream sent `body` with, kept only when it was not plain
    application/json (absent: application/json), so a replay answers with it too.
    """

    message: str
    raw: str | None = None
    body: str | None = None
    content_type: str | None = None
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
        for name in ("raw", "body", "content_type"):
            if getattr(self.response, name) is None:
                del data["response"][name]  # absent, not null: older entries keep their exact bytes
        if self.v >= 3:
            del data["sample_key"]  # derived from key, seed and scope on read (format.py)
        if self.v >= 4:
            _drop_derivable(data)
        return data

    @staticmethod
    def fields_of_v4(line: dict[str, Any]) -> dict[str, Any]:
        """The fields of a v4 call line with what it left out put back (the inverse of wire_form),
        except `key` and `sample_key`, which need the stored request (format.py)."""
        fields = dict(line)
        request, usage = fields.get("request"), fields.get("usage")
        if "seed" not in fields and isinstance(request, dict) and isinstance(request.get("params"), dict):
            fields["seed"] = seed_of(request["params"])
        if isinstance(usage, dict) and "total_tokens" not in usage:
            parts = [usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)]
            if all(isinstance(n, int) and not isinstance(n, bool) for n in parts):
                fields["usage"] = {**usage, "total_tokens": sum(parts)}
        return fields


def _drop_derivable(data: dict[str, Any]) -> None:
    """v4: leave out of a call line what its reader derives, every field at its default included.

    gzip pays for each field that changes from one line to the next (git stores cassettes
    compressed), and a null, a zero or a copy of another field carries nothing.
    """
    del data["key"]  # the hash of the stored request: derived when the line is indexed
    if data["seed"] == seed_of(data["request"]["params"]):
        del data["seed"]
    usage = data["usage"]
    if usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]:
        del usage["total_tokens"]
    for part in (data, data["request"], data["response"]):
        for name in [name for name, value in part.items() if value is None and name != "seed"]:
            del part[name]  # a seed left here differs from the request's, even when null: kept
    for name in [name for name, value in usage.items() if value == 0 and name != "total_tokens"]:
        del usage[name]  # a count left out is 0 (total_tokens: prompt + completion, handled above)
    if not data["request"]["params"]:
        del data["request"]["params"]
    if not usage:
        del data["usage"]
    if data["latency_s"] == 0:
        del data["latency_s"]
