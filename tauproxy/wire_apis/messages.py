"""Anthropic's Messages API (`POST /v1/messages`), answered through the one cache layer.

A request is checked (`check_request`: the `anthropic-version` header, which the real API requires,
and the body; one line per problem, answered 400 in Anthropic's own error shape, `error_body`),
keyed (`keyed_request`), seen as a chat conversation (`chat_messages`, `chat_reply`, `view`) for
role recognition, the run log, pricing, reports and the miss report, and sent to the provider's
own endpoint by the pass-through (upstream.py). The answer is kept as the bytes the upstream sent,
so a replay is byte-identical to the live answer; messages_stream.py builds the `stream: true` answer
from that one non-streamed answer, so a live stream and its replay are the same events.

The keyed form (what key.request_key hashes; chat-shaped, so the cassette's message chains and the
miss report's nearest-call search work on it), field by field:

IN the key (anything that can change what the model says):
    model               the model name exactly as requested
    messages            role and content of each message; string content is the one text block the
                        API reads it as (`"x"` and `[{"type": "text", "text": "x"}]` key alike);
                        every block whole, of any type: text, image, tool_use with its `input`,
                        tool_result with its `tool_use_id`, `content` (a string is one text block
                        here too) and `is_error`, thinking with its signature, ...; `cache_control`
                        included, since it changes the recorded usage and so the cost
    tools, tool_choice  as sent
    system              a string or its blocks, keyed as blocks (as message content)
    every other field   max_tokens, temperature, top_p, top_k, stop_sequences, thinking,
                        service_tier, and any field unknown here: when in doubt, in the key
    anthropic-version   the header: it selects the API's behaviour and the shape of its answer, so
                        two versions may answer differently
    anthropic-beta      the header's features, split on commas, trimmed and sorted (their order
                        means nothing to the API); absent when none. A beta can change the output
                        (longer outputs, other tool behaviour), so it is in the key
    tauproxy_wire_api   "messages" (key.WIRE_API_PARAM): no chat or Responses request shares a key
    (null-valued fields anywhere are dropped: absent and null mean the same; objects are hashed
    with sorted keys, so a tool_use `input` keys the same in any key order)

NOT in the key, and never written to disk (key.without_connection_settings, the one filter):
    stream              the answer is recorded whole; a stream is built from it
    metadata            bookkeeping (`user_id`): it never changes the answer
    every other header  `x-api-key` and `authorization` (secrets; never forwarded: the upstream
                        key comes from serve's environment), user agents, the SDK's `x-stainless-*`
                        retry and timeout headers: where, as whom and how a call is sent

The header names are hyphenated in the keyed form, so no body field (Bedrock and Vertex bodies
carry an `anthropic_version` field) can be taken for them; a body that sends one of the keyed
form's own names (`anthropic-version`, `anthropic-beta`, tauproxy_wire_api) is refused.

Upstream (`UPSTREAM`): the upstream map's `api_base` for the model, else ANTHROPIC_BASE_URL, else
https://api.anthropic.com, each without `/v1` (as the anthropic SDK's base URL), plus /v1/messages.
The key goes in `x-api-key`, read from the environment variable the map names (`api_key_env`),
else ANTHROPIC_API_KEY; never from a client's header. The client's `anthropic-version` and
`anthropic-beta` are sent on, since they are part of the request. The upstream is asked without
`stream`, and the map's model replaces the asked name (a litellm `anthropic/` prefix dropped).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, model_validator

from tauproxy.data_model.call import NativeRequest, Usage
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import WIRE_API_PARAM, canonical_arguments, without_connection_settings
from tauproxy.data_model.wire import completion_body
from tauproxy.validation import first_problem
from tauproxy.wire_apis.base import ApiRequest, RequestRejected, UpstreamEndpoint, WireAnswer
from tauproxy.wire_apis.chat import JSON, NO_CACHE, SSE
from tauproxy.wire_apis.messages_stream import stream_body

__all__ = [
    "BETA_HEADER",
    "NAME",
    "UPSTREAM",
    "VERSION_HEADER",
    "MessagesApi",
    "MessagesHeaders",
    "MessagesReply",
    "MessagesRequest",
    "ReplyUsage",
    "chat_messages",
    "chat_reply",
    "chat_view",
    "check_request",
    "error_body",
    "error_type_of",
    "keyed_request",
    "parse_reply",
    "read_headers",
    "usage_of",
]

NAME = "messages"
VERSION_HEADER = "anthropic-version"
BETA_HEADER = "anthropic-beta"

UPSTREAM = UpstreamEndpoint(
    path="/v1/messages",
    default_base_url="https://api.anthropic.com",
    base_url_env="ANTHROPIC_BASE_URL",
    key_env="ANTHROPIC_API_KEY",
    auth_header="x-api-key",
    provider_prefix="anthropic/",
)

# The top-level fields the keyed form names on their own; every other one is a parameter.
_STRUCTURAL = ("model", "messages", "tools", "tool_choice", "system")
# Names of the keyed form a body may not send: they would stand for something else there.
_RESERVED = (VERSION_HEADER, BETA_HEADER, WIRE_API_PARAM)
# Sent by the client only to shape how the answer is delivered; never keyed, never sent upstream.
_DELIVERY_FIELDS = ("stream",)

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
    504: "timeout_error",
    529: "overloaded_error",
}


def error_type_of(status: int) -> str:
    """The Anthropic error type for an HTTP status."""
    return _ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str) -> dict[str, Any]:
    """An error answer in Anthropic's shape, which the anthropic SDK reads into its exceptions."""
    return {"type": "error", "error": {"type": error_type_of(status), "message": message}}


# ---- the request --------------------------------------------------------------------------------


class MessagesHeaders(BaseModel):
    """The request headers that are part of the request: the API version and the beta features."""

    model_config = ConfigDict(frozen=True)

    version: str
    betas: tuple[str, ...] = ()

    def sent_upstream(self) -> dict[str, str]:
        headers = {VERSION_HEADER: self.version}
        if self.betas:
            headers[BETA_HEADER] = ",".join(self.betas)
        return headers


def read_headers(headers: Mapping[str, str]) -> MessagesHeaders:
    """The version and betas a request names; the real API refuses a request without a version."""
    version = (headers.get(VERSION_HEADER) or "").strip()
    if not version:
        raise RequestRejected(f"{VERSION_HEADER}: header is required")
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
    """A checked Messages request: its body as the client sent it, and the headers that count."""

    body: dict[str, Any]
    headers: MessagesHeaders


def check_request(body: Any, headers: Mapping[str, str]) -> MessagesRequest:
    """`body` (parsed JSON) and the headers as a MessagesRequest, or RequestRejected (one line)."""
    request_headers = read_headers(headers)
    if not isinstance(body, dict):
        raise RequestRejected("request body must be a JSON object")
    try:
        _RequestShape.model_validate(body)
    except ValidationError as exc:
        field, message = _request_problem(exc)
        raise RequestRejected(f"{field}: {message}") from None
    for name in _RESERVED:
        if name in body:
            raise RequestRejected(f"{name}: reserved by tauproxy (a header, or its own), not a body field")
    return MessagesRequest(body=body, headers=request_headers)


# pydantic names the member of a union (`str | list[_Block]`) in an error's path; a user reads fields.
_UNION_MEMBER = re.compile(r"^(str|int|float|bool|none|.*\[.*\])$")


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


# ---- the keyed form -----------------------------------------------------------------------------


def _as_blocks(content: Any) -> Any:
    """String content as the one text block the API reads it as; blocks as given."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [_keyed_block(block) for block in content]
    return content


def _keyed_block(block: Any) -> Any:
    if isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(block.get("content"), str):
        return {**block, "content": _as_blocks(block["content"])}
    return block


def keyed_request(request: MessagesRequest) -> dict[str, Any]:
    """The chat-shaped canonical request a Messages body is keyed by (module docstring)."""
    fields = without_connection_settings(request.body)
    keyed: dict[str, Any] = {
        "model": fields["model"],
        "messages": [{**message, "content": _as_blocks(message["content"])} for message in fields["messages"]],
    }
    for name in ("tools", "tool_choice"):
        if name in fields:
            keyed[name] = fields[name]
    if fields.get("system") is not None:
        keyed["system"] = _as_blocks(fields["system"])
    keyed.update((name, value) for name, value in fields.items() if name not in _STRUCTURAL)
    keyed[VERSION_HEADER] = request.headers.version
    if request.headers.betas:
        keyed[BETA_HEADER] = list(request.headers.betas)
    keyed[WIRE_API_PARAM] = NAME
    return keyed


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


def chat_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A checked body's conversation as OpenAI chat messages: the system prompt first (what role
    recognition reads), tool_use blocks as tool calls and tool_result blocks as tool messages."""
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system is not None:
        messages.append({"role": "system", "content": _text_of(system)})
    for message in body.get("messages") or []:
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


def parse_reply(answer: str | bytes | dict[str, Any]) -> MessagesReply:
    """The answer in an upstream's (or a cassette's) body; ValueError if it is not one."""
    try:
        if isinstance(answer, dict):
            return MessagesReply.model_validate(answer)
        return MessagesReply.model_validate_json(answer)
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


# Chat's finish reasons for Anthropic's stop reasons; reports and the run log read chat's.
_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def chat_view(answer: dict[str, Any]) -> dict[str, Any]:
    """A Messages answer as a chat.completion body: its reply, finish reason and usage."""
    reply = parse_reply(answer)
    stop = reply.stop_reason or "end_turn"
    return completion_body(
        chat_reply(reply),
        finish_reason=_FINISH_REASONS.get(stop, stop),
        usage=usage_of(reply),
        response_id=reply.id,
        model=reply.model,
        created=None,
    )


# ---- the wire API -------------------------------------------------------------------------------


class MessagesApi:
    """Anthropic's Messages API (module docstring)."""

    name = NAME
    paths = ("/v1/messages", "/messages")
    upstream: UpstreamEndpoint | None = UPSTREAM

    def request(self, body: Any, headers: Mapping[str, str]) -> ApiRequest:
        checked = check_request(body, headers)
        sent = {name: value for name, value in checked.body.items() if name not in _DELIVERY_FIELDS}
        return ApiRequest(
            api=self.name,
            body=checked.body,
            keyed=keyed_request(checked),
            stream=checked.body.get("stream") is True,
            conversation=chat_messages(checked.body),
            native=NativeRequest(api=self.name, body=sent, headers=checked.headers.sent_upstream()),
        )

    def answer(self, request: ApiRequest, completion: Completion) -> WireAnswer:
        raw = completion.raw_body
        if raw is None:  # recorded by another API's client: nothing to answer it with
            raise ValueError("this answer was recorded without its Messages API body")
        if request.stream:
            reply = parse_reply(raw)  # checked, with every field it has: the stream carries them all
            return WireAnswer(stream_body(reply.model_dump(mode="json", exclude_unset=True)), SSE, NO_CACHE)
        return WireAnswer(raw.encode("utf-8"), completion.content_type or JSON)

    def view(self, answer: dict[str, Any]) -> dict[str, Any]:
        return chat_view(answer)

    def error_body(self, status: int, message: str) -> dict[str, Any] | None:
        return error_body(status, message)
