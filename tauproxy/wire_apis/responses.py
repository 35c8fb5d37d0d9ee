"""The OpenAI Responses API (`POST /v1/responses`), answered through the one cache layer.

The keyed form (what key.request_key hashes; chat-shaped so the cassette's message chains and the
miss report's nearest-call search work on it), field by field:

IN the key:
    model                   the model name exactly as requested
    messages                `input`, item by item as sent (messages, function_call and
                            function_call_output items, reasoning items, ...; any `id` they carry
                            included), each in canonical form: nulls dropped, a function_call's
                            `arguments` string parsed and re-serialised with sorted keys and no
                            whitespace. A string `input` is the one user message
                            {"role": "user", "content": input}, which is what the API reads it as
    tools, tool_choice      as sent, nulls dropped
    params                  every other field as sent: instructions, previous_response_id (a
                            chained conversation is keyed by the id it names; a replay answers the
                            recorded id, so the next request of a replayed chain keys the same),
                            conversation, temperature, top_p, max_output_tokens, reasoning, text,
                            store, include, truncation, parallel_tool_calls, ...; unknown fields too
    tauproxy_wire_api       "responses" (key.WIRE_API_PARAM): no chat or Messages request shares it

NOT in the key: key.EXCLUDED_PARAMS, as for chat (stream and stream_options: a stream is built from
the one recorded answer; metadata and user: bookkeeping; connection settings), and null fields.

The upstream is the provider's own /responses endpoint (a pass-through over httpx, upstream.py),
asked non-streamed with the client's body (less `stream`); its answer is recorded byte for byte
(a blob, store/entry.py) and a replay answers those bytes. A `stream: true` client gets the event
sequence the API sends (responses_stream.py), built from that one answer live and on replay alike.
The answer's chat-shaped view (`view`: output text, function calls as tool_calls, usage as chat
usage) is what the run log, reports, pricing and role recognition read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tauproxy.data_model.call import NativeRequest
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import WIRE_API_PARAM, canonical_arguments, without_connection_settings
from tauproxy.data_model.wire import completion_body, usage_from_wire
from tauproxy.wire_apis.base import ApiRequest, RequestRejected, UpstreamEndpoint, WireAnswer
from tauproxy.wire_apis.chat import JSON, NO_CACHE, NO_HEADERS, SSE
from tauproxy.wire_apis.json_body import compact_json, require_model, require_stream_flag
from tauproxy.wire_apis.responses_stream import response_events

NAME = "responses"
# Sent by the client only to shape how the answer is delivered; never keyed, never sent upstream.
DELIVERY_FIELDS = ("stream", "stream_options")
# A request without `input` must name what the model answers instead: a stored conversation, a
# previous response, or a stored prompt.
CONTEXT_FIELDS = ("previous_response_id", "conversation", "prompt")


def keyed_input(value: Any) -> list[dict[str, Any]]:
    """`input` as keyed items: a string is the one user message it stands for."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    items = []
    for item in value:
        if item.get("type") == "function_call" and "arguments" in item:
            item = {**item, "arguments": canonical_arguments(item["arguments"])}
        items.append(item)
    return items


def check_responses_request(body: Any) -> dict[str, Any]:
    """A Responses API request body, or RequestRejected saying what is wrong with it."""
    if not isinstance(body, dict):
        raise RequestRejected("request body must be a JSON object")
    require_model(body)
    value = body.get("input")
    if isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                raise RequestRejected(f"input[{index}] must be an object")
    elif not isinstance(value, str) and not (value is None and any(body.get(n) is not None for n in CONTEXT_FIELDS)):
        raise RequestRejected("'input' must be a string or an array of input items")
    tools = body.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise RequestRejected("'tools' must be an array of tool objects")
    previous = body.get("previous_response_id")
    if previous is not None and not isinstance(previous, str):
        raise RequestRejected("'previous_response_id' must be a string")
    if body.get("background") not in (None, False):
        # A background response is polled for until done; only a finished answer can be recorded.
        raise RequestRejected("'background' responses are not supported by tauproxy serve")
    require_stream_flag(body)
    if WIRE_API_PARAM in body:
        raise RequestRejected(f"'{WIRE_API_PARAM}' is reserved by tauproxy")
    return body


def keyed_request(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-shaped canonical request a Responses body is keyed by (module docstring)."""
    fields = without_connection_settings(body)
    keyed: dict[str, Any] = {"model": fields.pop("model"), "messages": keyed_input(fields.pop("input", None) or [])}
    keyed.update(fields)
    keyed[WIRE_API_PARAM] = NAME
    return keyed


def conversation_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request as chat messages: instructions as the system message, then the input items."""
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    value = body.get("input")
    for item in keyed_input(value) if value is not None else []:
        kind = item.get("type", "message")
        if kind == "message" and isinstance(item.get("role"), str):
            role = "system" if item["role"] == "developer" else item["role"]
            messages.append({"role": role, "content": item.get("content")})
        elif kind == "function_call":
            call = {"name": item.get("name"), "arguments": item.get("arguments")}
            tool_call = {"id": item.get("call_id"), "type": "function", "function": call}
            messages.append({"role": "assistant", "content": None, "tool_calls": [tool_call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
    return messages


def response_view(answer: dict[str, Any]) -> dict[str, Any]:
    """A Response object as a chat.completion body: its text, function calls and usage."""
    if not isinstance(answer.get("output"), list) or not isinstance(answer.get("id"), str):
        raise ValueError("a response needs an `id` and an `output` array")
    texts: list[str] = []
    refusals: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for item in answer["output"]:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    texts.append(str(part.get("text") or ""))
                elif isinstance(part, dict) and part.get("type") == "refusal":
                    refusals.append(str(part.get("refusal") or ""))
        elif item.get("type") == "function_call":
            function = {"name": item.get("name"), "arguments": item.get("arguments") or ""}
            tool_calls.append({"id": item.get("call_id"), "type": "function", "function": function})
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    if refusals:
        message["refusal"] = "".join(refusals)
    incomplete = answer.get("incomplete_details") or {}
    if tool_calls:
        finish_reason = "tool_calls"
    elif answer.get("status") == "incomplete" and incomplete.get("reason") == "max_output_tokens":
        finish_reason = "length"
    else:
        finish_reason = "stop"
    created = answer.get("created_at")
    return completion_body(
        message,
        finish_reason=finish_reason,
        usage=usage_from_wire(chat_usage(answer.get("usage"))),
        response_id=answer["id"],
        model=answer.get("model"),
        created=int(created) if isinstance(created, int | float) else None,
    )


def chat_usage(usage: Any) -> dict[str, Any] | None:
    """Responses usage (input/output tokens and their details) in chat-completions names."""
    if not isinstance(usage, dict):
        return None
    input_details = usage.get("input_tokens_details") or {}
    output_details = usage.get("output_tokens_details") or {}
    return {
        "prompt_tokens": usage.get("input_tokens") or 0,
        "completion_tokens": usage.get("output_tokens") or 0,
        "total_tokens": usage.get("total_tokens") or 0,
        "prompt_tokens_details": {"cached_tokens": input_details.get("cached_tokens") or 0},
        "completion_tokens_details": {"reasoning_tokens": output_details.get("reasoning_tokens") or 0},
    }


def sse_events(response: dict[str, Any]) -> bytes:
    """The answer as the SSE body the API streams: `event:` and `data:` lines per event."""
    return b"".join(sse_event(event) for event in response_events(response))


def stored_answer(raw: str, stream: bool, starting_after: int | None = None) -> WireAnswer:
    """A stored response as `GET /v1/responses/{id}` answers it: its bytes, or with `stream` its
    event sequence, from the event after `starting_after` (how a client resumes a stream)."""
    if not stream:
        return WireAnswer(raw.encode("utf-8"), "application/json")
    first = -1 if starting_after is None else starting_after
    events = [event for event in response_events(json.loads(raw)) if event["sequence_number"] > first]
    return WireAnswer(b"".join(sse_event(event) for event in events), SSE, NO_CACHE)


def sse_event(event: dict[str, Any]) -> bytes:
    kind = str(event["type"])
    return b"event: " + kind.encode() + b"\ndata: " + compact_json(event) + b"\n\n"


class ResponsesApi:
    """The OpenAI Responses API (module docstring)."""

    name = NAME
    paths = ("/v1/responses", "/responses")
    upstream: UpstreamEndpoint | None = UpstreamEndpoint(
        path="/responses",
        default_base_url="https://api.openai.com/v1",
        base_url_env="OPENAI_BASE_URL",
        key_env="OPENAI_API_KEY",
        provider_prefix="openai/",
    )

    def request(self, body: Any, headers: Mapping[str, str] = NO_HEADERS) -> ApiRequest:
        checked = check_responses_request(body)
        sent = {name: value for name, value in checked.items() if name not in DELIVERY_FIELDS}
        return ApiRequest(
            api=self.name,
            body=checked,
            keyed=keyed_request(checked),
            stream=checked.get("stream") is True,
            conversation=conversation_of(checked),
            native=NativeRequest(api=self.name, body=sent),
        )

    def answer(self, request: ApiRequest, completion: Completion) -> WireAnswer:
        raw = completion.raw_body
        if raw is None:  # recorded by a chat client or an older tauproxy: nothing to answer it with
            raise ValueError("this answer was recorded without its Responses API body")
        if request.stream:
            return WireAnswer(sse_events(json.loads(raw)), SSE, NO_CACHE)
        return WireAnswer(raw.encode("utf-8"), completion.content_type or JSON)

    def view(self, answer: dict[str, Any]) -> dict[str, Any]:
        return response_view(answer)

    def error_body(self, status: int, message: str) -> dict[str, Any] | None:
        return None  # serve's own (OpenAI's) shape
