"""OpenAI chat completions (`POST /v1/chat/completions`): the wire API everything else is keyed like.

Its keyed form is the body itself without connection settings (key.without_connection_settings):
exactly what key.py's docstring lists, unchanged, so shipped cassettes and every chat key stay what
they were. A chat body may not carry key.WIRE_API_PARAM (400): that parameter names the other
APIs in their keyed forms, and a chat request holding it could share their keys.

The upstream is asked non-streamed, by one of two paths (chat_route.py says which): a route to an
OpenAI-compatible endpoint passes the call through (upstream.py: the keyed body posted to its
/chat/completions with httpx), and its answer's bytes are recorded (a blob, store/entry.py) and are
what the client gets, live and on replay; any other provider goes through litellm (proxy/live.py),
and its answer is the recorded reply re-encoded. A call recorded before chat calls were passed
through has no bytes and replays that way too. A `stream: true` client gets chat.completion.chunk
events built from the one answer (chat_stream.py), on either path: a streamed and a non-streamed
request are one sample (`stream` is not keyed), so the one recorded answer is the non-streamed body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import WIRE_API_PARAM, without_connection_settings
from tauproxy.data_model.wire import normalise_response
from tauproxy.wire_apis.base import ApiRequest, RequestRejected, UpstreamEndpoint, WireAnswer
from tauproxy.wire_apis.chat_stream import sse_body
from tauproxy.wire_apis.json_body import compact_json, require_model, require_stream_flag

SSE = "text/event-stream"
JSON = "application/json"  # a non-streamed answer's, unless its upstream sent it as another (Completion)
NO_CACHE = {"Cache-Control": "no-cache"}
NO_HEADERS: Mapping[str, str] = {}  # chat completions and the Responses API read no request header


def check_chat_request(body: Any) -> dict[str, Any]:
    """A chat-completions request body, or RequestRejected saying what is wrong with it."""
    if not isinstance(body, dict):
        raise RequestRejected("request body must be a JSON object")
    require_model(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise RequestRejected("'messages' must be a non-empty array of message objects")
    for index, message in enumerate(messages):
        if not isinstance(message.get("role"), str) or not message["role"]:
            raise RequestRejected(f"messages[{index}] has no 'role'")
        calls = message.get("tool_calls")
        if calls is not None and not (isinstance(calls, list) and all(_is_tool_call(call) for call in calls)):
            raise RequestRejected(f"messages[{index}].tool_calls must be an array of tool call objects")
    tools = body.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise RequestRejected("'tools' must be an array of tool objects")
    n = body.get("n")
    if n is not None and n != 1:
        # A cassette sample is one choice; several would need several samples per request.
        raise RequestRejected("'n' other than 1 is not supported by tauproxy serve")
    require_stream_flag(body)
    if WIRE_API_PARAM in body:
        raise RequestRejected(f"'{WIRE_API_PARAM}' is reserved by tauproxy and cannot be sent to chat completions")
    return body


def _is_tool_call(call: Any) -> bool:
    return isinstance(call, dict) and isinstance(call.get("function") or {}, dict)


def wants_usage_chunk(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


class ChatApi:
    """OpenAI chat completions (module docstring)."""

    name = "chat"
    paths = ("/v1/chat/completions", "/chat/completions")  # the latter: clients whose base lacks /v1
    # Where an OpenAI-compatible route's calls go (chat_route.py); other providers' go through litellm.
    upstream: UpstreamEndpoint | None = UpstreamEndpoint(
        path="/chat/completions",
        default_base_url="https://api.openai.com/v1",
        base_url_env="OPENAI_BASE_URL",
        key_env="OPENAI_API_KEY",
        provider_prefix="openai/",
    )

    def request(self, body: Any, headers: Mapping[str, str] = NO_HEADERS) -> ApiRequest:
        checked = check_chat_request(body)
        return ApiRequest(
            api=self.name,
            body=checked,
            keyed=without_connection_settings(checked),
            stream=checked.get("stream") is True,
            conversation=checked["messages"],
        )

    def answer(self, request: ApiRequest, completion: Completion) -> WireAnswer:
        if request.stream:
            return WireAnswer(sse_body(completion.body, wants_usage_chunk(request.body)), SSE, NO_CACHE)
        if completion.raw_body is not None:  # passed through: the upstream's bytes, live and replayed
            return WireAnswer(completion.raw_body.encode("utf-8"), completion.content_type or JSON)
        return WireAnswer(compact_json(completion.body), JSON)

    def view(self, answer: dict[str, Any]) -> dict[str, Any]:
        return normalise_response(answer)

    def error_body(self, status: int, message: str) -> dict[str, Any] | None:
        return None  # serve's own (OpenAI's) shape
