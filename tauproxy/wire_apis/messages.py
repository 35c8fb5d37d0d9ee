"""Anthropic's Messages API (`POST /v1/messages`): its checks, its key, its views and its stream.

A request is checked (`check_request`, one line per problem, refused with a 400 in Anthropic's own
error shape, `error_body`), keyed (`request_key` over `canonical_request`), seen as a chat
conversation (`chat_messages`, `chat_reply`) for role recognition, reports and the miss report,
and sent to the provider's own endpoint (`upstream_request`, `send_upstream`). The answer is kept
as the bytes the upstream sent, so a replay is byte-identical to the live answer; `stream_body`
builds the `stream: true` answer from that one non-streamed answer, so a live stream and its
replay are the same events.

The canonical request (what the key hashes; `canonical_request`), field by field:

IN the key (anything that can change what the model says):
    api                 "messages", always: a Messages body never keys like another API's body
    anthropic_version   the `anthropic-version` header. It selects the API's behaviour and the
                        shape of the answer, so two versions may answer differently; in the key
    anthropic_beta      the `anthropic-beta` header's features, split on commas, trimmed, sorted
                        (order does not matter to the API), or null when none. A beta can change
                        the output (longer outputs, other tool behaviour), so it is in the key
    model               the model name exactly as requested
    system              a string, or its blocks; a string is one text block, since the API reads
                        `"x"` and `[{"type": "text", "text": "x"}]` alike, so both key alike
    messages            role and content; string content is one text block (as for system); every
                        block whole, any type (text, image, tool_use with its `input`, tool_result
                        with its `tool_use_id`, `content` and `is_error`, thinking ...), including
                        `cache_control`, which changes the recorded usage and so the cost
    tools, tool_choice  as given
    every other field   max_tokens, temperature, top_p, top_k, stop_sequences, thinking,
                        service_tier, and any parameter unknown here: when in doubt, in the key
    (null-valued fields anywhere are dropped: absent and null mean the same; JSON objects are
    written with sorted keys, so a tool_use `input` keys the same in any key order)

NOT in the key (never written to disk either: `key.without_connection_settings`, the one filter):
    stream              the answer is recorded whole; a stream is built from it
    metadata            bookkeeping (`user_id`): never changes the answer
    headers other than the two above: `x-api-key` and `authorization` (secrets; never forwarded:
    the upstream key comes from serve's environment), `anthropic-dangerous-direct-browser-access`,
    user agents, the SDK's `x-stainless-*`, retries and timeouts: where, as whom and how a call is
    sent, never what the model says

Upstream (`upstream_target`): the upstream map's `api_base` for the model, else ANTHROPIC_BASE_URL,
else https://api.anthropic.com; a base with or without `/v1` (or the whole `/v1/messages` address,
as litellm writes it) is accepted. The key is sent as `x-api-key`, read from the environment
variable the map names (`api_key_env`), else ANTHROPIC_API_KEY; never from a client's header. The
upstream is always asked without `stream`, and the map's model replaces the asked name (a litellm
`anthropic/` prefix is dropped: the provider's own endpoint does not know it).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, model_validator

from tauproxy.data_model.call import ConnectionSettings, Usage
from tauproxy.data_model.key import KEY_VERSION, canonical_arguments, canonical_json, without_connection_settings
from tauproxy.errors import ModelCallError
from tauproxy.redact import redact_text
from tauproxy.validation import first_problem

__all__ = [
    "API_NAME",
    "BETA_HEADER",
    "VERSION_HEADER",
    "MessagesHeaders",
    "MessagesReply",
    "MessagesRequest",
    "MessagesRequestError",
    "ReplyUsage",
    "UpstreamAnswer",
    "UpstreamTarget",
    "canonical_request",
    "chat_messages",
    "chat_reply",
    "check_request",
    "error_body",
    "error_type_of",
    "parse_reply",
    "read_headers",
    "request_key",
    "send_upstream",
    "stream_body",
    "stream_events",
    "upstream_model_name",
    "upstream_request",
    "upstream_target",
    "usage_of",
]

API_NAME = "messages"
PATH = "/v1/messages"
VERSION_HEADER = "anthropic-version"
BETA_HEADER = "anthropic-beta"
DEFAULT_API_BASE = "https://api.anthropic.com"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
API_KEY_ENV = "ANTHROPIC_API_KEY"
LITELLM_PREFIX = "anthropic/"

# The top-level fields the canonical request names on their own; every other one is a parameter.
_STRUCTURAL = ("model", "system", "messages", "tools", "tool_choice")

# The error `type` the real API gives for each status (its documented error shapes).
_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error_type_of(status: int) -> str:
    """The Anthropic error type for an HTTP status."""
    return _ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str) -> dict[str, Any]:
    """An error answer in Anthropic's shape, which the anthropic SDK reads into its exceptions."""
    return {"type": "error", "error": {"type": error_type_of(status), "message": message}}


class MessagesRequestError(ValueError):
    """A request the Messages API refuses: one line, answered 400 (`error_body`)."""


# ---- the request --------------------------------------------------------------------------------


class MessagesHeaders(BaseModel):
    """The request headers that are part of the request: the API version and the beta features."""

    model_config = ConfigDict(frozen=True)

    version: str
    betas: tuple[str, ...] = ()


def read_headers(headers: Mapping[str, str]) -> MessagesHeaders:
    """The version and betas a request names; the real API refuses a request without a version."""
    version = (headers.get(VERSION_HEADER) or "").strip()
    if not version:
        raise MessagesRequestError(f"{VERSION_HEADER}: header is required")
    betas = sorted({beta.strip() for beta in (headers.get(BETA_HEADER) or "").split(",") if beta.strip()})
    return MessagesHeaders(version=version, betas=tuple(betas))


class _Block(BaseModel):
    """One content block: any type, with the fields the known types need checked."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(min_length=1)

    @model_validator(mode="after")
    def _fields_of_type(self) -> _Block:
        extra = self.model_extra or {}
        if self.type == "text" and not isinstance(extra.get("text"), str):
            raise ValueError("a text block needs 'text', a string")
        if self.type in ("tool_use", "server_tool_use"):
            if not isinstance(extra.get("id"), str) or not isinstance(extra.get("name"), str):
                raise ValueError(f"a {self.type} block needs 'id' and 'name', strings")
            if not isinstance(extra.get("input"), dict):
                raise ValueError(f"a {self.type} block needs 'input', an object")
        if self.type == "tool_result":
            if not isinstance(extra.get("tool_use_id"), str):
                raise ValueError("a tool_result block needs 'tool_use_id', a string")
            content = extra.get("content")
            if content is not None and not isinstance(content, (str, list)):
                raise ValueError("a tool_result block's 'content' must be a string or an array of blocks")
        return self


class _InputMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["user", "assistant"]
    content: str | list[_Block]


class _Tool(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)


class _RequestShape(BaseModel):
    """What the Messages API needs of a body; what it does not know is passed on and keyed."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    max_tokens: StrictInt = Field(gt=0)
    messages: list[_InputMessage] = Field(min_length=1)
    system: str | list[_Block] | None = None
    tools: list[_Tool] | None = None
    tool_choice: dict[str, Any] | None = None
    stream: StrictBool | None = None


@dataclass(frozen=True)
class MessagesRequest:
    """A checked Messages request: its body as the client sent it, and its headers that count."""

    body: dict[str, Any]
    headers: MessagesHeaders

    @property
    def model(self) -> str:
        return str(self.body["model"])

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True


def check_request(body: Any, headers: Mapping[str, str]) -> MessagesRequest:
    """`body` (parsed JSON) and the headers as a MessagesRequest, or MessagesRequestError (one line)."""
    request_headers = read_headers(headers)
    if not isinstance(body, dict):
        raise MessagesRequestError("request body must be a JSON object")
    try:
        _RequestShape.model_validate(body)
    except ValidationError as exc:
        field, message = _request_problem(exc)
        raise MessagesRequestError(f"{field}: {message}") from None
    return MessagesRequest(body=body, headers=request_headers)


# pydantic names the member of a union (`str | list[_Block]`) in an error's path; a user reads fields.
_UNION_MEMBER = re.compile(r"^(str|int|float|bool|none|dict\[.*\]|list\[.*\]|.*\[.*\])$")


def _field_path(location: tuple[int | str, ...]) -> tuple[int | str, ...]:
    return tuple(part for part in location if not (isinstance(part, str) and _UNION_MEMBER.match(part)))


def _request_problem(exc: ValidationError) -> tuple[str, str]:
    """The first field with a problem and its most specific message: for content that is neither a
    string nor valid blocks, the block's own problem when it is a list, else what content may be."""
    errors = exc.errors()
    head = _field_path(errors[0]["loc"])
    related = [error for error in errors if _field_path(error["loc"])[: len(head)] == head]
    deepest = max(related, key=lambda error: len(_field_path(error["loc"])))
    path = _field_path(deepest["loc"])
    if len(path) == len(head) and len(related) > 1:
        message = "Input should be a string or an array of content blocks"
    else:
        message = str(deepest["msg"]).removeprefix("Value error, ")
    return ".".join(str(part) for part in path) or "body", message


# ---- the key ------------------------------------------------------------------------------------


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _as_blocks(content: Any) -> Any:
    """String content as the one text block the API reads it as; blocks as given, nulls dropped."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = _drop_nulls(content)
    if isinstance(blocks, list):
        return [_canonical_block(block) for block in blocks]
    return blocks


def _canonical_block(block: Any) -> Any:
    if isinstance(block, dict) and block.get("type") == "tool_result" and "content" in block:
        return {**block, "content": _as_blocks(block["content"])}
    return block


def canonical_request(request: MessagesRequest) -> dict[str, Any]:
    """The part of a Messages request that can change the answer, in canonical form (docstring above)."""
    body = without_connection_settings(request.body)
    params = {name: value for name, value in body.items() if name not in _STRUCTURAL and value is not None}
    system = body.get("system")
    return {
        "api": API_NAME,
        "anthropic_version": request.headers.version,
        "anthropic_beta": list(request.headers.betas) or None,
        "model": body.get("model"),
        "system": _as_blocks(system) if system is not None else None,
        "messages": [
            {**_drop_nulls(message), "content": _as_blocks(message.get("content"))}
            for message in body.get("messages") or []
        ],
        "tools": _drop_nulls(body.get("tools")) or None,
        "tool_choice": _drop_nulls(body.get("tool_choice")),
        "params": _drop_nulls(params),
    }


def request_key(request: MessagesRequest) -> str:
    """sha256 of the canonical request with the key version."""
    text = canonical_json({"key_version": KEY_VERSION, **canonical_request(request)})
    return hashlib.sha256(text.encode()).hexdigest()


# ---- the conversation as chat messages ----------------------------------------------------------


def _text_of(content: Any) -> str:
    """The text of string content or of its text blocks, joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _tool_call(block: dict[str, Any]) -> dict[str, Any]:
    arguments = canonical_arguments(block.get("input") or {})
    return {"id": block.get("id"), "type": "function", "function": {"name": block.get("name"), "arguments": arguments}}


def _assistant(content: Any) -> dict[str, Any]:
    """An assistant turn as one chat message: its text as content, its tool_use blocks as tool calls."""
    blocks = _as_blocks(content)
    calls = [_tool_call(b) for b in blocks if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use")]
    text = _text_of(blocks)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    thinking = "".join(b.get("thinking", "") for b in blocks if isinstance(b, dict) and b.get("type") == "thinking")
    if thinking:
        message["reasoning_content"] = thinking
    return message


def _user(content: Any) -> list[dict[str, Any]]:
    """A user turn as chat messages: each tool_result as a tool message, in order, then its text."""
    found: list[dict[str, Any]] = []
    text: list[str] = []
    for block in _as_blocks(content):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            result = _text_of(block.get("content"))
            if block.get("is_error"):
                result = f"Error: {result}"
            found.append({"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": result})
        elif isinstance(block.get("text"), str):
            text.append(block["text"])
    if text:
        found.append({"role": "user", "content": "".join(text)})
    return found


def chat_messages(request: MessagesRequest) -> list[dict[str, Any]]:
    """The conversation as OpenAI chat messages: the system prompt first (what role recognition reads),
    tool_use blocks as tool calls and tool_result blocks as tool messages (what reports show)."""
    messages: list[dict[str, Any]] = []
    system = request.body.get("system")
    if system is not None:
        messages.append({"role": "system", "content": _text_of(system)})
    for message in request.body.get("messages") or []:
        if message.get("role") == "assistant":
            messages.append(_assistant(message.get("content")))
        else:
            messages.extend(_user(message.get("content")))
    return messages


# ---- the answer ---------------------------------------------------------------------------------


class ReplyUsage(BaseModel):
    model_config = ConfigDict(extra="allow")

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class MessagesReply(BaseModel):
    """A Messages API answer (`type: message`); fields not named here are kept as sent."""

    model_config = ConfigDict(extra="allow")

    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    model: str
    content: list[dict[str, Any]]
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: ReplyUsage = Field(default_factory=ReplyUsage)


def parse_reply(raw: bytes) -> MessagesReply:
    """The answer in an upstream's (or a cassette's) bytes; ValueError if it is not one."""
    try:
        return MessagesReply.model_validate_json(raw)
    except ValidationError as exc:
        field, message = first_problem(exc, "body")
        raise ValueError(f"not a Messages API answer: {field}: {message}") from None


def chat_reply(reply: MessagesReply) -> dict[str, Any]:
    """The answer as one assistant chat message (text as content, tool_use blocks as tool calls)."""
    return _assistant(reply.content)


def usage_of(reply: MessagesReply) -> Usage:
    """Anthropic's usage as tauproxy's: prompt tokens count every input token, cache reads and cache
    writes included (Anthropic counts those apart, OpenAI counts them in); cache reads are the cached
    tokens. Cache writes are priced at the input rate, as tauproxy's prices know no other."""
    usage = reply.usage
    read = usage.cache_read_input_tokens or 0
    prompt = usage.input_tokens + read + (usage.cache_creation_input_tokens or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=usage.output_tokens,
        total_tokens=prompt + usage.output_tokens,
        cached_tokens=read,
    )


# ---- the stream ---------------------------------------------------------------------------------

StreamEvent = tuple[str, dict[str, Any]]


def _block_events(index: int, block: dict[str, Any]) -> list[StreamEvent]:
    """content_block_start, its deltas and content_block_stop for one block, as the real API sends
    them: a text, tool input or thinking block starts empty and is filled by deltas; any other type
    starts whole."""
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    start = dict(block)
    if kind == "text":
        start["text"] = ""
        citations = start.pop("citations", None) or []
        if block.get("text"):
            deltas.append({"type": "text_delta", "text": block["text"]})
        deltas.extend({"type": "citations_delta", "citation": citation} for citation in citations)
    elif kind in ("tool_use", "server_tool_use"):
        start["input"] = {}
        deltas.append({"type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})})
    elif kind == "thinking":
        start["thinking"], start["signature"] = "", ""
        if block.get("thinking"):
            deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    events: list[StreamEvent] = [("content_block_start", {"index": index, "content_block": start})]
    events.extend(("content_block_delta", {"index": index, "delta": delta}) for delta in deltas)
    events.append(("content_block_stop", {"index": index}))
    return events


def stream_events(reply: MessagesReply) -> list[StreamEvent]:
    """The events the real API streams for `reply`: message_start (the message without content, stop
    reason or output tokens), a ping, each block, message_delta (stop reason and the final usage),
    message_stop. The anthropic SDK's stream helpers assemble the same message from them."""
    message = reply.model_dump(mode="json", exclude_unset=True)
    content, usage = message.pop("content"), message.pop("usage", {})
    delta = {"stop_reason": message.pop("stop_reason", None), "stop_sequence": message.pop("stop_sequence", None)}
    for name in ("stop_details", "container"):  # set by message_delta in the SDK's assembly
        if name in message:
            delta[name] = message.pop(name)
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 0},
    }
    events: list[StreamEvent] = [("message_start", {"message": start}), ("ping", {})]
    for index, block in enumerate(content):
        events.extend(_block_events(index, block))
    events.append(("message_delta", {"delta": delta, "usage": usage}))
    events.append(("message_stop", {}))
    return events


def stream_body(reply: MessagesReply) -> bytes:
    """`stream_events` as one text/event-stream body: `event: <type>` and `data: <json>` per event."""
    lines = []
    for kind, data in stream_events(reply):
        payload = json.dumps({"type": kind, **data}, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"event: {kind}\ndata: {payload}\n\n")
    return "".join(lines).encode("utf-8")


# ---- the upstream -------------------------------------------------------------------------------


@dataclass(frozen=True)
class UpstreamTarget:
    """Where a Messages call goes and as whom; the key is never shown in a repr."""

    url: str
    api_key: str | None
    timeout_s: float | None

    def __repr__(self) -> str:
        return f"UpstreamTarget(url={self.url!r}, timeout_s={self.timeout_s!r})"


def _endpoint(base: str) -> str:
    base = base.rstrip("/")
    if base.endswith(PATH):
        return base
    if base.endswith("/v1"):
        return base + "/messages"
    return base + PATH


def upstream_target(connection: ConnectionSettings, environ: Mapping[str, str]) -> UpstreamTarget:
    """The endpoint and key for a call routed by `connection` (module docstring: Upstream)."""
    base = connection.api_base or environ.get(BASE_URL_ENV) or DEFAULT_API_BASE
    api_key = connection.api_key or environ.get(API_KEY_ENV) or None
    return UpstreamTarget(url=_endpoint(base), api_key=api_key, timeout_s=connection.timeout)


def upstream_model_name(model: str) -> str:
    """The model name the provider's own endpoint knows: a litellm `anthropic/` prefix dropped."""
    return model.removeprefix(LITELLM_PREFIX)


def upstream_request(request: MessagesRequest, target: UpstreamTarget, model: str) -> httpx.Request:
    """The request to send upstream: the client's body without `stream` and with `model` as routed,
    the version and beta headers, and the key from the environment; no other client header."""
    body = {name: value for name, value in request.body.items() if name != "stream"}
    body["model"] = upstream_model_name(model)
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        VERSION_HEADER: request.headers.version,
    }
    if request.headers.betas:
        headers[BETA_HEADER] = ",".join(request.headers.betas)
    if target.api_key:
        headers["x-api-key"] = target.api_key
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return httpx.Request("POST", target.url, headers=headers, content=content)


@dataclass(frozen=True)
class UpstreamAnswer:
    """The upstream's answer: its bytes exactly as sent (what is recorded and answered), parsed."""

    raw: bytes
    reply: MessagesReply
    latency_s: float


def send_upstream(client: httpx.Client, request: httpx.Request, target: UpstreamTarget) -> UpstreamAnswer:
    """Send `request` (from `upstream_request`); any failure is one ModelCallError, keys masked."""
    secrets = (target.api_key,) if target.api_key else ()
    where = target.url
    if target.timeout_s is not None:
        request.extensions["timeout"] = httpx.Timeout(target.timeout_s).as_dict()
    started = time.perf_counter()
    try:
        response = client.send(request)
        raw = response.read()
    except httpx.TimeoutException as exc:
        message = redact_text(f"{where}: timed out ({type(exc).__name__})", secrets)
        raise ModelCallError(message, code="upstream_timeout") from None
    except httpx.HTTPError as exc:
        message = redact_text(f"{where}: {type(exc).__name__}: {exc}", secrets)
        raise ModelCallError(message, code="upstream_unreachable") from None
    latency = time.perf_counter() - started
    if not 200 <= response.status_code < 300:
        message = redact_text(f"{where}: {response.status_code}: {_error_message(raw)}", secrets)
        retry_after = response.headers.get("retry-after")
        raise ModelCallError(message, status_code=response.status_code, retry_after=retry_after)
    try:
        reply = parse_reply(raw)
    except ValueError as exc:
        raise ModelCallError(f"{where}: malformed response: {exc}", code="upstream_malformed") from None
    return UpstreamAnswer(raw=raw, reply=reply, latency_s=latency)


MAX_ERROR_CHARS = 400


def _error_message(raw: bytes) -> str:
    """The message of an upstream error answer, one short line."""
    try:
        data = json.loads(raw)
        message = data["error"]["message"] if isinstance(data, dict) and isinstance(data.get("error"), dict) else raw
    except (ValueError, KeyError):
        message = raw.decode("utf-8", "replace")
    text = " ".join(str(message).split())
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
