"""A call's request and reply in the forms a cassette stores and answers with.

Recording splits a call into its stored parts (the hashed request, the reply, and every message and
blob they refer to); replaying puts a chat-completions body back together from them. Pure functions
of their inputs: no file, no index.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tauproxy.data_model.call import Usage
from tauproxy.data_model.completion import CallRecording
from tauproxy.data_model.key import (
    EXCLUDED_PARAMS,
    STRUCTURAL_FIELDS,
    SampleIdentity,
    canonical_json,
    canonical_key,
    canonical_message,
    canonical_request,
    message_text,
    tools_text,
)
from tauproxy.data_model.key import sample_key as make_sample_key
from tauproxy.data_model.wire import completion_body, in_wire_order
from tauproxy.errors import CassetteError
from tauproxy.store.entry import StoredRequest, StoredResponse


def flat_wire(wire: dict[str, Any]) -> dict[str, Any]:
    """Accept canonical_request's output as well as a flat OpenAI body, and return a flat body."""
    params = wire.get("params")
    if isinstance(params, dict) and set(wire) <= {*STRUCTURAL_FIELDS, "params"}:
        return {**params, **{name: wire[name] for name in STRUCTURAL_FIELDS if name in wire}}
    return wire


def _refuse_secrets(wire: dict[str, Any]) -> None:
    # canonical_request would silently drop these; a caller that passes them has a leak elsewhere.
    leaked = sorted(name for name in wire if name in EXCLUDED_PARAMS)
    if leaked:
        raise CassetteError(
            f"refusing to record a request carrying {', '.join(leaked)}: connection settings and "
            "bookkeeping never go into a cassette (pass the request through key.canonical_request)"
        )


@dataclass(frozen=True)
class CanonicalTexts:
    """A request's canonical messages and tools as their canonical JSON texts (what is stored and hashed)."""

    messages: list[str]
    tools: str | None


def secret_free_texts(wire: dict[str, Any]) -> tuple[dict[str, Any], CanonicalTexts]:
    """canonical_request of a request to record (refused if it carries a connection setting), with its
    messages and tools given as their texts rather than in the dict (its `messages` empty, its `tools`
    None): the texts come from the key's memo (key.message_text), which keying the call just filled,
    so a recorded call's messages are not canonicalised again."""
    _refuse_secrets(wire)
    canonical = canonical_request({**wire, "messages": [], "tools": None})
    texts = CanonicalTexts([message_text(m) for m in wire.get("messages") or []], tools_text(wire.get("tools")))
    return canonical, texts


def reply_of(response_body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    choices = response_body.get("choices") or []
    if not choices or not isinstance(choices[0].get("message"), dict):
        raise CassetteError("refusing to record a response without choices[0].message")
    return choices[0], canonical_message(choices[0]["message"])


def now_iso() -> str:
    # To the second: a recording's time is for people, and a timestamp that changes on every call
    # costs bytes in git (see format.py).
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def check_identity(key: str, identity: SampleIdentity) -> None:
    """Refuse an identity whose key is not `key` (the request's, from stored_parts) or whose sample key
    does not follow from it: an entry filed under a key its request does not hash to could never be
    replayed."""
    if key != identity.key:
        raise CassetteError(f"refusing to record: key {identity.key[:12]} is not the key of this request")
    scope = identity.scope
    expected = make_sample_key(identity.key, identity.seed, scope.task_id, scope.trial, identity.occurrence)
    if expected != identity.sample_key:
        raise CassetteError(
            f"refusing to record: sample key {identity.sample_key[:12]} does not match key, seed, "
            f"task {scope.task_id!r}, trial {scope.trial} and occurrence {identity.occurrence}"
        )


def answer_body(
    message: dict[str, Any], response: StoredResponse, usage: Usage, sample_key: str, request_model: str | None
) -> dict[str, Any]:
    """The chat-completions body of a stored reply `message` (canonical form, keys sorted)."""
    return body_around(answer_message(message), response, usage, sample_key, request_model)


def answer_message(message: dict[str, Any]) -> dict[str, Any]:
    """A stored reply as an answer's message: every field the wire has, in the wire's order."""
    message.setdefault("content", None)  # canonical form drops nulls; a response body has the key
    return in_wire_order(message)  # stored with keys sorted; answered in the order the upstream used


def answer_message_text(reply_text: str) -> str:
    """answer_message of a stored reply's text, as JSON text: json.loads of it is that message, key
    order included, so a reply answered again and again is put in wire order once."""
    return json.dumps(answer_message(json.loads(reply_text)))


def body_around(
    message: dict[str, Any], response: StoredResponse, usage: Usage, sample_key: str, request_model: str | None
) -> dict[str, Any]:
    """The chat-completions body of an answer's `message` (answer_message's) and its call's metadata."""
    return completion_body(
        message,
        finish_reason=response.finish_reason,
        usage=usage,
        response_id=response.response_id or f"chatcmpl-{sample_key[:24]}",
        model=response.response_model or request_model,
        created=response.created or 0,
    )


@dataclass(frozen=True)
class StoredParts:
    """A call ready to append: its entry's request and reply, and the content they refer to."""

    request: StoredRequest
    response: StoredResponse
    messages: dict[str, str]  # hash -> canonical JSON text, every message of the request and the reply
    blobs: dict[str, str]  # hash -> canonical JSON text
    message_order: list[str]  # the request's message hashes, first message first
    key: str  # the request key (key.canonical_key of the same texts): checked against the call's identity


def stored_parts(
    canonical: dict[str, Any],
    response_body: dict[str, Any],
    raw_body: str | None = None,
    content_type: str | None = None,
    given: CanonicalTexts | None = None,
) -> StoredParts:
    """The hashed request and reply, plus every message, blob and chain node they refer to.

    `raw_body` (Completion.raw_body) is kept as a blob whose value is that text, so it is answered
    byte for byte, with its `content_type` (Completion.content_type). `given`: the texts of the
    request's messages and tools, made already (secret_free_texts), else made from `canonical`."""
    choice, reply = reply_of(response_body)
    # Each message and the tools encoded once: their texts are what is written, what is hashed into
    # their references, and what the request key is hashed from (canonical_request's output is
    # canonical already, so canonical_json of it is key.message_hash's text).
    if given is None:
        tools = canonical["tools"]
        given = CanonicalTexts(
            [canonical_json(m) for m in canonical["messages"]], canonical_json(tools) if tools is not None else None
        )
    texts = given.messages
    hashes = [_sha256(text) for text in texts]
    messages = dict(zip(hashes, texts, strict=True))
    reply_text = canonical_json(reply)
    reply_hash = _sha256(reply_text)
    messages.setdefault(reply_hash, reply_text)
    tools_text = given.tools
    tools_hash = _sha256(tools_text) if tools_text is not None else None
    blobs = {tools_hash: tools_text} if tools_hash is not None and tools_text is not None else {}
    raw = raw_reply(choice, reply)
    raw_hash = body_hash = None
    if raw is not None:
        raw_text = canonical_json(raw)
        raw_hash = _sha256(raw_text)
        blobs[raw_hash] = raw_text
    if raw_body is not None:
        body_text = canonical_json(raw_body)
        body_hash = _sha256(body_text)
        blobs[body_hash] = body_text
    request = StoredRequest(
        model=canonical["model"],
        chain=None,  # set by refs.Refs.resolve: the references depend on what the cassette holds
        tools=tools_hash,
        tool_choice=canonical["tool_choice"],
        params=canonical["params"],
    )
    response = StoredResponse(
        message=reply_hash,
        raw=raw_hash,
        body=body_hash,
        content_type=content_type if raw_body is not None else None,
        finish_reason=choice.get("finish_reason"),
        response_id=response_body.get("id"),
        response_model=response_body.get("model"),
        created=response_body.get("created"),
    )
    return StoredParts(request, response, messages, blobs, hashes, canonical_key(canonical, texts, tools_text))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()  # key.blob_hash of the value `text` encodes


def raw_reply(choice: dict[str, Any], canonical: dict[str, Any]) -> dict[str, Any] | None:
    """The reply as the upstream gave it, when that is not its canonical form (None otherwise)."""
    raw = choice["message"]
    if raw == {**canonical, "content": canonical.get("content")} or raw == canonical:
        return None
    return dict(raw)


def replay_form(recording: CallRecording) -> dict[str, Any]:
    """The body a replay of `recording` will answer with once it is recorded, without writing it."""
    choice, reply = reply_of(recording.response_body)
    body = recording.response_body
    response = StoredResponse(
        message="",
        finish_reason=choice.get("finish_reason"),
        response_id=body.get("id"),
        response_model=body.get("model"),
        created=body.get("created"),
    )
    raw = raw_reply(choice, reply)
    return answer_body(
        raw if raw is not None else reply,
        response,
        recording.usage,
        recording.identity.sample_key,
        recording.wire.get("model"),
    )
